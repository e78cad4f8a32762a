package files

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
	if entries, _ := os.ReadDir(dir); len(entries) != 11 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the directory holds %v: a temporary file was left", names)
	}
}
