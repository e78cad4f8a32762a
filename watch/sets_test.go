package watch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stratacfg/strata/internal/watchtest"
)

// shards are two ConfigMaps mounted side by side, each with a VERSION
// marker, as prow's updateconfig writes them.
type shards struct {
	t    *testing.T
	a, b *watchtest.AtomicWriter
	root string
}

func newShards(t *testing.T) *shards {
	root := t.TempDir()
	watchtest.WriteFiles(t, root, map[string]string{"a/.keep": "", "b/.keep": ""})
	return &shards{t: t, root: root, a: watchtest.NewAtomicWriter(filepath.Join(root, "a")), b: watchtest.NewAtomicWriter(filepath.Join(root, "b"))}
}

func (s *shards) paths() []string {
	return []string{filepath.Join(s.root, "a"), filepath.Join(s.root, "b")}
}

func (s *shards) write(w *watchtest.AtomicWriter, version string) {
	w.Write(s.t, map[string]string{"VERSION": version + "\n", "config.yaml": "version: " + version + "\n"})
}

// loadBoth returns "a=VERSION b=VERSION" from the shards' config files.
func loadBoth(_ context.Context, c *Contents) (string, error) {
	var out []string
	for _, g := range c.Generations {
		data, err := c.ReadFile(filepath.Join(g.Path, "config.yaml"))
		if err != nil {
			return "", err
		}
		out = append(out, filepath.Base(g.Path)+"="+strings.TrimPrefix(strings.TrimSpace(string(data)), "version: "))
	}
	return strings.Join(out, " "), nil
}

// TestPendingSets updates two shards one at a time, as kubelet updates two
// ConfigMap volumes: while their markers disagree the attempt is pending,
// counted as such and never a failure, the value in effect kept; once they
// agree the set applies; a set that stays split past PendingTimeout is a
// failure.
func TestPendingSets(t *testing.T) {
	s := newShards(t)
	s.write(s.a, "1")
	s.write(s.b, "1")
	clock := clocktesting.NewFakeClock(time.Now())
	reg := metrics.NewKubeRegistry()
	m := NewMetrics("sets", nil)
	m.MustRegister(reg)
	rec := newRecorder[string]()
	w, err := New(Options[string]{
		Paths: s.paths(), Load: loadBoth, OnReload: rec.record, Metrics: m,
		Consistent: MarkersAgree("VERSION"), PendingTimeout: time.Minute, Clock: clock, PollInterval: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := w.check(ctx); err != nil || w.Current() != "a=1 b=1" {
		t.Fatalf("initial: %q, %v", w.Current(), err)
	}
	rec.next(t)

	s.write(s.a, "2") // b not yet
	err = w.check(ctx)
	r := rec.next(t)
	if !isPending(err) || r.Status != StatusPending || w.Current() != "a=1 b=1" || !strings.Contains(r.Err.Error(), `holds version "1" where`) {
		t.Fatalf("half updated: %v, %+v, current %q", err, r, w.Current())
	}
	if err := w.check(ctx); !isPending(err) || rec.count() != 2 {
		t.Fatalf("the same pending content is reported once: %v, %d reports", err, rec.count())
	}
	clock.Step(30 * time.Second)
	s.write(s.b, "2")
	if err := w.check(ctx); err != nil {
		t.Fatal(err)
	}
	if r := rec.next(t); r.Status != StatusSuccess || w.Current() != "a=2 b=2" {
		t.Fatalf("both updated: %+v", r)
	}

	// Split for longer than PendingTimeout: a failure, once.
	s.write(s.b, "3")
	if err := w.check(ctx); !isPending(err) {
		t.Fatal(err)
	}
	rec.next(t)
	clock.Step(time.Minute)
	if err := w.check(ctx); err != nil {
		t.Fatalf("a timed-out set is not retried: %v", err)
	}
	if r := rec.next(t); r.Status != StatusFailure || isPending(r.Err) || !strings.Contains(r.Err.Error(), "still not consistent after 1m0s") || w.Current() != "a=2 b=2" {
		t.Fatalf("timed out: %+v", r)
	}
	if err := w.check(ctx); err != nil || rec.count() != 5 {
		t.Fatalf("the refused content again: %v, %d reports", err, rec.count())
	}
	s.write(s.a, "3")
	if err := w.check(ctx); err != nil || w.Current() != "a=3 b=3" {
		t.Fatalf("agreeing again: %q, %v", w.Current(), err)
	}
	want := `
# HELP sets_automatic_reloads_total [ALPHA] Total number of automatic reloads of the configuration, by status.
# TYPE sets_automatic_reloads_total counter
sets_automatic_reloads_total{status="failure"} 1
sets_automatic_reloads_total{status="pending"} 2
sets_automatic_reloads_total{status="success"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sets_automatic_reloads_total"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GetHistogramMetricCount(m.duration.WithLabelValues(StatusSuccess)); err != nil || n != 3 {
		t.Errorf("load durations observed: %d, %v", n, err)
	}
}

// TestMarkersMoveWithProw updates shards the way prow's updateconfig
// does, VERSION written only into the shard a merge touched: with
// MarkersMove every merge applies, never pending and never a failure,
// though the shards' versions differ; a shard going back to a version it
// held before (the config bootstrapper racing updateconfig) is applied
// and reported as a rollback, once, in the reload and its metric.
func TestMarkersMoveWithProw(t *testing.T) {
	s := newShards(t)
	s.write(s.a, "sha0")
	s.write(s.b, "sha0")
	reg := metrics.NewKubeRegistry()
	m := NewMetrics("prow", nil)
	m.MustRegister(reg)
	rec := newRecorder[string]()
	w, err := New(Options[string]{
		Paths: s.paths(), Load: loadBoth, OnReload: rec.record, Metrics: m,
		Consistent: MarkersMove("VERSION"), PendingTimeout: time.Minute, PollInterval: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := w.check(ctx); err != nil || w.Current() != "a=sha0 b=sha0" {
		t.Fatalf("initial: %q, %v", w.Current(), err)
	}
	rec.next(t)
	for _, step := range []struct {
		shard   *watchtest.AtomicWriter
		version string
		want    string
		back    string
	}{
		{s.a, "sha1", "a=sha1 b=sha0", ""}, // a merge touching a only
		{s.b, "sha2", "a=sha1 b=sha2", ""}, // the next touching b only
		{s.a, "sha3", "a=sha3 b=sha2", ""},
		{s.a, "sha1", "a=sha1 b=sha2", `a/VERSION went back from "sha3" to "sha1"`}, // the bootstrapper's older content
		{s.a, "sha3", "a=sha3 b=sha2", ""},                                          // updateconfig's again: forward
		{s.a, "sha4", "a=sha4 b=sha2", ""},
	} {
		s.write(step.shard, step.version)
		if err := w.check(ctx); err != nil {
			t.Fatalf("%s: %v", step.want, err)
		}
		r := rec.next(t)
		if r.Status != StatusSuccess || w.Current() != step.want {
			t.Fatalf("%s: %+v, current %q", step.want, r, w.Current())
		}
		var back []string
		for _, rb := range r.Rollbacks {
			back = append(back, strings.TrimPrefix(rb.String(), s.root+"/"))
		}
		if strings.Join(back, "; ") != step.back {
			t.Errorf("%s: rollbacks %q, want %q", step.want, back, step.back)
		}
	}
	want := `
# HELP prow_automatic_reload_rollbacks_total [ALPHA] Total number of parts of the configuration whose version marker went back to an older one (MarkersMove).
# TYPE prow_automatic_reload_rollbacks_total counter
prow_automatic_reload_rollbacks_total 1
# HELP prow_automatic_reloads_total [ALPHA] Total number of automatic reloads of the configuration, by status.
# TYPE prow_automatic_reloads_total counter
prow_automatic_reloads_total{status="success"} 7
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "prow_automatic_reloads_total", "prow_automatic_reload_rollbacks_total"); err != nil {
		t.Fatal(err)
	}
	// A shard without its marker (prow's bootstrapper deletes it) is
	// served all the same, and so is one that holds nothing: a partition
	// no file hashes to, emptied by the bootstrapper.
	if err := MarkersMove("VERSION")(&Contents{Generations: []*Generation{{Path: "x", Dir: true, Files: []Entry{{Name: "a.yaml"}}}}}); err != nil {
		t.Errorf("no marker: %v", err)
	}
	if err := MarkersMove("VERSION")(&Contents{Generations: []*Generation{{Path: "x", Dir: true}}}); err != nil {
		t.Errorf("an empty part: %v", err)
	}
}

// TestMarkersMoveReportsEveryRollback: a rollback is reported with the
// attempt it came with, whatever became of it (the content refused by
// Load), and a part that lost its marker keeps its history, so that a
// version it comes back with is compared with the one it had.
func TestMarkersMoveReportsEveryRollback(t *testing.T) {
	parts := func(versions ...string) *Contents {
		var gens []*Generation
		for i, v := range versions {
			g := &Generation{Path: fmt.Sprint("part-", i), Dir: true}
			g.Files = []Entry{{Name: "a.yaml"}}
			if v != "" {
				g.Files = append(g.Files, Entry{Name: "VERSION", Data: []byte(v)})
			}
			gens = append(gens, g)
		}
		return &Contents{Generations: gens}
	}
	check := MarkersMove("VERSION")
	for _, step := range []struct {
		versions []string
		want     string // the rollbacks, or the error
	}{
		{[]string{"v1", "v1"}, ""},
		{[]string{"v2", "v1"}, ""},
		{[]string{"v1", ""}, `part-0/VERSION went back from "v2" to "v1"`}, // part-1 lost its marker
		{[]string{"v1", "v1"}, ""}, // part-1 as it was
		{[]string{"v2", "v1"}, ""},
		{[]string{"v2", ""}, ""},
		{[]string{"v2", "v0"}, ""}, // a version part-1 never had is no rollback
	} {
		got := ""
		if err := check(parts(step.versions...)); err != nil {
			got = err.Error()
		}
		if got != step.want {
			t.Errorf("%v: %q, want %q", step.versions, got, step.want)
		}
	}

	s := newShards(t)
	s.write(s.a, "sha1")
	s.write(s.b, "sha1")
	rec := newRecorder[string]()
	refuse := false
	w, err := New(Options[string]{
		Paths: s.paths(), OnReload: rec.record, Consistent: MarkersMove("VERSION"), PollInterval: time.Hour,
		Load: func(ctx context.Context, c *Contents) (string, error) {
			if refuse {
				return "", errors.New("refused")
			}
			return loadBoth(ctx, c)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.check(t.Context()); err != nil {
		t.Fatal(err)
	}
	rec.next(t)
	s.write(s.a, "sha2")
	w.check(t.Context())
	rec.next(t)
	refuse = true
	s.write(s.a, "sha1") // back, and the content refused
	w.check(t.Context())
	if r := rec.next(t); r.Status != StatusFailure || len(r.Rollbacks) != 1 || r.Rollbacks[0].To != "sha1" {
		t.Errorf("a rollback whose content is refused: %+v", r)
	}
}

// TestStartWaitsForAPendingFirstLoad starts on a split set: Start waits,
// and returns once the set agrees; with a set that stays split, it fails
// after PendingTimeout.
func TestStartWaitsForAPendingFirstLoad(t *testing.T) {
	s := newShards(t)
	w, started, cancel := startSplit(t, s, Options[string]{})
	defer cancel()
	s.write(s.b, "2")
	select {
	case err := <-started:
		if err != nil || w.Current() != "a=2 b=2" {
			t.Fatalf("Start: %v, current %q", err, w.Current())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return once the set agreed")
	}
	cancel()
	<-w.Done()

	s.write(s.a, "3")
	w, err := New(Options[string]{Paths: s.paths(), Load: loadBoth, Consistent: MarkersAgree("VERSION"), PollInterval: time.Hour, PendingTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	before := goroutines()
	if err := w.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "still not consistent after 200ms") {
		t.Fatalf("a set split for good: %v", err)
	}
	<-w.Done()
	waitGoroutines(t, before)
}

// TestSettleCoalescesABurst updates five shards one after another, faster
// than Settle: one reload, of the final set.
func TestSettleCoalescesABurst(t *testing.T) {
	root := t.TempDir()
	var paths []string
	var writers []*watchtest.AtomicWriter
	for i := range 5 {
		dir := filepath.Join(root, fmt.Sprint(i))
		watchtest.WriteFiles(t, dir, nil)
		w := watchtest.NewAtomicWriter(dir)
		w.Write(t, map[string]string{"VERSION": "1"})
		paths, writers = append(paths, dir), append(writers, w)
	}
	rec := newRecorder[string]()
	w, err := New(Options[string]{
		Paths: paths, OnReload: rec.record, PollInterval: time.Hour, Settle: 300 * time.Millisecond,
		Consistent: MarkersAgree("VERSION"),
		Load: func(_ context.Context, c *Contents) (string, error) {
			data, err := c.ReadFile(filepath.Join(paths[0], "VERSION"))
			return string(data), err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	start(t, w, rec)
	for _, kw := range writers {
		kw.Write(t, map[string]string{"VERSION": "2"})
	}
	if r := rec.next(t); r.Status != StatusSuccess || r.Value != "2" {
		t.Fatalf("after the burst: %+v", r)
	}
	rec.quiet(t, 500*time.Millisecond)
}

// TestContentHash computes from ConfigMap objects the hash the watcher
// reports for their mounts, with what the read leaves out left out.
func TestContentHash(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	watchtest.WriteFiles(t, root, map[string]string{"a/.keep": "", "b/.keep": ""})
	cmA := Mount{Path: a, Data: map[string]string{"config.yaml": "x: 1\n", ".hidden": "no", "sub/n.yaml": "nested"}, BinaryData: map[string][]byte{"z.gz": {0x1f, 0x8b, 1}}}
	cmB := Mount{Path: b, Data: map[string]string{"VERSION": "7"}}
	toFiles := func(m Mount) (map[string]string, map[string][]byte) { return m.Data, m.BinaryData }
	for _, m := range []Mount{cmA, cmB} {
		data, binary := toFiles(m)
		if err := watchtest.NewAtomicWriter(m.Path).TryWriteBinary(data, binary); err != nil {
			t.Fatal(err)
		}
	}
	for _, opts := range []ReadOptions{{KeepGzip: true}, {KeepGzip: true, Tree: true}} {
		c, err := ReadContents([]string{a, b}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := ContentHash(opts, cmA, cmB); got != c.Hash {
			t.Errorf("tree %t: ContentHash %s, the watcher's %s", opts.Tree, got, c.Hash)
		}
		// One file of a mount as a target.
		one, err := ReadContents([]string{filepath.Join(a, "config.yaml")}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := ContentHash(opts, Mount{Path: filepath.Join(a, "config.yaml"), Key: "config.yaml", Data: cmA.Data}); got != one.Hash {
			t.Errorf("one key: ContentHash %s, the watcher's %s", got, one.Hash)
		}
	}
	if ContentHash(ReadOptions{}, cmA, cmB) == ContentHash(ReadOptions{}, cmB, cmA) {
		t.Error("the order of the targets does not count")
	}
}

// TestMountPointWarning finds a file target that is a mount point of its
// own, as kubelet mounts a ConfigMap key with subPath: from
// /proc/self/mountinfo (a path with a space escaped as \040), and the
// watcher lists it in Warnings.
func TestMountPointWarning(t *testing.T) {
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"my config.yaml": "a", "plain.yaml": "b"})
	sub, plain := filepath.Join(dir, "my config.yaml"), filepath.Join(dir, "plain.yaml")
	info := "1 0 0:1 / / rw - overlay overlay rw\n" +
		"2 1 0:2 /..2026_11_24/config.yaml " + strings.ReplaceAll(sub, " ", `\040`) + " ro - tmpfs tmpfs rw\n"
	if !mountPoint(sub, []byte(info)) || mountPoint(plain, []byte(info)) || mountPoint(dir, []byte(info)) {
		t.Errorf("mountPoint: subPath %t, plain %t, a directory %t", mountPoint(sub, []byte(info)), mountPoint(plain, []byte(info)), mountPoint(dir, []byte(info)))
	}
	w, rec := newTextWatcher(t, plain, nil)
	start(t, w, rec)
	if len(w.Warnings()) != 0 {
		t.Errorf("warnings for a plain file: %v", w.Warnings())
	}
}

// TestMarkersAgreeMissingTarget: with AllowMissing, a target kubelet has
// not made yet (a ConfigMap it has not fetched) holds no marker: the set
// is pending, never served half, and a set of none is no set that
// agrees.
func TestMarkersAgreeMissingTarget(t *testing.T) {
	s := newShards(t)
	s.write(s.a, "2")
	for _, paths := range [][]string{
		{filepath.Join(s.root, "a"), filepath.Join(s.root, "not-yet")},
		{filepath.Join(s.root, "not-yet"), filepath.Join(s.root, "nor-this")},
	} {
		c, err := ReadContents(paths, ReadOptions{AllowMissing: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := MarkersAgree("VERSION")(c); err == nil || !strings.Contains(err.Error(), "not-yet holds no VERSION marker: it does not exist") {
			t.Errorf("%v: %v, want the missing target named", paths, err)
		}
	}
}

// TestPendingStartThenUnreadable: Start waits out a pending first load
// until it loads, fails or stays pending past PendingTimeout; a set that,
// while pending, no longer reads (a file over MaxBytes) fails Start once
// PendingTimeout has passed, where Start waited until its context ended.
func TestPendingStartThenUnreadable(t *testing.T) {
	s := newShards(t)
	w, started, cancel := startSplit(t, s, Options[string]{PendingTimeout: 300 * time.Millisecond, Read: ReadOptions{MaxBytes: 64}})
	defer cancel()
	s.b.Write(t, map[string]string{"VERSION": "2\n", "config.yaml": strings.Repeat("x", 100)})
	select {
	case err := <-started:
		if err == nil || !strings.Contains(err.Error(), "over the limit of 64 bytes") {
			t.Errorf("Start: %v, want the file over the limit named", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start still waiting 10 s after the set stopped reading (PendingTimeout 300 ms)")
	}
	cancel()
	<-w.Done()
}

// startSplit starts a watcher of o (its paths, load, check and timing
// filled in) on a split set, a at 2 and b at 1, and returns it, what its
// Start returns, and how to stop it, once Start is seen still waiting.
func startSplit(t *testing.T, s *shards, o Options[string]) (*Watcher[string], <-chan error, context.CancelFunc) {
	t.Helper()
	s.write(s.a, "2")
	s.write(s.b, "1")
	o.Paths, o.Load, o.Consistent, o.PollInterval, o.Debounce = s.paths(), loadBoth, MarkersAgree("VERSION"), time.Hour, time.Millisecond
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan error, 1)
	go func() { started <- w.Start(ctx) }()
	select {
	case err := <-started:
		cancel()
		t.Fatalf("Start returned on a split set: %v", err)
	case <-time.After(100 * time.Millisecond): // a pending set has no signal of its own: Start is still waiting
	}
	return w, started, cancel
}
