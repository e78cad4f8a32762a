package watch

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stratacfg/strata/internal/files"
	"github.com/stratacfg/strata/internal/watchtest"
)

func names(s *Generation) string {
	var out []string
	for _, f := range s.Files {
		out = append(out, f.Name+"="+string(f.Data))
	}
	return strings.Join(out, ",")
}

func TestReadPlain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{
		"b.yaml":       "b",
		"a.yaml":       "a",
		".hidden.yaml": "hidden",
		"sub/c.yaml":   "nested",
	})
	if err := os.Symlink("sub/c.yaml", filepath.Join(dir, "l.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "dirlink")); err != nil {
		t.Fatal(err)
	}

	s, err := Read(dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(s), "a.yaml=a,b.yaml=b,l.yaml=nested"; got != want || !s.Dir || s.Resolved != dir {
		t.Fatalf("Read(dir) = %q (dir %t, resolved %s), want %q", got, s.Dir, s.Resolved, want)
	}
	if !strings.HasPrefix(s.Hash, "sha256:") || len(s.Hash) != len("sha256:")+64 {
		t.Fatalf("hash %q", s.Hash)
	}

	f, err := Read(filepath.Join(dir, "a.yaml"), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(f); got != "a.yaml=a" || f.Dir {
		t.Fatalf("Read(file) = %q", got)
	}
}

func TestHashCoversNamesAndBoundaries(t *testing.T) {
	t.Parallel()
	cases := [][]Entry{
		{{Name: "a", Data: []byte("xy")}},
		{{Name: "b", Data: []byte("xy")}},
		{{Name: "a", Data: []byte("x")}, {Name: "b", Data: []byte("y")}},
		{{Name: "a", Data: []byte("xy")}, {Name: "b", Data: []byte("")}},
		{{Name: "ax", Data: []byte("y")}},
		nil,
	}
	seen := map[string]int{}
	for i, c := range cases {
		h := hashFiles(c)
		if j, ok := seen[h]; ok {
			t.Errorf("cases %d and %d hash the same", j, i)
		}
		seen[h] = i
	}
}

func TestReadMissingAndTooLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope")
	if _, err := Read(missing, ReadOptions{Attempts: 2}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing: %v", err)
	}
	s, err := Read(missing, ReadOptions{Attempts: 2, AllowMissing: true})
	if err != nil || len(s.Files) != 0 || s.Hash != hashFiles(nil) {
		t.Fatalf("missing with AllowMissing: %+v, %v", s, err)
	}
	watchtest.WriteFiles(t, dir, map[string]string{"big.yaml": strings.Repeat("x", 11)})
	if _, err := Read(filepath.Join(dir, "big.yaml"), ReadOptions{MaxBytes: 10}); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "big.yaml") {
		t.Fatalf("too large: %v", err)
	}
	if _, err := Read(dir, ReadOptions{MaxBytes: 10}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("too large in a directory: %v", err)
	}
}

// TestReadDataSkipsAsTheMountShowsThem: a target read through kubelet's
// ..data link reports a directory of the generation it left out as the
// mount shows it, a link to a directory (a payload's item path x.yaml/b
// makes one); a directory in a plain target stays a directory.
func TestReadDataSkipsAsTheMountShowsThem(t *testing.T) {
	t.Parallel()
	yamlOnly := func(name string) string {
		if strings.HasSuffix(name, ".yaml") {
			return ""
		}
		return "not YAML"
	}
	mount, gen := t.TempDir(), "..2026_11_23_00_00_00.000000001"
	watchtest.WriteFiles(t, filepath.Join(mount, gen), map[string]string{"a.yaml": "a", "x.yaml/b.yaml": "b", "docs/c.yaml": "c"})
	for link, to := range map[string]string{DataLink: gen, "a.yaml": "..data/a.yaml", "x.yaml": "..data/x.yaml", "docs": "..data/docs"} {
		if err := os.Symlink(to, filepath.Join(mount, link)); err != nil {
			t.Fatal(err)
		}
	}
	plain := t.TempDir()
	watchtest.WriteFiles(t, plain, map[string]string{"a.yaml": "a", "x.yaml/b.yaml": "b"})
	for _, tc := range []struct {
		dir  string
		want string
	}{
		{mount, "docs: not YAML false, x.yaml: a symbolic link to a directory true"},
		{plain, "x.yaml: a directory false"},
	} {
		g, err := Read(tc.dir, ReadOptions{Select: yamlOnly})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range g.Skipped {
			got = append(got, fmt.Sprintf("%s: %s %t", s.Name, s.Reason, s.Link))
		}
		if strings.Join(got, ", ") != tc.want || names(g) != "a.yaml=a" {
			t.Errorf("%s: skipped %q, read %s; want skipped %q", tc.dir, got, names(g), tc.want)
		}
	}
}

// TestReadHostileEntries reads directories and files a hostile or careless
// writer made: what Select leaves out is never looked at, a FIFO
// fails by name without blocking, and a link to nothing is reported as
// that, not as a writer that kept changing the content.
func TestReadHostileEntries(t *testing.T) {
	t.Parallel()
	yamlOnly := func(name string) string {
		if strings.HasSuffix(name, ".yaml") {
			return ""
		}
		return "not YAML"
	}
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"a.yaml": "a"})
	for _, err := range []error{
		syscall.Mkfifo(filepath.Join(dir, "notes.txt"), 0o644),
		os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "README")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	read := func(path string, opts ReadOptions) (*Generation, error) {
		type result struct {
			g   *Generation
			err error
		}
		done := make(chan result, 1)
		go func() {
			g, err := Read(path, opts)
			done <- result{g, err}
		}()
		select {
		case r := <-done:
			return r.g, r.err
		case <-time.After(10 * time.Second):
			t.Fatalf("Read(%s) blocked", path)
			return nil, nil
		}
	}
	if g, err := read(dir, ReadOptions{Select: yamlOnly}); err != nil || names(g) != "a.yaml=a" {
		t.Fatalf("a FIFO and a dangling link Select leaves out: %v, %v", g, err)
	}
	if _, err := read(dir, ReadOptions{}); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "README")+" is a symbolic link that leads to no file") || errors.Is(err, ErrInconsistent) {
		t.Errorf("a dangling link chosen: %v", err)
	}
	if _, err := read(filepath.Join(dir, "notes.txt"), ReadOptions{}); err == nil || !strings.Contains(err.Error(), "notes.txt is a named pipe (FIFO)") {
		t.Errorf("a FIFO as the target: %v", err)
	}

	// In a mount, a bad file is named under the mount, not under the
	// timestamped directory the reader resolved.
	mount := t.TempDir()
	watchtest.NewAtomicWriter(mount).Write(t, map[string]string{"big.yaml": strings.Repeat("x", 11)})
	if _, err := read(mount, ReadOptions{MaxBytes: 10}); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), filepath.Join(mount, "big.yaml")+" is over the limit of 10 bytes") {
		t.Errorf("too large in a mount: %v", err)
	}
}

func TestReadConfigMapMount(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := watchtest.NewAtomicWriter(dir)
	w.Write(t, map[string]string{"a.yaml": "a1", "b.yaml": "b1"})

	s, err := Read(dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(s); got != "a.yaml=a1,b.yaml=b1" {
		t.Fatalf("mount = %q", got)
	}
	if !strings.HasPrefix(filepath.Base(s.Resolved), "..") {
		t.Fatalf("resolved %s, want kubelet's timestamped directory", s.Resolved)
	}
	first := s.Resolved

	w.Write(t, map[string]string{"a.yaml": "a2"})
	s, err = Read(dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(s); got != "a.yaml=a2" || s.Resolved == first {
		t.Fatalf("after update = %q from %s", got, s.Resolved)
	}
	if _, err := os.Stat(first); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("kubelet should have removed %s: %v", first, err)
	}
	f, err := Read(filepath.Join(dir, "a.yaml"), ReadOptions{})
	if err != nil || names(f) != "a.yaml=a2" {
		t.Fatalf("file in mount = %v, %v", f, err)
	}
}

func TestReadGitSync(t *testing.T) {
	t.Parallel()
	g := watchtest.NewGitSync(t.TempDir(), "link")
	if err := g.Write(map[string]string{"a.yaml": "a1", "manifests/p.yaml": "p1"}); err != nil {
		t.Fatal(err)
	}
	s, err := Read(g.Path(), ReadOptions{})
	if err != nil || names(s) != "a.yaml=a1" {
		t.Fatalf("root = %v, %v", s, err)
	}
	sub := filepath.Join(g.Path(), "manifests")
	first, err := Read(sub, ReadOptions{})
	if err != nil || names(first) != "p.yaml=p1" {
		t.Fatalf("subdirectory = %v, %v", first, err)
	}
	if err := g.Write(map[string]string{"manifests/p.yaml": "p2"}); err != nil {
		t.Fatal(err)
	}
	s, err = Read(sub, ReadOptions{})
	if err != nil || names(s) != "p.yaml=p2" || s.Resolved == first.Resolved {
		t.Fatalf("after update = %v, %v", s, err)
	}
}

func TestContentsReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"conf.d/10.yaml": "ten", "conf.d/20.yaml": "twenty", "main.yaml": "main"})
	c, err := ReadContents([]string{filepath.Join(dir, "main.yaml"), filepath.Join(dir, "conf.d")}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"main.yaml": "main", "conf.d/20.yaml": "twenty"} {
		got, err := c.ReadFile(filepath.Join(dir, path))
		if err != nil || string(got) != want {
			t.Errorf("ReadFile(%s) = %q, %v", path, got, err)
		}
	}
	if _, err := c.ReadFile(filepath.Join(dir, "conf.d/30.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file outside the snapshot: %v", err)
	}
	got, err := c.ReadDir(filepath.Join(dir, "conf.d"))
	if err != nil || strings.Join(got, ",") != "10.yaml,20.yaml" {
		t.Errorf("ReadDir = %v, %v", got, err)
	}
}

// generationOf returns the generation a snapshot holds, or an error if its
// files disagree (watchtest.PayloadGeneration).
func generationOf(s *Generation) (int, error) {
	files := make(map[string][]byte, len(s.Files))
	for _, f := range s.Files {
		files[f.Name] = f.Data
	}
	return watchtest.PayloadGeneration(files)
}

// TestNoTornReads drives thousands of rapid updates of a five-file payload
// through AtomicWriter's steps while readers, one of them slow, read the
// mount, and a watcher follows it through fsnotify (internal/kubetest/volume
// does the same with kubelet's own writer).
func TestNoTornReads(t *testing.T) {
	const updates = 2000
	dir := t.TempDir()
	w := watchtest.NewAtomicWriter(dir)
	w.Write(t, watchtest.Payload(0))

	watcher, err := New(Options[int]{
		Paths:        []string{dir},
		PollInterval: time.Hour, // events alone must reach the final state
		Load: func(_ context.Context, c *Contents) (int, error) {
			return generationOf(c.Generations[0])
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	before := goroutines()
	if err := watcher.Start(ctx); err != nil {
		t.Fatal(err)
	}

	var (
		stop                      atomic.Bool
		reads, inconsistent, torn atomic.Int64
		wg                        sync.WaitGroup
	)
	reader := func(opts ReadOptions) {
		defer wg.Done()
		last := -1
		for !stop.Load() {
			s, err := Read(dir, opts)
			if errors.Is(err, ErrInconsistent) {
				inconsistent.Add(1)
				continue
			}
			if err != nil {
				t.Errorf("read: %v", err)
				return
			}
			reads.Add(1)
			gen, err := generationOf(s)
			if err != nil {
				torn.Add(1)
				t.Error(err)
				continue
			}
			if gen < last {
				t.Errorf("generation went back from %d to %d", last, gen)
			}
			last = gen
		}
	}
	wg.Add(3)
	go reader(ReadOptions{})
	go reader(ReadOptions{})
	// A slow reader: its pause between pinning the generation and reading
	// it is the window a writer must not tear, which only time opens.
	go reader(ReadOptions{pause: func() { time.Sleep(200 * time.Microsecond) }})

	for gen := 1; gen <= updates; gen++ {
		w.Write(t, watchtest.Payload(gen))
	}
	stop.Store(true)
	wg.Wait()

	watchtest.Until(10*time.Second, func() bool { return watcher.Current() == updates })
	if got := watcher.Current(); got != updates {
		t.Fatalf("watcher holds generation %d, want the final %d", got, updates)
	}
	t.Logf("%d updates; %d consistent reads, %d gave up as inconsistent, %d torn", updates, reads.Load(), inconsistent.Load(), torn.Load())
	if reads.Load() == 0 {
		t.Fatal("no read succeeded")
	}
	cancel()
	<-watcher.Done()
	waitGoroutines(t, before)
}

// setOf is one generation of a set spread over two targets: every file
// names the generation, so a reader can tell a mix.
func setOf(gen int) map[string]string {
	return map[string]string{
		"config.yaml":       fmt.Sprintf("generation: %d\nfile: 0\n", gen),
		"config.d/10.yaml":  fmt.Sprintf("generation: %d\nfile: 1\n", gen),
		"config.d/20.yaml":  fmt.Sprintf("generation: %d\nfile: 2\n", gen),
		"manifests/a.yaml":  fmt.Sprintf("generation: %d\nfile: 3\n", gen),
		"manifests/b/c.yml": fmt.Sprintf("generation: %d\nfile: 4\n", gen),
	}
}

// generationsOf returns the generation every file of c names, or an
// error if they disagree.
func generationsOf(c *Contents) (int, error) {
	gen, files := -1, 0
	for _, g := range c.Generations {
		for _, f := range g.Files {
			var n, i int
			if _, err := fmt.Sscanf(string(f.Data), "generation: %d\nfile: %d\n", &n, &i); err != nil {
				return 0, fmt.Errorf("%s/%s: %q: %v", g.Path, f.Name, f.Data, err)
			}
			if gen >= 0 && n != gen {
				return 0, fmt.Errorf("mixed snapshot: %s/%s is generation %d, an earlier file %d", g.Path, f.Name, n, gen)
			}
			gen = n
			files++
		}
	}
	if files != 3 {
		return 0, fmt.Errorf("torn snapshot: %d files", files)
	}
	return gen, nil
}

// TestNoMixedSnapshotsAcrossTargets reads two targets under one anchor
// (a file and a directory in one ConfigMap volume written by kubelet's
// AtomicWriter; two subdirectories of one git-sync checkout) while the
// writer updates them as fast as it can: every snapshot holds one
// generation. Reading each target on its own, as a check of one path at a
// time would, mixes them; that count is logged for contrast.
func TestNoMixedSnapshotsAcrossTargets(t *testing.T) {
	const updates = 800
	for _, tc := range []struct {
		name  string
		paths func(dir string) []string
		write func(t *testing.T, dir string) func(gen int) error
	}{
		{
			name: "kubelet",
			paths: func(dir string) []string {
				return []string{filepath.Join(dir, "config.yaml"), filepath.Join(dir, "config.d")}
			},
			write: func(t *testing.T, dir string) func(int) error {
				w := watchtest.NewAtomicWriter(dir)
				return func(gen int) error { return w.TryWrite(setOf(gen)) }
			},
		},
		{
			name: "git-sync",
			paths: func(dir string) []string {
				link := filepath.Join(dir, "link")
				return []string{filepath.Join(link, "config.d"), filepath.Join(link, "config.yaml")}
			},
			write: func(t *testing.T, dir string) func(int) error {
				g := watchtest.NewGitSync(dir, "link")
				return func(gen int) error { return g.Write(setOf(gen)) }
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write := tc.write(t, dir)
			if err := write(0); err != nil {
				t.Fatal(err)
			}
			paths := tc.paths(dir)
			var (
				stop                       atomic.Bool
				reads, mixed, inconsistent atomic.Int64
				naive, naiveMixed          atomic.Int64
				wg                         sync.WaitGroup
			)
			reader := func(opts ReadOptions) {
				defer wg.Done()
				last := -1
				for !stop.Load() {
					c, err := ReadContents(paths, opts)
					if errors.Is(err, ErrInconsistent) {
						inconsistent.Add(1)
						continue
					}
					if err != nil {
						t.Errorf("read: %v", err)
						return
					}
					reads.Add(1)
					gen, err := generationsOf(c)
					if err != nil {
						mixed.Add(1)
						t.Error(err)
						continue
					}
					if gen < last {
						t.Errorf("generation went back from %d to %d", last, gen)
					}
					last = gen
				}
			}
			// One target at a time, each consistent on its own.
			naiveReader := func() {
				defer wg.Done()
				for !stop.Load() {
					var gens []*Generation
					for _, p := range paths {
						g, err := Read(p, ReadOptions{})
						if err != nil {
							break
						}
						gens = append(gens, g)
					}
					if len(gens) != len(paths) {
						continue
					}
					naive.Add(1)
					if _, err := generationsOf(newContents(gens)); err != nil {
						naiveMixed.Add(1)
					}
				}
			}
			wg.Add(3)
			go reader(ReadOptions{})
			// A slow reader, whose pause only time can open.
			go reader(ReadOptions{pause: func() { time.Sleep(100 * time.Microsecond) }})
			go naiveReader()
			for gen := 1; gen <= updates; gen++ {
				if err := write(gen); err != nil {
					t.Fatal(err)
				}
			}
			stop.Store(true)
			wg.Wait()
			t.Logf("%d updates: %d snapshots, %d mixed, %d gave up as inconsistent; one target at a time: %d mixed of %d",
				updates, reads.Load(), mixed.Load(), inconsistent.Load(), naiveMixed.Load(), naive.Load())
			if reads.Load() == 0 {
				t.Fatal("no read succeeded")
			}
			if mixed.Load() != 0 {
				t.Fatalf("%d mixed snapshots", mixed.Load())
			}
		})
	}
}

// TestReadTree reads a checkout the way git-sync publishes one: the whole
// tree behind the link, in the order filepath.WalkDir visits it, hidden
// directories (.git) left out and reported, links never followed as
// directories; each bound refuses with an error naming the path.
func TestReadTree(t *testing.T) {
	t.Parallel()
	g := watchtest.NewGitSync(t.TempDir(), "link")
	tree := map[string]string{
		"ci-operator/config/org/repo/org-repo-main.yaml":      "main",
		"ci-operator/config/org/repo/org-repo-release-1.yaml": "release",
		"ci-operator/config/org/repo.yaml":                    "a file beside a directory of nearly its name",
		"ci-operator/config/org/repo/sub/x.yaml":              "deep",
		".git/HEAD":                                           "not configuration",
		"README.md":                                           "top",
	}
	if err := g.Write(tree); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("config/org", filepath.Join(g.Path(), "ci-operator", "elsewhere")); err != nil {
		t.Fatal(err)
	}
	s, err := Read(g.Path(), ReadOptions{Tree: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range s.Files {
		got = append(got, f.Name)
	}
	want := []string{
		"README.md",
		"ci-operator/config/org/repo/org-repo-main.yaml",
		"ci-operator/config/org/repo/org-repo-release-1.yaml",
		"ci-operator/config/org/repo/sub/x.yaml",
		"ci-operator/config/org/repo.yaml",
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("files\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	skipped := map[string]string{}
	for _, sk := range s.Skipped {
		skipped[sk.Name] = sk.Reason
	}
	if skipped[".git"] != "hidden" || skipped["ci-operator/elsewhere"] != "a symbolic link to a directory" {
		t.Errorf("skipped %v", skipped)
	}
	c := newContents([]*Generation{s})
	if data, err := c.ReadFile(filepath.Join(g.Path(), "ci-operator/config/org/repo/sub/x.yaml")); err != nil || string(data) != "deep" {
		t.Errorf("ReadFile of a nested file: %q, %v", data, err)
	}
	if names, err := c.ReadDir(filepath.Join(g.Path(), "ci-operator/config/org/repo")); err != nil || strings.Join(names, ",") != "org-repo-main.yaml,org-repo-release-1.yaml" {
		t.Errorf("ReadDir of a nested directory: %v, %v", names, err)
	}
	// Without Tree, only the direct children.
	if flat, err := Read(g.Path(), ReadOptions{}); err != nil || names(flat) != "README.md=top" {
		t.Errorf("flat read: %v, %v", flat, err)
	}

	for _, tc := range []struct {
		name string
		opts ReadOptions
		want string
	}{
		{"depth", ReadOptions{Tree: true, MaxDepth: 4}, filepath.Join(g.Path(), "ci-operator/config/org/repo") + " is deeper than the limit of 4 levels"},
		{"files", ReadOptions{Tree: true, MaxFiles: 3}, g.Path() + " holds more than the limit of 3 files (ci-operator/config/org/repo/sub/x.yaml is one more)"},
		{"bytes", ReadOptions{Tree: true, MaxTotalBytes: 10}, g.Path() + " puts the snapshot over the limit of 10 bytes in all, once decompressed (reached at " + filepath.Join(g.Path(), "ci-operator/config/org/repo/org-repo-release-1.yaml") + ")"},
	} {
		if _, err := Read(g.Path(), tc.opts); !errors.Is(err, ErrTooLarge) || err.Error() != tc.want {
			t.Errorf("%s: %v\nwant %s", tc.name, err, tc.want)
		}
	}
}

func gzipped(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestReadGzip reads gzip'd shards as prow's updateconfig writes them, in a
// mount of kubelet's AtomicWriter: decompressed, marked, the hash over the
// bytes stored; a bomb refused by the limit after decompression, naming
// the file; KeepGzip leaves them as they are.
func TestReadGzip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := watchtest.NewAtomicWriter(dir)
	shard := gzipped(t, "org: a\n")
	bomb := gzipped(t, strings.Repeat("x", 1<<20))
	if err := w.TryWriteBinary(map[string]string{"plain.yaml": "plain: true\n"}, map[string][]byte{"shard.yaml": shard}); err != nil {
		t.Fatal(err)
	}
	s, err := Read(dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if names(s) != "plain.yaml=plain: true\n,shard.yaml=org: a\n" || s.Files[0].Compressed || !s.Files[1].Compressed {
		t.Fatalf("read %q, compressed %t %t", names(s), s.Files[0].Compressed, s.Files[1].Compressed)
	}
	stored := []Entry{{Name: "plain.yaml", Data: []byte("plain: true\n")}, {Name: "shard.yaml", Data: shard}}
	if s.Hash != hashFiles(stored) {
		t.Error("the hash is not over the bytes as stored")
	}
	kept, err := Read(dir, ReadOptions{KeepGzip: true})
	if err != nil || !bytes.Equal(kept.Files[1].Data, shard) || kept.Files[1].Compressed {
		t.Errorf("KeepGzip: %v", err)
	}
	if err := w.TryWriteBinary(nil, map[string][]byte{"bomb.yaml": bomb}); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir, ReadOptions{MaxBytes: 64 << 10}); !errors.Is(err, ErrTooLarge) || err.Error() != filepath.Join(dir, "bomb.yaml")+" is gzip-compressed and over the limit of 65536 bytes once decompressed" {
		t.Errorf("a bomb of %d bytes: %v", len(bomb), err)
	}
	if err := w.TryWriteBinary(nil, map[string][]byte{"cut.yaml": shard[:len(shard)-4]}); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir, ReadOptions{}); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "cut.yaml")+" is gzip-compressed but does not decompress") {
		t.Errorf("a truncated stream: %v", err)
	}
}

// TestReadLinksStayInside reads a git-sync checkout whose committer left
// links: one to a file elsewhere in the tree is read, one that leads out
// of the checkout (relative, absolute, through a chain, to a file or a
// directory, into another revision) fails the read naming it, and nothing
// outside is ever returned; LinksOut lets them lead out.
func TestReadLinksStayInside(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	watchtest.WriteFiles(t, top, map[string]string{"outside.yaml": "secret: outside"})
	g := watchtest.NewGitSync(filepath.Join(top, "g"), "link")
	if err := g.Write(map[string]string{"o/a.yaml": "a", "shared/s.yaml": "shared"}); err != nil {
		t.Fatal(err)
	}
	rev, err := filepath.EvalSymlinks(g.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../shared/s.yaml", filepath.Join(rev, "o", "in.yaml")); err != nil {
		t.Fatal(err)
	}
	s, err := Read(g.Path(), ReadOptions{Tree: true})
	if err != nil || names(s) != "o/a.yaml=a,o/in.yaml=shared,shared/s.yaml=shared" {
		t.Fatalf("a link inside the checkout: %v, %v", s, err)
	}
	for name, target := range map[string]string{
		"rel.yaml":   "../../../../outside.yaml",
		"abs.yaml":   filepath.Join(top, "outside.yaml"),
		"etc.yaml":   "/etc/hostname",
		"chain.yaml": "z.yaml", // z.yaml leads out
		"dir.yaml":   top,
		"rev.yaml":   "../../",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := watchtest.NewGitSync(t.TempDir(), "link")
			if err := h.Write(map[string]string{"o/a.yaml": "a"}); err != nil {
				t.Fatal(err)
			}
			rev, err := filepath.EvalSymlinks(h.Path())
			if err != nil {
				t.Fatal(err)
			}
			watchtest.WriteFiles(t, filepath.Dir(h.Root), map[string]string{"outside.yaml": "secret: outside"})
			if err := os.Symlink("../../../../outside.yaml", filepath.Join(rev, "o", "z.yaml")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(rev, "o", name)); err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{h.Path(), filepath.Join(h.Path(), "o")} {
				s, err := Read(path, ReadOptions{Tree: true})
				want := filepath.Join(h.Path(), "o", name) + " is a symbolic link that leads outside its source (it points to " + target + ")"
				if !errors.Is(err, files.ErrOutside) || err.Error() != want {
					t.Errorf("%s: %v, %v\nwant %s", path, s, err, want)
				}
			}
		})
	}
	if err := os.Symlink("../../../../outside.yaml", filepath.Join(rev, "o", "x.yaml")); err != nil {
		t.Fatal(err)
	}
	if s, err := Read(g.Path(), ReadOptions{Tree: true, LinksOut: true}); err != nil || !strings.Contains(names(s), "o/x.yaml=secret: outside") {
		t.Errorf("with LinksOut: %v, %v", s, err)
	}
}

// TestReadTargetPathStaysInside: the links-stay-inside rule holds on the
// path to a target too. Once the path enters a checkout (a directory
// holding .git) or a volume (one holding ..data), a link on the rest of
// it, committed where the reader's own target, or a directory above it,
// should be, must lead inside: one that leads to a file, a directory or
// a kubelet volume elsewhere (a pod's service account token) fails the
// read naming it. Links before the checkout (the root link, an alias of
// the operator's) are followed, and LinksOut lets links lead out.
func TestReadTargetPathStaysInside(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	watchtest.WriteFiles(t, top, map[string]string{"secret/token.yaml": "secret: outside"})
	vol := filepath.Join(top, "vol")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	watchtest.NewAtomicWriter(vol).Write(t, map[string]string{"token.yaml": "secret: volume"})
	g := watchtest.NewGitSync(filepath.Join(top, "g"), "link")
	links := map[string]string{
		"conf":      filepath.Join(top, "secret"),
		"conf.yaml": filepath.Join(top, "secret", "token.yaml"),
		"up":        "../../..",
		"vol":       vol,
		"inner":     "real",
	}
	if err := g.WriteLinks(map[string]string{"real/a.yaml": "a"}, links); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, link string }{
		{"conf", "conf"},
		{"conf/token.yaml", "conf"},
		{"conf.yaml", "conf.yaml"},
		{"up/secret", "up"},
		{"vol", "vol"},
		{"vol/token.yaml", "vol"},
	} {
		path := filepath.Join(g.Path(), c.path)
		s, err := Read(path, ReadOptions{})
		want := filepath.Join(g.Path(), c.link) + " is a symbolic link that leads outside its source (it points to " + links[c.link] + ", outside the checkout "
		if !errors.Is(err, files.ErrOutside) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, %v\nwant %s…", c.path, s, err, want)
		}
	}
	// A committed link to the checkout itself, then "..": the kernel
	// goes up from where the link led, out of the checkout.
	rev, err := filepath.EvalSymlinks(g.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(rev, "here")); err != nil {
		t.Fatal(err)
	}
	watchtest.WriteFiles(t, filepath.Join(g.Root, ".worktrees"), map[string]string{"secret/token.yaml": "secret: beside"})
	path := g.Path() + "/here/../secret/token.yaml" // not filepath.Join, which takes ".." lexically
	if s, err := Read(path, ReadOptions{}); !errors.Is(err, files.ErrOutside) || !strings.HasPrefix(err.Error(), g.Path()+"/here/.. is a symbolic link that leads outside its source (a link on the way") {
		t.Errorf("%s: %v, %v, want ErrOutside", path, s, err)
	}
	// A committed ..data makes configs a root of its own; a ".." out of
	// it is back in the checkout, whose rule still holds on what follows.
	watchtest.WriteFiles(t, rev, map[string]string{"configs/..gen/a.yaml": "a"})
	for name, target := range map[string]string{"configs/..data": "..gen", "shared": filepath.Join(top, "secret")} {
		if err := os.Symlink(target, filepath.Join(rev, name)); err != nil {
			t.Fatal(err)
		}
	}
	path = g.Path() + "/configs/../shared/token.yaml"
	if s, err := Read(path, ReadOptions{}); !errors.Is(err, files.ErrOutside) || !strings.HasPrefix(err.Error(), g.Path()+"/configs/../shared is a symbolic link that leads outside its source") {
		t.Errorf("%s: %v, %v, want ErrOutside naming shared", path, s, err)
	}
	// An operator's alias into a directory of the checkout that a
	// committed ..data makes a root: a ".." out of it is back in the
	// checkout, whose rule holds on the link after it.
	watchtest.WriteFiles(t, rev, map[string]string{"teams/a/..gen/x.yaml": "x"})
	for name, target := range map[string]string{"teams/a/..data": "..gen", "teams/common": filepath.Join(top, "secret")} {
		if err := os.Symlink(target, filepath.Join(rev, name)); err != nil {
			t.Fatal(err)
		}
	}
	team := filepath.Join(top, "team")
	if err := os.Symlink(filepath.Join(g.Path(), "teams", "a"), team); err != nil {
		t.Fatal(err)
	}
	for _, tree := range []bool{false, true} {
		path = team + "/../common"
		if s, err := Read(path, ReadOptions{Tree: tree}); !errors.Is(err, files.ErrOutside) {
			t.Errorf("%s (tree %t): %v, %v, want ErrOutside", path, tree, s, err)
		}
	}
	alias := filepath.Join(top, "alias")
	if err := os.Symlink(g.Root, alias); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(g.Path(), "inner"), filepath.Join(alias, "link", "inner")} {
		if s, err := Read(path, ReadOptions{}); err != nil || names(s) != "a.yaml=a" {
			t.Errorf("%s, a link inside the checkout: %v, %v", path, s, err)
		}
	}
	if s, err := Read(filepath.Join(g.Path(), "conf.yaml"), ReadOptions{LinksOut: true}); err != nil || names(s) != "conf.yaml=secret: outside" {
		t.Errorf("with LinksOut: %v, %v", s, err)
	}
}

// TestReadDataNotALink: an entry named ..data that is no symbolic link (a
// directory or a file of that name, which kubelet never writes) does not
// make the directory a volume: it is read as it is, as kube-apiserver's
// manifest loader and every os.ReadFile reader read it, where it was
// read through that entry (an empty set, another set, or ENOTDIR retried
// ten times).
func TestReadDataNotALink(t *testing.T) {
	t.Parallel()
	for name, files := range map[string]map[string]string{
		"a directory": {"b.yaml": "b", "..data/a.yaml": "a"},
		"a file":      {"b.yaml": "b", "..data": "x"},
	} {
		dir := t.TempDir()
		watchtest.WriteFiles(t, dir, files)
		if s, err := Read(dir, ReadOptions{}); err != nil || names(s) != "b.yaml=b" {
			t.Errorf("%s named ..data: %v, %v; want b.yaml alone", name, s, err)
		}
	}
}

// TestReadDataLinkStaysInside: a directory's ..data names the generation
// a read pins, and the links-stay-inside rule holds inside that
// generation; so ..data itself must name a directory beside it, as
// kubelet's does. One committed to a git-sync repository that leads out
// of the checkout is refused by name, and nothing outside is read. One
// that leads nowhere, or into a loop, is the content, not a writer at
// work: ErrDangling naming the link, not ErrInconsistent.
func TestReadDataLinkStaysInside(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	secret := filepath.Join(top, "secret")
	watchtest.WriteFiles(t, secret, map[string]string{"token.yaml": "secret: outside"})
	g := watchtest.NewGitSync(filepath.Join(top, "g"), "link")
	if err := g.WriteLinks(map[string]string{"conf/a.yaml": "a", "conf/..inside/b.yaml": "b"},
		map[string]string{"conf/..data": secret, "conf2/..data": "../conf/..inside"}); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"conf", "conf2"} {
		conf := filepath.Join(g.Path(), dir)
		s, err := Read(conf, ReadOptions{})
		want := filepath.Join(conf, DataLink) + " is a symbolic link that leads outside its source"
		if !errors.Is(err, files.ErrOutside) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, %v\nwant %s…", dir, s, err, want)
		}
	}
	for name, target := range map[string]string{"dangling": "..2026_01_01_00_00_00.1", "loop": DataLink} {
		dir := t.TempDir()
		link := filepath.Join(dir, DataLink)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		_, err := Read(dir, ReadOptions{})
		if !errors.Is(err, files.ErrDangling) || errors.Is(err, ErrInconsistent) || !strings.HasPrefix(err.Error(), link+" is a symbolic link that leads to no file") {
			t.Errorf("%s ..data: %v\nwant ErrDangling naming %s", name, err, link)
		}
	}
}

// TestReadUnreadableNamed: a file or a subdirectory of a mounted
// directory the process may not read (a ConfigMap volume of defaultMode 0,
// a checkout's file owned by another user) fails the read with an error
// naming it under the path the caller gave, not only its name inside the
// hidden generation. The read runs on a thread without the capabilities
// that let root read anything, so that modes apply as they would to the
// component.
func TestReadUnreadableNamed(t *testing.T) {
	for _, rel := range []string{"a.yaml", "sub/b.yaml", "sub"} {
		mount := t.TempDir()
		watchtest.NewAtomicWriter(mount).Write(t, map[string]string{"a.yaml": "a", "sub/b.yaml": "b"})
		gen, err := filepath.EvalSymlinks(filepath.Join(mount, DataLink))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(gen, rel), 0); err != nil {
			t.Fatal(err)
		}
		tree := rel != "a.yaml"
		withoutDAC(t, func() { _, err = Read(mount, ReadOptions{Tree: tree}) })
		want := filepath.Join(mount, rel) + " cannot be read: permission denied"
		if err == nil || err.Error() != want || !errors.Is(err, fs.ErrPermission) {
			t.Errorf("%s unreadable: %v, want %s", rel, err, want)
		}
	}
}

// withoutDAC runs f on a thread without CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH, so that file modes apply even to root.
// Capabilities are per thread: the thread stays locked, and ends with the
// goroutine.
func withoutDAC(t *testing.T, f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			t.Error(err)
			return
		}
		data[0].Effective &^= 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			t.Error(err)
			return
		}
		f()
	}()
	<-done
}

// TestReadBudgetAcrossTargets bounds a snapshot of several sources: gzip'd
// shards that each stay under MaxBytes once decompressed are refused once
// together they pass MaxTotalBytes, and a shard is never decompressed
// past what is left.
func TestReadBudgetAcrossTargets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var paths []string
	for i := range 4 {
		p := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "config.yaml"), gzipped(t, strings.Repeat("x", 1000)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if _, err := ReadContents(paths, ReadOptions{MaxBytes: 1000, MaxTotalBytes: 4000}); err != nil {
		t.Fatalf("four shards of 1000 bytes within 4000: %v", err)
	}
	_, err := ReadContents(paths, ReadOptions{MaxBytes: 1000, MaxTotalBytes: 3500})
	want := paths[3] + " puts the snapshot over the limit of 3500 bytes in all, once decompressed (reached at " + filepath.Join(paths[3], "config.yaml") + ")"
	if !errors.Is(err, ErrTooLarge) || err.Error() != want {
		t.Errorf("four shards of 1000 bytes over 3500: %v\nwant %s", err, want)
	}
}

// TestReadTreeWithAVolumeInside: a tree target (a --config-dir read
// recursively) holds a ConfigMap volume as a subdirectory, whose files
// are read through their links into ..data one at a time. kubelet
// updating the ConfigMap between two of them is a read begun again, never
// a snapshot of both generations.
func TestReadTreeWithAVolumeInside(t *testing.T) {
	top := t.TempDir()
	vol := filepath.Join(top, "conf.d")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	w := watchtest.NewAtomicWriter(vol)
	w.Write(t, map[string]string{"a.yaml": "gen1", "b.yaml": "gen1"})
	var once sync.Once
	opts := ReadOptions{Tree: true}
	opts.pause = func() { // after the first file: kubelet updates the ConfigMap
		once.Do(func() { w.Write(t, map[string]string{"a.yaml": "gen2", "b.yaml": "gen2"}) })
	}
	c, err := ReadContents([]string{top}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(c.Generations[0]); got != "conf.d/a.yaml=gen2,conf.d/b.yaml=gen2" {
		t.Errorf("read %s; want the second generation whole", got)
	}
}

// TestReadDevPathInsideACheckoutConfined: a path under /dev or /proc is
// read through the kernel when Go cannot resolve its links (/dev/stdin),
// but not inside a checkout, where a committed link to an open file's
// /proc/self/fd entry would read it.
func TestReadDevPathInsideACheckoutConfined(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "strata-")
	if err != nil {
		t.Skipf("no /dev/shm to make a checkout in: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("secret: outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	os.Remove(secret) // Go resolves the fd link to "… (deleted)", which does not exist
	g := watchtest.NewGitSync(filepath.Join(shm, "git"), "link")
	fd := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	if err := g.WriteLinks(map[string]string{"a.yaml": "a"}, map[string]string{"config.yaml": fd}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(g.Path(), "config.yaml")
	if s, err := Read(path, ReadOptions{}); err == nil {
		t.Errorf("%s, a committed link to %s: read %q", path, fd, names(s))
	}
}

// TestReadDataLinkNotThroughASwappedPath: the generation behind a
// directory's ..data is looked up in the directory the path resolved to,
// not through the path again: a revision that turns the directory into a
// link to a volume outside, published between the two, is never read.
func TestReadDataLinkNotThroughASwappedPath(t *testing.T) {
	top := t.TempDir()
	token := filepath.Join(top, "serviceaccount")
	if err := os.Mkdir(token, 0o755); err != nil {
		t.Fatal(err)
	}
	watchtest.NewAtomicWriter(token).Write(t, map[string]string{"token": "secret: token"})
	root := filepath.Join(top, "git")
	wa, wb := filepath.Join(root, ".worktrees", "a"), filepath.Join(root, ".worktrees", "b")
	watchtest.WriteFiles(t, wa, map[string]string{".git": "gitdir: x\n", "configs/..gen/a.yaml": "a"})
	watchtest.WriteFiles(t, wb, map[string]string{".git": "gitdir: x\n"})
	for link, target := range map[string]string{
		filepath.Join(wa, "configs", DataLink): "..gen",
		filepath.Join(wb, "configs"):           token,
		filepath.Join(root, "link"):            ".worktrees/a",
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	publish := func(rev string) {
		tmp := filepath.Join(root, "tmp-link")
		os.Remove(tmp)
		if err := os.Symlink(".worktrees/"+rev, tmp); err == nil {
			os.Rename(tmp, filepath.Join(root, "link"))
		}
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() { // a writer much faster than git-sync: the window is real, if narrow (4 s of reads found it in each of 3 runs before the fix)
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			publish([]string{"a", "b"}[i%2])
		}
	}()
	defer func() { stop.Store(true); <-done }()
	path := filepath.Join(root, "link", "configs")
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); {
		if s, err := Read(path, ReadOptions{}); err == nil && strings.Contains(names(s), "secret") {
			t.Fatalf("%s read %s: %q", path, s.Resolved, names(s))
		}
	}
}

// TestReadBoundsWhatATreeLists: a tree read holds at most MaxEntries
// entries, read or left out, directories included (five times MaxFiles
// unless set): a committer can add any number of directories and files
// no configuration is named after (an OWNERS in each), and a watcher
// would also watch every directory. One with more is refused, naming
// the target.
func TestReadBoundsWhatATreeLists(t *testing.T) {
	t.Parallel()
	g := watchtest.NewGitSync(t.TempDir(), "link")
	tree := map[string]string{"org/repo/org-repo-main.yaml": "a: 1\n"}
	for i := range 40 {
		tree[fmt.Sprintf("junk/d%02d/OWNERS", i)] = "x"
	}
	if err := g.Write(tree); err != nil {
		t.Fatal(err)
	}
	o := ReadOptions{Tree: true, MaxFiles: 4, Select: func(rel string) string {
		if strings.HasSuffix(rel, ".yaml") {
			return ""
		}
		return "not a configuration"
	}}
	s, err := Read(g.Path(), o)
	switch {
	case err != nil && errors.Is(err, ErrTooLarge) && strings.Contains(err.Error(), g.Path()):
	case err != nil:
		t.Fatalf("read: %v; want ErrTooLarge naming %s, or the read bounded", err, g.Path())
	case len(s.Skipped)+len(s.Dirs) > o.MaxFiles:
		t.Errorf("MaxFiles %d: the read holds %d skipped entries and %d directories, without bound", o.MaxFiles, len(s.Skipped), len(s.Dirs))
	}
}
