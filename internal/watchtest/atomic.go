package watchtest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// AtomicWriter publishes payloads into a directory in the steps, and the
// order, kubelet's AtomicWriter takes (k8s.io/kubernetes
// pkg/volume/util/atomic_writer.go), in Go, so that unit tests need
// nothing but Go; KubeletWriter runs the real one, and
// internal/kubetest/volume checks that the two leave the same trees:
//
//  1. the payload goes into a new directory named for the time,
//     ..2006_01_02_15_04_05.<random>, unless it is what ..data holds
//     already and nothing is to be removed;
//  2. a link ..data_tmp to that directory is renamed over ..data;
//  3. each top-level name of the payload gets a link name → ..data/name
//     when it has none;
//  4. the top-level names the payload no longer has lose their links;
//  5. the previous directory is removed.
//
// It is not safe for concurrent use.
type AtomicWriter struct {
	Dir string
}

// NewAtomicWriter returns a writer publishing into dir, which must exist.
func NewAtomicWriter(dir string) *AtomicWriter { return &AtomicWriter{Dir: dir} }

// Write publishes files (name → content) as the volume's whole payload.
func (w *AtomicWriter) Write(t testing.TB, files map[string]string) {
	t.Helper()
	if err := w.TryWrite(files); err != nil {
		t.Fatal(err)
	}
}

// TryWrite is Write for goroutines other than the test's.
func (w *AtomicWriter) TryWrite(files map[string]string) error {
	return w.TryWriteBinary(files, nil)
}

// TryWriteBinary is TryWrite with files whose content is not text beside
// the text ones.
func (w *AtomicWriter) TryWriteBinary(files map[string]string, binary map[string][]byte) error {
	raw := make(map[string][]byte, len(files)+len(binary))
	for name, content := range files {
		raw[name] = []byte(content)
	}
	maps.Copy(raw, binary)
	payload := make(map[string][]byte, len(raw))
	for name, content := range raw {
		// As kubelet's validatePayload: relative, no ".." element, not
		// starting with "..", which its own names use; then cleaned.
		if name == "" || filepath.IsAbs(name) || strings.HasPrefix(name, "..") || slices.Contains(strings.Split(name, "/"), "..") {
			return fmt.Errorf("watchtest: payload path %q: not a relative path inside the volume", name)
		}
		payload[filepath.Clean(name)] = content
	}
	data := filepath.Join(w.Dir, "..data")
	old, err := os.Readlink(data)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var remove []string
	write := true
	if old != "" {
		if remove, err = stale(filepath.Join(w.Dir, old), payload); err != nil {
			return err
		}
		if len(remove) == 0 && same(filepath.Join(w.Dir, old), payload) {
			write, old = false, "" // (1): nothing to write; the directory stays
		}
	}
	if write {
		// (1)
		ts, err := os.MkdirTemp(w.Dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
		if err != nil {
			return err
		}
		if err := os.Chmod(ts, 0o755); err != nil {
			return err
		}
		for name, content := range payload {
			p := filepath.Join(ts, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
				return err
			}
			if err := os.WriteFile(p, content, 0o644); err != nil {
				return err
			}
			if err := os.Chmod(p, 0o644); err != nil {
				return err
			}
		}
		// (2)
		tmp := filepath.Join(w.Dir, "..data_tmp")
		if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
			os.RemoveAll(ts)
			return err
		}
		if err := os.Rename(tmp, data); err != nil {
			os.Remove(tmp)
			os.RemoveAll(ts)
			return err
		}
	}
	// (3)
	for name := range payload {
		top, _, _ := strings.Cut(name, string(filepath.Separator))
		visible := filepath.Join(w.Dir, top)
		if _, err := os.Readlink(visible); errors.Is(err, fs.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", top), visible); err != nil {
				return err
			}
		}
	}
	// (4), as kubelet: every link tried, the last failure returned
	var last error
	for _, p := range remove {
		if !strings.Contains(p, string(filepath.Separator)) {
			if err := os.Remove(filepath.Join(w.Dir, p)); err != nil {
				last = err
			}
		}
	}
	if last != nil {
		return last
	}
	// (5)
	if old != "" {
		return os.RemoveAll(filepath.Join(w.Dir, old))
	}
	return nil
}

// stale returns the paths under dir, files and directories, that payload
// neither holds nor holds something below.
func stale(dir string, payload map[string][]byte) ([]string, error) {
	keep := map[string]bool{}
	for name := range payload {
		for p := name; p != "." && p != string(filepath.Separator); p = filepath.Dir(p) {
			keep[p] = true
		}
	}
	var out []string
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		if !keep[rel] {
			out = append(out, rel)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return out, err
}

// same reports whether dir holds every file of payload as it is.
func same(dir string, payload map[string][]byte) bool {
	for name, content := range payload {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(b, content) {
			return false
		}
	}
	return true
}
