package files

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dir builds a directory of every kind of entry a hostile or careless
// writer can leave.
func dir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(d, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "a: 1\n")
	write("big.yaml", strings.Repeat("x", 2048))
	write("notes.txt", "ignored")
	if err := syscall.Mkfifo(filepath.Join(d, "pipe.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(d, "pipe.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"zero.yaml":     "/dev/zero",
		"dangling.yaml": filepath.Join(d, "nothing"),
		"dangling.txt":  filepath.Join(d, "nothing"),
		"loop.yaml":     filepath.Join(d, "loop.yaml"),
		"link.yaml":     filepath.Join(d, "a.yaml"),
	} {
		if err := os.Symlink(target, filepath.Join(d, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(d, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRead(t *testing.T) {
	d := dir(t)
	for _, tc := range []struct {
		name string
		want string // the error's text, or "" for success
		is   error
	}{
		{"a.yaml", "", nil},
		{"link.yaml", "", nil},
		{"pipe.yaml", "is a named pipe (FIFO)", ErrNotRegular},
		{"zero.yaml", "is a character device", ErrNotRegular},
		{"sub.yaml", "is a directory", ErrNotRegular},
		{"big.yaml", "over the limit of 1024 bytes", ErrTooLarge},
		{"dangling.yaml", "it points to", ErrDangling},
		{"loop.yaml", "a loop of links", ErrDangling},
		{"absent.yaml", "no such file", fs.ErrNotExist},
	} {
		done := make(chan struct{})
		var data []byte
		var err error
		go func() {
			defer close(done)
			data, err = Read(filepath.Join(d, tc.name), 1024)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Read blocked", tc.name)
		}
		switch {
		case tc.want == "" && (err != nil || string(data) != "a: 1\n"):
			t.Errorf("%s: %q, %v", tc.name, data, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.name)):
			t.Errorf("%s: error %v, want one naming the file, saying %q and wrapping %v", tc.name, err, tc.want, tc.is)
		}
	}
}

func TestList(t *testing.T) {
	d := dir(t)
	only := func(names ...string) func(string) string {
		return func(name string) string {
			for _, n := range names {
				if n == name {
					return ""
				}
			}
			return "not asked for"
		}
	}
	yaml := func(name string) string {
		if strings.HasSuffix(name, ".yaml") {
			return ""
		}
		return "not YAML"
	}
	// Only names that take takes are looked at: the pipe, the dangling
	// link and the notes beside the configuration do not matter.
	dir, err := OpenDir(d, false)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	list, skipped, err := dir.List("", 100, only("a.yaml", "link.yaml", "sub.yaml", "big.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got, why []string
	for _, e := range list {
		got = append(got, e.Name)
	}
	for _, s := range skipped {
		why = append(why, s.Name+": "+s.Reason)
	}
	if strings.Join(got, ",") != "a.yaml,big.yaml,link.yaml" {
		t.Errorf("entries %v", got)
	}
	if !slices.Contains(why, "sub.yaml: a directory") || !slices.Contains(why, "pipe.txt: not asked for") || !slices.Contains(why, "dangling.yaml: not asked for") {
		t.Errorf("skipped %v", why)
	}
	// With takeDir, a directory is listed as one.
	list, _, err = dir.List("", 100, only("a.yaml"), func(string) string { return "" })
	if err != nil || len(list) != 2 || list[0] != (Listed{Name: "a.yaml"}) || list[1] != (Listed{Name: "sub.yaml", Dir: true}) {
		t.Errorf("with directories: %v, %v", list, err)
	}
	// A matching name that is not a file is an error that names it.
	for _, bad := range []string{"pipe.yaml", "zero.yaml", "dangling.yaml", "loop.yaml"} {
		_, _, err := dir.List("", 100, only(bad), nil)
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, _, err := dir.List("", 100, yaml, nil); err == nil {
		t.Error("a directory with a FIFO named .yaml listed without an error")
	}
	if _, _, err := dir.List("gone", 100, yaml, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
	// A directory of more entries than asked is not listed further.
	if _, _, err := dir.List("", 2, yaml, nil); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), d) {
		t.Errorf("a directory over its limit of entries: %v", err)
	}
	if _, err := OpenDir(filepath.Join(d, "gone"), false); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("opening a missing directory: %v", err)
	}
}

// TestDirLinks follows a link inside a source's directory only while it
// leads to a file inside: a link out, relative or absolute, direct or
// through a chain, to a file or a directory, is refused by name, and so
// is one swapped to lead out after the directory was listed.
func TestDirLinks(t *testing.T) {
	top := t.TempDir()
	src := filepath.Join(top, "rev", "o")
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(src, name)); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(top, "outside.yaml"), "outside")
	write(filepath.Join(top, "rev", "sibling.yaml"), "sibling")
	write(filepath.Join(src, "a.yaml"), "a")
	write(filepath.Join(src, "sub", "b.yaml"), "b")
	link("a.yaml", "rel-in.yaml")
	link(filepath.Join(src, "sub", "b.yaml"), "abs-in.yaml")
	link("rel-in.yaml", "chain-in.yaml")
	link("../../outside.yaml", "rel-out.yaml")
	link(filepath.Join(top, "outside.yaml"), "abs-out.yaml")
	link("../sibling.yaml", "sibling.yaml")
	link("/etc/hostname", "hostname.yaml")
	link("rel-out.yaml", "chain-out.yaml")
	link("sub/../../../outside.yaml", "dots-out.yaml")
	link(top, "dir-out.yaml")
	link("sub", "dir-in.yaml")
	link("/nonexistent/x.yaml", "dangling-out.yaml")

	d, err := OpenDir(src, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tc := range []struct {
		name, want string
	}{
		{"rel-in.yaml", "a"},
		{"abs-in.yaml", "b"},
		{"chain-in.yaml", "a"},
		{"sub/b.yaml", "b"},
	} {
		if data, err := d.Read(tc.name, 1024); err != nil || string(data) != tc.want {
			t.Errorf("%s: %q, %v, want %q", tc.name, data, err, tc.want)
		}
	}
	for _, name := range []string{"rel-out.yaml", "abs-out.yaml", "sibling.yaml", "hostname.yaml", "chain-out.yaml", "dots-out.yaml", "dir-out.yaml"} {
		data, err := d.Read(name, 1024)
		if !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), filepath.Join(src, name)+" is a symbolic link that leads outside its source (it points to ") {
			t.Errorf("%s: %q, %v, want ErrOutside naming it", name, data, err)
		}
		if _, _, err := d.List("", 100, func(n string) string {
			if n == name {
				return ""
			}
			return "not asked for"
		}, nil); !errors.Is(err, ErrOutside) {
			t.Errorf("listing %s: %v, want ErrOutside", name, err)
		}
	}
	if _, err := d.Read("dangling-out.yaml", 1024); !errors.Is(err, ErrDangling) {
		t.Errorf("a link to nothing outside: %v, want ErrDangling", err)
	}
	list, skipped, err := d.List("", 100, func(n string) string {
		if n == "dir-in.yaml" || n == "a.yaml" {
			return ""
		}
		return "not asked for"
	}, nil)
	if err != nil || len(list) != 1 || list[0].Name != "a.yaml" || !slices.ContainsFunc(skipped, func(s Skipped) bool { return s.Name == "dir-in.yaml" && s.Link }) {
		t.Errorf("a link to a directory inside: %v, %v, %v, want it skipped", list, skipped, err)
	}

	// Swapped after the listing: a.yaml becomes a link out, and sub a
	// link to a directory outside.
	if err := os.Remove(filepath.Join(src, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	link("../../outside.yaml", "a.yaml")
	if data, err := d.Read("a.yaml", 1024); !errors.Is(err, ErrOutside) {
		t.Errorf("a file swapped for a link out: %q, %v", data, err)
	}
	write(filepath.Join(top, "sub", "b.yaml"), "outside b")
	if err := os.RemoveAll(filepath.Join(src, "sub")); err != nil {
		t.Fatal(err)
	}
	link(filepath.Join(top, "sub"), "sub")
	if data, err := d.Read("sub/b.yaml", 1024); !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), "changed while it was read") {
		t.Errorf("a directory swapped for a link out: %q, %v", data, err)
	}

	// Opened by a relative path, an absolute link inside stays inside.
	write(filepath.Join(src, "c.yaml"), "c")
	link(filepath.Join(src, "c.yaml"), "abs-c.yaml")
	t.Chdir(filepath.Dir(src))
	rel, err := OpenDir(filepath.Base(src), false)
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close()
	if data, err := rel.Read("abs-c.yaml", 1024); err != nil || string(data) != "c" {
		t.Errorf("an absolute link inside a directory opened by a relative path: %q, %v", data, err)
	}

	// With linksOut, links lead anywhere, as os.Open follows them.
	free, err := OpenDir(src, true)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := free.Read("rel-out.yaml", 1024); err != nil || string(data) != "outside" {
		t.Errorf("with linksOut: %q, %v", data, err)
	}
}
