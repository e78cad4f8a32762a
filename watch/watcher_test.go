package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/stratacfg/strata/internal/watchtest"
)

func goroutines() int { return runtime.NumGoroutine() }

// waitGoroutines fails the test if goroutines started during it are still
// running shortly after it stopped everything.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	watchtest.Until(5*time.Second, func() bool { return goroutines() <= before })
	if n := goroutines(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutine leak: %d running, %d before\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// recorder collects reload reports.
type recorder[T any] struct {
	mu      sync.Mutex
	reloads []Reload[T]
	ch      chan Reload[T]
}

func newRecorder[T any]() *recorder[T] { return &recorder[T]{ch: make(chan Reload[T], 1000)} }

func (r *recorder[T]) record(x Reload[T]) {
	r.mu.Lock()
	r.reloads = append(r.reloads, x)
	r.mu.Unlock()
	r.ch <- x
}

func (r *recorder[T]) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reloads)
}

// next waits for the next report.
func (r *recorder[T]) next(t *testing.T) Reload[T] {
	t.Helper()
	select {
	case x := <-r.ch:
		return x
	case <-time.After(10 * time.Second):
		t.Fatal("no reload reported within 10s")
		return Reload[T]{}
	}
}

// quiet asserts that nothing is reported for a while.
func (r *recorder[T]) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case x := <-r.ch:
		t.Fatalf("unexpected reload: %+v", x)
	case <-time.After(d):
	}
}

// loadText loads the one file of a file target; content starting with
// "bad" is invalid, "panic" makes it panic, "flaky" is a transient failure.
func loadText(_ context.Context, c *Contents) (string, error) {
	s := c.Generations[0]
	if len(s.Files) == 0 {
		return "", nil
	}
	text := string(s.Files[0].Data)
	switch {
	case strings.HasPrefix(text, "bad"):
		return "", errors.New("invalid: " + text)
	case strings.HasPrefix(text, "panic"):
		panic("decoder bug")
	case strings.HasPrefix(text, "flaky"):
		return "", Transient(errors.New("backend unavailable"))
	}
	return text, nil
}

func newTextWatcher(t *testing.T, path string, mod func(*Options[string])) (*Watcher[string], *recorder[string]) {
	t.Helper()
	rec := newRecorder[string]()
	opts := Options[string]{Paths: []string{path}, Load: loadText, OnReload: rec.record, PollInterval: time.Hour}
	if mod != nil {
		mod(&opts)
	}
	w, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return w, rec
}

// start starts w, consumes the initial load's report, and stops w when
// the test ends.
func start[T any](t *testing.T, w *Watcher[T], rec *recorder[T]) {
	t.Helper()
	startOnly(t, w)
	rec.next(t)
}

// startOnly starts w and stops it when the test ends.
func startOnly[T any](t *testing.T, w *Watcher[T]) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	if err := w.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-w.Done()
	})
}

// TestCheck drives the reload logic by direct calls: no events, no timers.
func TestCheck(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "config")
	set := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set("one")
	reg := metrics.NewKubeRegistry()
	m := NewMetrics("test", nil)
	m.MustRegister(reg)
	w, rec := newTextWatcher(t, path, func(o *Options[string]) { o.Metrics = m })
	if err := w.check(ctx); err != nil {
		t.Fatal(err)
	}
	if r := rec.next(t); r.Status != StatusSuccess || !r.Initial || r.Value != "one" || w.Current() != "one" {
		t.Fatalf("initial: %+v", r)
	}
	good := w.Hash()

	steps := []struct {
		name      string
		content   string // "" removes the file
		status    string // "" for a no-op
		current   string
		wantRetry bool
	}{
		{"same content is a no-op", "one", "", "one", false},
		{"new content applies", "two", StatusSuccess, "two", false},
		{"invalid content is refused and the last good kept", "bad one", StatusFailure, "two", false},
		{"the same invalid content is not retried", "bad one", "", "two", false},
		{"other invalid content is reported", "bad two", StatusFailure, "two", false},
		{"a panicking Load refuses the content", "panic", StatusFailure, "two", false},
		{"a transient failure asks for a retry", "flaky", StatusFailure, "two", true},
		{"and is reported once while it lasts", "flaky", "", "two", true},
		{"valid content recovers", "three", StatusSuccess, "three", false},
		{"a read failure keeps the last good and asks for a retry", "", StatusFailure, "three", true},
		{"and is reported once while it lasts", "", "", "three", true},
		{"the file comes back unchanged: no-op", "three", "", "three", false},
		{"back to the first content", "one", StatusSuccess, "one", false},
	}
	refused := false // whether the last attempt reported was refused
	for _, s := range steps {
		if s.content == "" {
			os.Remove(path)
		} else {
			set(s.content)
		}
		before := rec.count()
		err := w.check(ctx)
		if (err != nil) != s.wantRetry {
			t.Fatalf("%s: check error %v, want retry %t", s.name, err, s.wantRetry)
		}
		if s.status == "" {
			if rec.count() != before {
				t.Fatalf("%s: reported %+v", s.name, rec.next(t))
			}
		} else {
			r := rec.next(t)
			if r.Status != s.status || r.Value != s.current {
				t.Fatalf("%s: reported %+v", s.name, r)
			}
			if s.status == StatusFailure && r.Err == nil {
				t.Fatalf("%s: failure without an error", s.name)
			}
		}
		if got := w.Current(); got != s.current {
			t.Fatalf("%s: current %q, want %q", s.name, got, s.current)
		}
		if s.status != "" {
			refused = s.status == StatusFailure
		}
		if got := w.Refused(); (got != nil) != refused {
			t.Fatalf("%s: Refused() = %v, want an error %t", s.name, got, refused)
		}
	}
	if w.Hash() != good {
		t.Fatalf("hash %s, want %s for the same content", w.Hash(), good)
	}

	want := `
# HELP test_automatic_reloads_total [ALPHA] Total number of automatic reloads of the configuration, by status.
# TYPE test_automatic_reloads_total counter
test_automatic_reloads_total{status="failure"} 5
test_automatic_reloads_total{status="success"} 4
# HELP test_last_config_info [ALPHA] The content hash of the configuration in effect; the value is always 1.
# TYPE test_last_config_info gauge
test_last_config_info{hash="` + good + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "test_automatic_reloads_total", "test_last_config_info"); err != nil {
		t.Fatal(err)
	}
}

func TestStartRefusesInvalidInitialConfiguration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{"invalid": "bad", "missing": ""} {
		path := filepath.Join(dir, name)
		if content != "" {
			watchtest.WriteFiles(t, dir, map[string]string{name: content})
		}
		w, rec := newTextWatcher(t, path, nil)
		err := w.Start(t.Context())
		if err == nil {
			t.Fatalf("%s: Start succeeded", name)
		}
		if r := rec.next(t); r.Status != StatusFailure || !r.Initial {
			t.Fatalf("%s: reported %+v", name, r)
		}
		select {
		case <-w.Done():
		default:
			t.Fatalf("%s: Done not closed after a failed Start", name)
		}
	}
}

// fakeNotifier stands in for fsnotify where a test needs its failures.
type fakeNotifier struct {
	mu      sync.Mutex
	watches []string
	addErr  error
	events  chan fsnotify.Event
	errs    chan error
}

func newFakeNotifier() *fakeNotifier {
	return &fakeNotifier{events: make(chan fsnotify.Event, 10), errs: make(chan error, 10)}
}

func (f *fakeNotifier) Add(p string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.addErr != nil {
		return f.addErr
	}
	f.watches = append(f.watches, p)
	return nil
}

func (f *fakeNotifier) Remove(p string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watches = slices.DeleteFunc(f.watches, func(w string) bool { return w == p })
	return nil
}

func (f *fakeNotifier) WatchList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.watches)
}

// waitFor waits until the watch list is exactly dirs.
func (f *fakeNotifier) waitFor(t *testing.T, dirs ...string) {
	t.Helper()
	if !watchtest.Until(5*time.Second, func() bool { return slices.Equal(f.WatchList(), dirs) }) {
		t.Fatalf("watches %v, want %v", f.WatchList(), dirs)
	}
}

func (f *fakeNotifier) Events() <-chan fsnotify.Event { return f.events }
func (f *fakeNotifier) Errors() <-chan error          { return f.errs }
func (f *fakeNotifier) Close() error                  { return nil }

// TestDegradesToPolling: no inotify instance at start (openkruise#989),
// then one again; a failing Add; an overflow.
func TestDegradesToPolling(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	watchtest.WriteFiles(t, dir, map[string]string{"config": "one"})
	fake := newFakeNotifier()
	var mu sync.Mutex
	calls := 0
	w, rec := newTextWatcher(t, path, func(o *Options[string]) {
		o.PollInterval = 50 * time.Millisecond
		o.newNotifier = func() (notifier, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls == 1 {
				return nil, errors.New("too many open files")
			}
			return fake, nil
		}
	})
	start(t, w, rec)

	replaceFile(t, path, "two") // whole: the poll must not see it half written
	if r := rec.next(t); r.Value != "two" {
		t.Fatalf("polling: %+v", r)
	}
	// The next poll created the notifier and registered the watch.
	fake.waitFor(t, dir)

	// An overflow means events were lost: read at once.
	replaceFile(t, path, "three")
	fake.errs <- fsnotify.ErrEventOverflow
	if r := rec.next(t); r.Value != "three" {
		t.Fatalf("after overflow: %+v", r)
	}
}

func TestEventsAreHints(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	watchtest.WriteFiles(t, dir, map[string]string{"config": "one"})
	fake := newFakeNotifier()
	w, rec := newTextWatcher(t, path, func(o *Options[string]) {
		o.newNotifier = func() (notifier, error) { return fake, nil }
	})
	start(t, w, rec)

	// Any operation on any name is a reason to read (prow and
	// configmap-reload#190 filtered on Create and missed reloads).
	watchtest.WriteFiles(t, dir, map[string]string{"config": "two"})
	fake.events <- fsnotify.Event{Name: filepath.Join(dir, "unrelated"), Op: fsnotify.Chmod}
	if r := rec.next(t); r.Value != "two" {
		t.Fatalf("%+v", r)
	}
	// A burst is one reload (viper#408 called back twice per change).
	watchtest.WriteFiles(t, dir, map[string]string{"config": "three"})
	for range 7 {
		fake.events <- fsnotify.Event{Name: path, Op: fsnotify.Create}
	}
	if r := rec.next(t); r.Value != "three" {
		t.Fatalf("%+v", r)
	}
	rec.quiet(t, 100*time.Millisecond)

	// An identical rewrite fires no event; Resync reads anyway.
	watchtest.WriteFiles(t, dir, map[string]string{"config": "four"})
	w.Resync()
	if r := rec.next(t); r.Value != "four" {
		t.Fatalf("%+v", r)
	}
}

func TestFailingAddFallsBackToPolling(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	watchtest.WriteFiles(t, dir, map[string]string{"config": "one"})
	fake := newFakeNotifier()
	fake.addErr = errors.New("no space left on device") // max_user_watches
	w, rec := newTextWatcher(t, path, func(o *Options[string]) {
		o.PollInterval = 30 * time.Millisecond
		o.newNotifier = func() (notifier, error) { return fake, nil }
	})
	start(t, w, rec)
	watchtest.WriteFiles(t, dir, map[string]string{"config": "two"})
	if r := rec.next(t); r.Value != "two" {
		t.Fatalf("%+v", r)
	}
	fake.mu.Lock()
	fake.addErr = nil
	fake.mu.Unlock()
	fake.waitFor(t, dir)
}

func TestRetryAfterReadFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	watchtest.WriteFiles(t, dir, map[string]string{"config": "one"})
	fake := newFakeNotifier()
	w, rec := newTextWatcher(t, path, func(o *Options[string]) {
		o.Debounce = time.Millisecond
		o.Read.Attempts = 1
		o.newNotifier = func() (notifier, error) { return fake, nil }
	})
	start(t, w, rec)
	// The file disappears; one event, then silence. The retry, not a
	// poll (an hour away) or an event, finds it back.
	os.Remove(path)
	fake.events <- fsnotify.Event{Name: path, Op: fsnotify.Remove}
	if r := rec.next(t); r.Status != StatusFailure || r.Value != "one" {
		t.Fatalf("%+v", r)
	}
	watchtest.WriteFiles(t, dir, map[string]string{"config": "two"})
	if r := rec.next(t); r.Status != StatusSuccess || r.Value != "two" {
		t.Fatalf("%+v", r)
	}
}

func TestWatchDirs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mount := filepath.Join(root, "mount")
	os.Mkdir(mount, 0o755)
	kw := watchtest.NewAtomicWriter(mount)
	kw.Write(t, map[string]string{"config.yaml": "x"})
	g := watchtest.NewGitSync(filepath.Join(root, "git"), "link")
	os.Mkdir(g.Root, 0o755)
	if err := g.Write(map[string]string{"manifests/a.yaml": "a"}); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(root, "plain")
	watchtest.WriteFiles(t, plain, map[string]string{"f": "f"})

	cases := []struct {
		path string
		want []string
	}{
		{mount, []string{mount}},
		{filepath.Join(mount, "config.yaml"), []string{mount}},
		{g.Path(), []string{g.Root, mustEval(t, g.Path())}},
		{filepath.Join(g.Path(), "manifests"), []string{g.Root, mustEval(t, filepath.Join(g.Path(), "manifests"))}},
		{plain, []string{plain}},
		{filepath.Join(plain, "f"), []string{plain}},
		{filepath.Join(root, "later", "config.yaml"), []string{root}},
	}
	for _, c := range cases {
		if got := watchDirs(c.path); !slices.Equal(got, c.want) {
			t.Errorf("watchDirs(%s) = %v, want %v", c.path, got, c.want)
		}
	}
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFIFOInPlaceOfTheFile replaces a watched file with a FIFO: the reload
// fails by name and keeps the last good value instead of hanging the
// watcher, and the next valid file is loaded.
func TestFIFOInPlaceOfTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	watchtest.WriteFiles(t, dir, map[string]string{"config": "one"})
	fake := newFakeNotifier()
	w, rec := newTextWatcher(t, path, func(o *Options[string]) {
		o.Debounce = time.Millisecond
		o.newNotifier = func() (notifier, error) { return fake, nil }
	})
	start(t, w, rec)
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	fake.events <- fsnotify.Event{Name: path, Op: fsnotify.Create}
	if r := rec.next(t); r.Status != StatusFailure || r.Value != "one" || r.Err == nil || !strings.Contains(r.Err.Error(), path+" is a named pipe (FIFO)") {
		t.Fatalf("%+v", r)
	}
	os.Remove(path)
	watchtest.WriteFiles(t, dir, map[string]string{"config": "two"})
	fake.events <- fsnotify.Event{Name: path, Op: fsnotify.Create}
	if r := rec.next(t); r.Status != StatusSuccess || r.Value != "two" {
		t.Fatalf("%+v", r)
	}
}

// replaceFile replaces path with a file holding content, by renaming a
// new file over it, so that no read sees it half written.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestStartFromInitial starts watchers from a value the caller loaded:
// from unchanged content nothing is loaded or reported; from content
// changed since, the change is loaded; from content that became invalid,
// Start succeeds and the caller's value stays.
func TestStartFromInitial(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	watchtest.WriteFiles(t, dir, map[string]string{"config": "v1"})
	read := func() *Contents {
		t.Helper()
		c, err := ReadContents([]string{path}, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	loaded := read().Hash
	startFrom := func(t *testing.T, loads *atomic.Int32) (*Watcher[string], *recorder[string]) {
		t.Helper()
		w, rec := newTextWatcher(t, path, func(o *Options[string]) {
			o.Initial, o.InitialHash = "loaded by the caller", loaded
			o.Load = func(ctx context.Context, c *Contents) (string, error) {
				loads.Add(1)
				return loadText(ctx, c)
			}
		})
		startOnly(t, w)
		return w, rec
	}

	t.Run("unchanged", func(t *testing.T) {
		var loads atomic.Int32
		w, rec := startFrom(t, &loads)
		if w.Current() != "loaded by the caller" || loads.Load() != 0 || rec.count() != 0 {
			t.Fatalf("current %q, %d loads, %d reports", w.Current(), loads.Load(), rec.count())
		}
	})
	t.Run("changed", func(t *testing.T) {
		watchtest.WriteFiles(t, dir, map[string]string{"config": "v2"})
		t.Cleanup(func() { watchtest.WriteFiles(t, dir, map[string]string{"config": "v1"}) })
		var loads atomic.Int32
		w, rec := startFrom(t, &loads)
		if r := rec.next(t); r.Status != StatusSuccess || r.Initial || w.Current() != "v2" {
			t.Fatalf("reported %+v, current %q", r, w.Current())
		}
	})
	t.Run("changed to invalid", func(t *testing.T) {
		watchtest.WriteFiles(t, dir, map[string]string{"config": "bad"})
		t.Cleanup(func() { watchtest.WriteFiles(t, dir, map[string]string{"config": "v1"}) })
		var loads atomic.Int32
		w, rec := startFrom(t, &loads)
		if r := rec.next(t); r.Status != StatusFailure || w.Current() != "loaded by the caller" {
			t.Fatalf("reported %+v, current %q", r, w.Current())
		}
	})
}

// TestTreeSubdirectoryChangeSeen: inotify is not recursive, so the
// watcher watches each directory a tree read went into, whether it kept
// a file of it or not: a file replaced
// (by rename, as editors and tools write) in a subdirectory is reloaded
// at once, not at the next poll (an hour here).
func TestTreeSubdirectoryChangeSeen(t *testing.T) {
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"sub/deeper/10.conf": "v1", "other/README": "not read"})
	rec := newRecorder[string]()
	w, err := New(Options[string]{
		Paths: []string{dir},
		Read: ReadOptions{Tree: true, Select: func(name string) string {
			if strings.HasSuffix(name, ".conf") {
				return ""
			}
			return "not a drop-in"
		}},
		Load: func(_ context.Context, c *Contents) (string, error) {
			return names(c.Generations[0]), nil
		},
		OnReload:     rec.record,
		PollInterval: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	start(t, w, rec)
	// A directory none of whose files is read ("other") is watched too.
	for i, sub := range []string{"sub/deeper", "sub", "other"} {
		v := "v" + strconv.Itoa(i+2)
		tmp := filepath.Join(dir, sub, ".10.conf.tmp")
		if err := os.WriteFile(tmp, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, sub, "10.conf")); err != nil {
			t.Fatal(err)
		}
		if !watchtest.Until(5*time.Second, func() bool { return strings.Contains(w.Current(), sub+"/10.conf="+v) }) {
			t.Fatalf("no reload within 5s of a change in %s: in effect %q", sub, w.Current())
		}
	}
}

// TestStartFromInitialBesideASkippedLink: a watcher started from a value
// the caller loaded does not load the same content again because the
// directory holds a link a read passes over (InitialHash is the content's
// hash, which leaves such links out).
func TestStartFromInitialBesideASkippedLink(t *testing.T) {
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"config": "v1", "sub/x": "x"})
	if err := os.Symlink("sub", filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	c, err := ReadContents([]string{dir}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var loads atomic.Int32
	w, rec := newTextWatcher(t, dir, func(o *Options[string]) {
		o.Initial, o.InitialHash = "loaded by the caller", c.Hash
		o.Load = func(ctx context.Context, c *Contents) (string, error) {
			loads.Add(1)
			return loadText(ctx, c)
		}
	})
	startOnly(t, w)
	if w.Current() != "loaded by the caller" || loads.Load() != 0 || rec.count() != 0 {
		t.Errorf("unchanged content: current %q, %d loads, %d reports; want the caller's value, none, none", w.Current(), loads.Load(), rec.count())
	}
}
