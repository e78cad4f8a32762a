package watch

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRefusedContentAgainAfterARevertIsReported refuses content, reverts
// to the content in effect, and writes the refused content again: the
// content changed since it was refused, so the attempt is made and
// reported again (DESIGN.md: "the failing hash is remembered so it is not
// retried until the content changes again"), not passed over in silence.
func TestRefusedContentAgainAfterARevertIsReported(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "config")
	set := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set("good")
	w, rec := newTextWatcher(t, path, nil)
	if err := w.check(ctx); err != nil {
		t.Fatal(err)
	}
	rec.next(t) // the initial load
	set("bad one")
	if err := w.check(ctx); err != nil {
		t.Fatal(err)
	}
	if r := rec.next(t); r.Status != StatusFailure {
		t.Fatalf("invalid content: %+v", r)
	}
	set("good") // the operator rolls back
	if err := w.check(ctx); err != nil {
		t.Fatal(err)
	}
	set("bad one") // and pushes the same mistake again
	before := rec.count()
	if err := w.check(ctx); err != nil {
		t.Fatal(err)
	}
	if rec.count() == before {
		t.Fatalf("the refused content, written again after a rollback, was passed over: no attempt reported, no failure counted")
	}
}
