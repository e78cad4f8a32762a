package files

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWrite writes each kind of output path as a user who names it
// expects: a file keeps its mode, a link stays and its target gets the
// data, a FIFO's reader and a descriptor's reader get the data, a new
// file is private unless asked.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	mode := func(p string) fs.FileMode {
		t.Helper()
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode()
	}

	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	fresh := filepath.Join(dir, "new.yaml")
	if err := Write(fresh, []byte("a"), 0o600); err != nil || read(fresh) != "a" || mode(fresh) != 0o600 {
		t.Errorf("a new file: %v, mode %v", err, mode(fresh))
	}
	asked := filepath.Join(dir, "asked.yaml")
	if err := Write(asked, []byte("a"), 0o666); err != nil || mode(asked) != 0o640 {
		t.Errorf("a new file asked 0666 under umask 027: %v, mode %v, want 0640", err, mode(asked))
	}

	private := filepath.Join(dir, "private.yaml")
	if err := os.WriteFile(private, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(private, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(private, []byte("new"), 0o644); err != nil || read(private) != "new" || mode(private) != 0o600 {
		t.Errorf("an existing 0600 file: %v, mode %v, want it kept", err, mode(private))
	}
	shared := filepath.Join(dir, "shared.yaml")
	if err := os.WriteFile(shared, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o664); err != nil {
		t.Fatal(err)
	}
	if err := Write(shared, []byte("new"), 0o600); err != nil || mode(shared) != 0o664 {
		t.Errorf("an existing 0664 file: %v, mode %v, want it kept", err, mode(shared))
	}

	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink("private.yaml", link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, []byte("through"), 0o644); err != nil || mode(link)&fs.ModeSymlink == 0 || read(private) != "through" || mode(private) != 0o600 {
		t.Errorf("a link: %v, link mode %v, target %q mode %v", err, mode(link), read(private), mode(private))
	}
	dangling := filepath.Join(dir, "dangling.yaml")
	if err := os.Symlink("sub/../made.yaml", dangling); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	if err := Write(dangling, []byte("made"), 0o600); err != nil || read(filepath.Join(dir, "made.yaml")) != "made" || mode(dangling)&fs.ModeSymlink == 0 {
		t.Errorf("a link to nothing: %v", err)
	}
	loop := filepath.Join(dir, "loop.yaml")
	if err := os.Symlink("loop.yaml", loop); err != nil {
		t.Fatal(err)
	}
	if err := Write(loop, []byte("x"), 0o600); err == nil {
		t.Error("a loop of links written")
	}

	// A relative link through a directory that is a link resolves where
	// the kernel resolves it.
	elsewhere := t.TempDir()
	if err := os.Mkdir(filepath.Join(elsewhere, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "dir"), filepath.Join(dir, "dirlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../target.yaml", filepath.Join(elsewhere, "dir", "out.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(dir, "dirlink", "out.yaml"), []byte("there"), 0o600); err != nil || read(filepath.Join(elsewhere, "target.yaml")) != "there" {
		t.Errorf("a relative link behind a linked directory: %v", err)
	}
	if err := Write(filepath.Join(dir, "missing", "x.yaml"), []byte("x"), 0o600); err == nil || !strings.HasPrefix(err.Error(), "writing "+filepath.Join(dir, "missing", "x.yaml")+": ") {
		t.Errorf("an error names the path written: %v", err)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	if err := Write(fifo, []byte("piped"), 0o600); err != nil {
		t.Errorf("a FIFO: %v", err)
	}
	select {
	case s := <-got:
		if s != "piped" || mode(fifo)&fs.ModeNamedPipe == 0 {
			t.Errorf("the FIFO's reader got %q; the FIFO is now %v", s, mode(fifo))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the FIFO's reader got nothing")
	}

	// /dev/stdout is a link to /proc/self/fd/1: a pipe, a terminal, or
	// the file the shell redirected it to.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(fmt.Sprintf("/proc/self/fd/%d", w.Fd()), []byte("stdout"), 0o600); err != nil {
		t.Errorf("a pipe through /proc: %v", err)
	}
	w.Close()
	if b, _ := io.ReadAll(r); string(b) != "stdout" {
		t.Errorf("the pipe's reader got %q", b)
	}
	redirected := filepath.Join(dir, "redirected")
	out, err := os.OpenFile(redirected, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	out.WriteString("before;")
	if err := Write(fmt.Sprintf("/dev/fd/%d", out.Fd()), []byte("after"), 0o600); err != nil {
		t.Errorf("a redirected file through /dev/fd: %v", err)
	}
	out.Close()
	if s := read(redirected); s != "before;after" {
		t.Errorf("the redirected file holds %q, want it appended to", s)
	}
	if err := Write("/dev/null", []byte("gone"), 0o600); err != nil {
		t.Errorf("/dev/null: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 12 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the directory holds %v: a temporary file was left", names)
	}
}

// TestWriteStickyLinks refuses to follow a link another user planted in a
// sticky, world-writable directory, as the kernel's fs.protected_symlinks
// does, and follows one of the process's own.
func TestWriteStickyLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting a link owned by another user takes root")
	}
	tmp := t.TempDir()
	if err := os.Chmod(tmp, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(victim, []byte("root:x"), 0o600); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(tmp, "c.yaml")
	if err := os.Symlink(victim, planted); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(planted, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := Write(planted, []byte("owned"), 0o600); err == nil || !strings.Contains(err.Error(), "sticky, world-writable directory") {
		t.Errorf("a planted link: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "root:x" {
		t.Errorf("the link's target was written: %q", b)
	}
	mine := filepath.Join(tmp, "mine.yaml")
	if err := os.Symlink(victim, mine); err != nil {
		t.Fatal(err)
	}
	if err := Write(mine, []byte("mine"), 0o600); err != nil {
		t.Errorf("the process's own link: %v", err)
	}
}
