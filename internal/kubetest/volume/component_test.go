package volume_test

import (
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	config "github.com/stratacfg/strata/internal/testkind/component"
	configscheme "github.com/stratacfg/strata/internal/testkind/component/scheme"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/watch"
)

const head = "apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\n"

// projected is the payload of a projected volume of two ConfigMaps, a and
// b, each stamped with its version: a's drop-in sets the allowed origin,
// b's whether profiling is on, and each keeps its VERSION in a directory
// of its own.
func projected(a, b string, origin int, profiling bool) map[string]string {
	return map[string]string{
		"10-a.yaml": head + "allowedOrigins: [https://o" + strconv.Itoa(origin) + ".example.com]\n", "a/VERSION": a,
		"20-b.yaml": head + "enableProfiling: " + strconv.FormatBool(profiling) + "\n", "b/VERSION": b,
	}
}

// reloads records what a component's watcher reports.
type reloads struct {
	mu   sync.Mutex
	seen []watch.Reload[*layers.Loaded[*config.ComponentConfiguration]]
	ch   chan struct{}
}

func (r *reloads) add(x watch.Reload[*layers.Loaded[*config.ComponentConfiguration]]) {
	r.mu.Lock()
	r.seen = append(r.seen, x)
	r.mu.Unlock()
	select {
	case r.ch <- struct{}{}:
	default:
	}
}

// await waits until a report satisfies ok, or fails the test after a
// minute.
func (r *reloads) await(t *testing.T, what string, ok func(watch.Reload[*layers.Loaded[*config.ComponentConfiguration]]) bool) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		r.mu.Lock()
		for _, x := range r.seen {
			if ok(x) {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		select {
		case <-r.ch:
		case <-deadline:
			t.Fatalf("no reload report %s in a minute: %d reports", what, len(r.seen))
		}
	}
}

// TestComponentHoldsBackAHalfUpdatedVolume watches a component whose
// drop-ins come from a projected volume of two ConfigMaps that kubelet's
// AtomicWriter updates in two steps, as kubelet does when the two change
// one after the other: with Consistent, the step with a's new version and
// b's old one is pending, never loaded, and the second loads both; with
// Settle too, two steps in quick succession are one reload.
func TestComponentHoldsBackAHalfUpdatedVolume(t *testing.T) {
	// Settle is wide: the second step is another run of kubelet's writer,
	// which a loaded machine (a whole make test on 2 cores) can take
	// seconds to start.
	for _, settle := range []time.Duration{0, 5 * time.Second} {
		t.Run("settle="+settle.String(), func(t *testing.T) {
			dir := t.TempDir()
			kw := watchtest.NewKubeletWriter(t, dir)
			kw.Write(t, projected("v1", "v1", 1, true))
			kind, err := configscheme.NewKind()
			if err != nil {
				t.Fatal(err)
			}
			c := &layers.Component[*config.ComponentConfiguration]{Name: "mycomp", Kind: kind}
			cl, err := c.NewCommandLine()
			if err != nil {
				t.Fatal(err)
			}
			if err := cl.Parse([]string{"--config-dir", dir}); err != nil {
				t.Fatal(err)
			}
			rec := &reloads{ch: make(chan struct{}, 1)}
			w, err := c.Watch(t.Context(), cl, layers.WatchOptions[*config.ComponentConfiguration]{
				PollInterval: time.Hour, // events alone
				Consistent:   watch.MarkersAgree("VERSION"),
				Markers:      []string{"VERSION"},
				Settle:       settle,
				OnReload:     rec.add,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := w.Current().Object; !slices.Equal(got.AllowedOrigins, []string{"https://o1.example.com"}) || !got.EnableProfiling {
				t.Fatalf("first load: origins %q, profiling %t", got.AllowedOrigins, got.EnableProfiling)
			}
			kw.Write(t, projected("v2", "v1", 2, true))
			if settle == 0 {
				rec.await(t, "pending on the half-updated volume", func(r watch.Reload[*layers.Loaded[*config.ComponentConfiguration]]) bool {
					return r.Status == watch.StatusPending
				})
			}
			kw.Write(t, projected("v2", "v2", 2, false))
			rec.await(t, "loading both updates", func(r watch.Reload[*layers.Loaded[*config.ComponentConfiguration]]) bool {
				return r.Status == watch.StatusSuccess && !r.Value.Object.EnableProfiling
			})
			rec.mu.Lock()
			defer rec.mu.Unlock()
			successes := 0
			for _, r := range rec.seen {
				if r.Status == watch.StatusSuccess && !r.Initial {
					successes++
					if o := r.Value.Object; !slices.Equal(o.AllowedOrigins, []string{"https://o2.example.com"}) || o.EnableProfiling {
						t.Errorf("loaded a half-updated volume: origins %q, profiling %t", o.AllowedOrigins, o.EnableProfiling)
					}
				}
				if r.Status == watch.StatusFailure {
					t.Errorf("a failure reported: %v", r.Err)
				}
			}
			if successes != 1 {
				t.Errorf("%d reloads, want the one of both updates", successes)
			}
			if pending := len(rec.seen) - successes - 1; settle > 0 && pending != 0 {
				t.Errorf("with Settle, %d attempts pending: the two steps were not one reload", pending)
			}
		})
	}
}
