package pipeline

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/merge"
)

type sharedObj struct{ runtime.Object }

// TestSharedMatchesWhatWasSet checks that a kept configuration is given
// back only for the same keys and values set above the stack, in any
// order, and never for another set under the same sum.
func TestSharedMatchesWhatWasSet(t *testing.T) {
	sh := &shared{seed: maphash.MakeSeed()}
	merged := func(values ...map[string]string) *merge.Result {
		var layers []*merge.Layer
		for i, v := range values {
			layers = append(layers, &merge.Layer{Source: merge.Source{Origin: "test", Name: string(rune('a' + i))}, Values: v})
		}
		return merge.Merge(layers...)
	}
	lower := map[string]string{"/x": "1"}
	a := merged(lower, map[string]string{"/p": "8", "/q": `"debug"`})
	sumA := sh.sum(a, 1)
	hub := &sharedObj{}
	if kept := sh.keep(sumA, sh.set(a, 1, sumA), hub, hub); kept.hub != hub {
		t.Fatal("keep returned another configuration than the first kept")
	}
	// A second build of the same set, as a concurrent one would, gets
	// the first's.
	if kept := sh.keep(sumA, sh.set(a, 1, sumA), &sharedObj{}, nil); kept.hub != hub {
		t.Error("a second build of the same set kept an object of its own")
	}

	// The same keys and values from other layers, set in another order.
	b := merged(lower, map[string]string{"/q": `"debug"`}, map[string]string{"/p": "8"})
	if got := sh.get(b, 1, sh.sum(b, 1)); got == nil || got.hub != hub {
		t.Errorf("the same keys and values set by other layers: got %v, want the kept configuration", got)
	}
	// What the lower layers set does not count.
	if got := sh.get(a, 0, sh.sum(a, 0)); got != nil {
		t.Error("a set with the lower layers' keys matched")
	}
	for name, upper := range map[string]map[string]string{
		"another value": {"/p": "9", "/q": `"debug"`},
		"a key fewer":   {"/p": "8"},
		"a key more":    {"/p": "8", "/q": `"debug"`, "/r": "1"},
		"a tombstone":   {"/p": "8", "/q": merge.Tombstone},
	} {
		c := merged(lower, upper)
		if got := sh.get(c, 1, sh.sum(c, 1)); got != nil {
			t.Errorf("%s: matched the kept configuration", name)
		}
		// Under the same sum, as a collision would put it.
		forged := sh.sum(c, 1)
		forged.sum = sumA.sum
		if got := sh.get(c, 1, forged); got != nil {
			t.Errorf("%s, under the kept set's sum: matched the kept configuration", name)
		}
	}
}

// TestSharedIsBounded checks that the kept configurations never pass
// sharedMost.
func TestSharedIsBounded(t *testing.T) {
	sh := &shared{seed: maphash.MakeSeed()}
	for i := range sharedMost + 10 {
		s := &setSum{seed: sh.seed, sum: uint64(i), n: 1}
		sh.keep(s, map[string]string{"/k": "v"}, nil, nil)
		if len(sh.by) > sharedMost {
			t.Fatalf("%d kept after %d", len(sh.by), i+1)
		}
	}
}

// TestDoorkeeper checks that a Doorkeeper says yes the second time it is
// asked of a hash, forgets a hash whose slot another took, and tells one
// of many callers at the same time no.
func TestDoorkeeper(t *testing.T) {
	var d Doorkeeper
	if d.Again(7) || !d.Again(7) || !d.Again(7) {
		t.Error("7 asked of three times: want no, yes, yes")
	}
	if d.Again(0) || !d.Again(0) {
		t.Error("0, an empty slot's, asked of twice: want no, yes")
	}
	if d.Again(7+doorSlots) || d.Again(7) {
		t.Error("a hash whose slot another took is still remembered")
	}
	for round := range 50 {
		sum := uint64(1000 + round)
		var no atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if !d.Again(sum) {
					no.Add(1)
				}
			})
		}
		wg.Wait()
		if no.Load() != 1 {
			t.Fatalf("round %d: %d of 8 callers at once told no, want 1", round, no.Load())
		}
	}
}

func TestRoom(t *testing.T) {
	if m := Room[string, int](nil, 4); m == nil || len(m) != 0 {
		t.Fatalf("Room(nil) = %v, want an empty map", m)
	}
	m := map[string]int{"a": 1, "b": 2}
	if got := Room(m, 4); len(got) != 2 || got["a"] != 1 {
		t.Errorf("a memo with room was replaced: %v", got)
	}
	m["c"], m["d"] = 3, 4
	if got := Room(m, 4); len(got) != 0 {
		t.Errorf("a full memo was kept: %v", got)
	}
	if len(m) != 4 {
		t.Errorf("starting again changed the full memo itself: %v", m)
	}
}
