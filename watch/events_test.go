package watch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratacfg/strata/internal/watchtest"
)

// The tests in this file go through real fsnotify events: the poll interval
// is an hour, so only events can explain a reload.

// TestEventsFileInConfigMapMount watches one key of a ConfigMap mount
// through many updates: a watch on the file itself would die after the
// first one (flagd#42, konfig#47, controller-runtime#3020).
func TestEventsFileInConfigMapMount(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kw := watchtest.NewAtomicWriter(dir)
	kw.Write(t, map[string]string{"config": "v0", "other": "x"})
	w, rec := newTextWatcher(t, filepath.Join(dir, "config"), nil)
	start(t, w, rec)
	for i := 1; i <= 20; i++ {
		want := fmt.Sprintf("v%d", i)
		kw.Write(t, map[string]string{"config": want, "other": "x"})
		if r := rec.next(t); r.Value != want {
			t.Fatalf("update %d: %+v", i, r)
		}
	}
	// A change of another key is read, hashed and found a no-op.
	kw.Write(t, map[string]string{"config": "v20", "other": "y"})
	rec.quiet(t, 100*time.Millisecond)
	// Invalid content is refused; the next good one applies.
	kw.Write(t, map[string]string{"config": "bad", "other": "y"})
	if r := rec.next(t); r.Status != StatusFailure || r.Value != "v20" || w.Current() != "v20" {
		t.Fatalf("invalid update: %+v", r)
	}
	kw.Write(t, map[string]string{"config": "v21", "other": "y"})
	if r := rec.next(t); r.Value != "v21" {
		t.Fatalf("%+v", r)
	}
}

func TestEventsGitSyncLink(t *testing.T) {
	t.Parallel()
	g := watchtest.NewGitSync(t.TempDir(), "link")
	if err := g.Write(map[string]string{"sub/config": "r1"}); err != nil {
		t.Fatal(err)
	}
	w, rec := newTextWatcher(t, filepath.Join(g.Path(), "sub", "config"), nil)
	start(t, w, rec)
	for i := 2; i <= 10; i++ {
		want := fmt.Sprintf("r%d", i)
		if err := g.Write(map[string]string{"sub/config": want}); err != nil {
			t.Fatal(err)
		}
		if r := rec.next(t); r.Value != want {
			t.Fatalf("revision %d: %+v", i, r)
		}
	}
}

func TestEventsPlainFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	watchtest.WriteFiles(t, dir, map[string]string{"config": "one"})
	w, rec := newTextWatcher(t, path, nil)
	start(t, w, rec)
	// Written in place.
	watchtest.WriteFiles(t, dir, map[string]string{"config": "two"})
	if r := rec.next(t); r.Value != "two" {
		t.Fatalf("%+v", r)
	}
	// Replaced by rename, as editors and kubectl cp do.
	watchtest.WriteFiles(t, dir, map[string]string{"config.tmp": "three"})
	if err := os.Rename(filepath.Join(dir, "config.tmp"), path); err != nil {
		t.Fatal(err)
	}
	if r := rec.next(t); r.Value != "three" {
		t.Fatalf("%+v", r)
	}
}

// TestEventsPathCreatedLater starts on a mount that does not exist yet and
// sees it appear, and its next update.
func TestEventsPathCreatedLater(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mount := filepath.Join(root, "volumes", "config")
	w, rec := newTextWatcher(t, filepath.Join(mount, "config"), func(o *Options[string]) { o.Read.AllowMissing = true })
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r := rec.next(t); r.Value != "" {
		t.Fatalf("%+v", r)
	}
	if err := os.MkdirAll(mount, 0o755); err != nil {
		t.Fatal(err)
	}
	kw := watchtest.NewAtomicWriter(mount)
	kw.Write(t, map[string]string{"config": "arrived"})
	if r := rec.next(t); r.Value != "arrived" {
		t.Fatalf("%+v", r)
	}
	kw.Write(t, map[string]string{"config": "updated"})
	if r := rec.next(t); r.Value != "updated" {
		t.Fatalf("%+v", r)
	}
}

// TestEventsLostWatch removes the watched directory itself, which ends its
// inotify watch, and recreates it: the watcher watches the parent meanwhile
// and finds the new content by events.
func TestEventsLostWatch(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "conf")
	watchtest.WriteFiles(t, dir, map[string]string{"config": "one"})
	path := filepath.Join(dir, "config")
	w, rec := newTextWatcher(t, path, func(o *Options[string]) { o.Read.Attempts = 1 })
	start(t, w, rec)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if r := rec.next(t); r.Status != StatusFailure || r.Value != "one" {
		t.Fatalf("after removal: %+v", r)
	}
	watchtest.WriteFiles(t, dir, map[string]string{"config": "two"})
	if r := rec.next(t); r.Status != StatusSuccess || r.Value != "two" {
		t.Fatalf("after recreation: %+v", r)
	}
	watchtest.WriteFiles(t, dir, map[string]string{"config": "three"})
	r := rec.next(t)
	for i := 0; i < 2 && (r.Value == "" || errors.Is(r.Err, ErrInconsistent)); i++ {
		// An in-place write truncates first: under load the watcher
		// can read the empty file, or see it change while it reads
		// (its modification time moves), then the full one.
		r = rec.next(t)
	}
	if r.Value != "three" {
		t.Fatalf("watch not re-registered on the new directory: %+v", r)
	}
}

// TestEventsLinkSwapReadAtOnce shows that a kubelet update is read when
// ..data moves, not after the debounce: with a debounce of an hour and no
// polling, every update is still seen at once.
func TestEventsLinkSwapReadAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kw := watchtest.NewAtomicWriter(dir)
	kw.Write(t, map[string]string{"config": "v0"})
	w, rec := newTextWatcher(t, filepath.Join(dir, "config"), func(o *Options[string]) { o.Debounce = time.Hour })
	start(t, w, rec)
	for i := 1; i <= 10; i++ {
		want := fmt.Sprintf("v%d", i)
		kw.Write(t, map[string]string{"config": want})
		if r := rec.next(t); r.Value != want {
			t.Fatalf("update %d: %+v", i, r)
		}
	}
}
