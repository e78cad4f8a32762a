// Package volume_test drives kubelet's own AtomicWriter (the driver `make
// tools` builds into bin/, which a test needs and fails naming when it is
// missing): it checks that the Go writer the unit tests use leaves the same
// trees, and that a mount it updates as fast as it can is never read torn.
package volume_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/watch"
)

// writer is kubelet's writer or the Go one.
type writer interface {
	TryWriteBinary(files map[string]string, binary map[string][]byte) error
}

// timestamped is the name of a payload directory, which differs from one
// writer to the other.
var timestamped = regexp.MustCompile(`^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d+$`)

// tree describes dir as a list of entries, a payload directory's name
// written ..TS: each entry's path, its kind, and a link's target or a
// file's mode and content.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		parts := strings.Split(rel, string(filepath.Separator))
		for i, p := range parts {
			if timestamped.MatchString(p) {
				parts[i] = "..TS"
			}
		}
		rel = strings.Join(parts, "/")
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if timestamped.MatchString(target) {
				target = "..TS"
			}
			out = append(out, rel+" -> "+target)
		case d.IsDir():
			out = append(out, fmt.Sprintf("%s/ %v", rel, info.Mode().Perm()))
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s %v %q", rel, info.Mode().Perm(), b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestGoWriterLeavesKubeletsTree publishes the same payloads with both
// writers, one after the other (files added, changed and removed, at the
// top and below a directory, binary, the same payload twice), and compares
// the trees each leaves, and whether a write replaced the payload
// directory.
func TestGoWriterLeavesKubeletsTree(t *testing.T) {
	steps := []struct {
		files  map[string]string
		binary map[string][]byte
	}{
		{files: map[string]string{"config.yaml": "a: 1\n"}},
		{files: map[string]string{"config.yaml": "a: 2\n", "extra.yaml": "b: 1\n"}},
		{files: map[string]string{"config.yaml": "a: 2\n", "extra.yaml": "b: 1\n"}}, // the same again
		{files: map[string]string{"config.yaml": "a: 2\n", "config.d/10.yaml": "c: 1\n", "config.d/sub/20.yaml": "d: 1\n"}},
		{files: map[string]string{"config.yaml": "a: 3\n", "config.d/10.yaml": "c: 1\n"}},
		{files: map[string]string{"other.yaml": "e: 1\n"}, binary: map[string][]byte{"shard.gz": {0x1f, 0x8b, 0, 0xff}}},
		{files: map[string]string{"other.yaml": "e: 1\n"}},
	}
	root := t.TempDir()
	kdir, gdir := filepath.Join(root, "kubelet"), filepath.Join(root, "go")
	for _, d := range []string{kdir, gdir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	kubelet, gow := watchtest.NewKubeletWriter(t, kdir), watchtest.NewAtomicWriter(gdir)
	data := func(dir string) string {
		target, _ := os.Readlink(filepath.Join(dir, "..data"))
		return target
	}
	for i, step := range steps {
		kbefore, gbefore := data(kdir), data(gdir)
		for _, w := range []writer{kubelet, gow} {
			if err := w.TryWriteBinary(step.files, step.binary); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		if k, g := tree(t, kdir), tree(t, gdir); !slices.Equal(k, g) {
			t.Errorf("step %d: kubelet's writer left\n  %s\nthe Go writer\n  %s", i, strings.Join(k, "\n  "), strings.Join(g, "\n  "))
		}
		if k, g := data(kdir) != kbefore, data(gdir) != gbefore; k != g {
			t.Errorf("step %d: kubelet's writer replaced the payload directory: %t; the Go writer: %t", i, k, g)
		}
	}
}

// generationOf returns the generation every file of g names, or an error
// when they disagree or one is missing (watchtest.PayloadGeneration).
func generationOf(g *watch.Generation) (int, error) {
	files := make(map[string][]byte, len(g.Files))
	for _, f := range g.Files {
		files[f.Name] = f.Data
	}
	return watchtest.PayloadGeneration(files)
}

// TestNoTornReadsUnderKubeletWriter updates a five-file payload a thousand
// times through kubelet's writer while two readers read the mount and a
// watcher follows it: no read is torn, none goes back, and the watcher
// ends on the last generation.
func TestNoTornReadsUnderKubeletWriter(t *testing.T) {
	const updates = 1000
	dir := t.TempDir()
	w := watchtest.NewKubeletWriter(t, dir)
	w.Write(t, watchtest.Payload(0))
	last := make(chan struct{})
	reached := sync.OnceFunc(func() { close(last) })
	watcher, err := watch.New(watch.Options[int]{
		Paths:        []string{dir},
		PollInterval: time.Hour, // events alone must reach the last generation
		Load: func(_ context.Context, c *watch.Contents) (int, error) {
			return generationOf(c.Generations[0])
		},
		OnReload: func(r watch.Reload[int]) {
			if r.Err == nil && r.Value == updates {
				reached()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := watcher.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var (
		stop  atomic.Bool
		reads atomic.Int64
		wg    sync.WaitGroup
	)
	for range 2 {
		wg.Go(func() {
			last := -1
			for !stop.Load() {
				g, err := watch.Read(dir, watch.ReadOptions{})
				if errors.Is(err, watch.ErrInconsistent) {
					continue
				}
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				gen, err := generationOf(g)
				if err != nil {
					t.Error(err)
					continue
				}
				if gen < last {
					t.Errorf("generation went back from %d to %d", last, gen)
				}
				last = gen
				reads.Add(1)
			}
		})
	}
	for gen := 1; gen <= updates; gen++ {
		w.Write(t, watchtest.Payload(gen))
	}
	stop.Store(true)
	wg.Wait()
	if reads.Load() == 0 {
		t.Fatal("no read succeeded")
	}
	select {
	case <-last:
	case <-time.After(time.Minute):
		t.Fatalf("watcher holds generation %d a minute after the last write, want %d", watcher.Current(), updates)
	}
	cancel()
	<-watcher.Done()
}
