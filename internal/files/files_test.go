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
	list, skipped, err := List(d, only("a.yaml", "link.yaml", "sub.yaml", "big.yaml"), nil)
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
	list, _, err = List(d, only("a.yaml"), func(string) string { return "" })
	if err != nil || len(list) != 2 || list[0] != (Listed{Name: "a.yaml"}) || list[1] != (Listed{Name: "sub.yaml", Dir: true}) {
		t.Errorf("with directories: %v, %v", list, err)
	}
	// A matching name that is not a file is an error that names it.
	for _, bad := range []string{"pipe.yaml", "zero.yaml", "dangling.yaml", "loop.yaml"} {
		_, _, err := List(d, only(bad), nil)
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, _, err := List(d, yaml, nil); err == nil {
		t.Error("a directory with a FIFO named .yaml listed without an error")
	}
	if _, _, err := List(filepath.Join(d, "gone"), yaml, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
}
