package namespaced

import (
	"strings"
	"sync"
	"testing"
	"unsafe"
)

func TestNSCache(t *testing.T) {
	c := newNSCache[*tenantConfig]()
	// Names of every length a hash path treats apart, the empty one
	// included, and names that differ only in the middle.
	var names []string
	for n := 0; n <= 70; n++ {
		names = append(names, strings.Repeat("n", n))
	}
	for i := range 300 {
		names = append(names, "tenant-"+strings.Repeat("x", i%40)+"-"+string(rune('a'+i%26))+string(rune('a'+i/26))+"-production")
	}
	entries := map[string]*entry[*tenantConfig]{}
	for _, ns := range names {
		e := &entry[*tenantConfig]{}
		c.put(ns, e)
		entries[ns] = e
	}
	if c.n != len(names) {
		t.Fatalf("n = %d, want %d", c.n, len(names))
	}
	for _, ns := range names {
		if got := c.get(ns); got != entries[ns] {
			t.Fatalf("get(%q) = %p, want %p", ns, got, entries[ns])
		}
	}
	if c.get("absent") != nil {
		t.Error("found an absent name")
	}
	// Remove every other name: the rest stay reachable past the
	// tombstones, and the removed are gone.
	for i, ns := range names {
		if i%2 == 0 {
			c.del(ns)
		}
	}
	for i, ns := range names {
		if got := c.get(ns); (got == nil) != (i%2 == 0) {
			t.Fatalf("after removal, get(%q) = %p", ns, got)
		}
	}
	// Put them back (tombstones are reused), replace one, then fill the
	// table past a rebuild.
	for i, ns := range names {
		if i%2 == 0 {
			c.put(ns, entries[ns])
		}
	}
	replacement := &entry[*tenantConfig]{}
	c.put(names[3], replacement)
	if c.get(names[3]) != replacement || c.n != len(names) {
		t.Errorf("replace: got %p, n %d", c.get(names[3]), c.n)
	}
	seen := 0
	c.each(func(ns string, e *entry[*tenantConfig]) {
		seen++
		if e.ns != ns {
			t.Errorf("each: entry of %q holds %q", ns, e.ns)
		}
	})
	if seen != len(names) {
		t.Errorf("each visited %d, want %d", seen, len(names))
	}
	for _, ns := range names {
		c.del(ns)
	}
	if c.n != 0 || c.get(names[10]) != nil || len(c.ring) != 0 {
		t.Error("deleting every name left entries")
	}
}

// TestNSCacheConcurrentReads reads while one writer adds, replaces,
// removes and rebuilds: a reader gets the entry of the name it asked for or
// nothing, never another's.
func TestNSCacheConcurrentReads(t *testing.T) {
	c := newNSCache[*tenantConfig]()
	names := make([]string, 2000)
	for i := range names {
		names[i] = "ns-" + strings.Repeat("q", i%30) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ns := names[i%len(names)]
				if e := c.get(ns); e != nil && e.ns != ns {
					t.Errorf("get(%q) returned the entry of %q", ns, e.ns)
					return
				}
			}
		})
	}
	for round := range 5 {
		for i, ns := range names {
			if (i+round)%3 == 0 {
				c.del(ns)
			} else {
				c.put(ns, &entry[*tenantConfig]{})
			}
		}
	}
	close(stop)
	wg.Wait()
}

// TestEntrySize keeps an entry to one cache line: a resolve reads its
// first fields for 10,000 namespaces in turn.
func TestEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry[*tenantConfig]{}); n != 64 {
		t.Errorf("an entry is %d bytes, not 64", n)
	}
}

// TestClockEviction checks the second chance CLOCK gives an entry read
// since the hand passed, and that the ring follows puts, replacements and
// removals.
func TestClockEviction(t *testing.T) {
	c := newNSCache[*tenantConfig]()
	for _, ns := range []string{"a", "b", "c", "d"} {
		c.put(ns, &entry[*tenantConfig]{})
	}
	// All were just put, so all are marked: one sweep clears the marks
	// and the hand comes back to a. keep is never chosen.
	if v := c.victim("a"); v != "b" {
		t.Fatalf("victim = %q, want b", v)
	}
	c.del("b")                          // d moves into b's place: the ring is a, d, c
	c.get("c").referenced.Store(true)   // c was read
	c.put("a", &entry[*tenantConfig]{}) // a replaced: marked, in a's place
	if v := c.victim(""); v != "d" {
		t.Fatalf("victim = %q, want d (c and a were read or replaced)", v)
	}
	c.del("d")
	if len(c.ring) != 2 || c.n != 2 {
		t.Fatalf("ring %d, n %d", len(c.ring), c.n)
	}
	for i, e := range c.ring {
		if int(e.pos) != i || c.get(e.ns) != e {
			t.Fatalf("ring[%d] = %s at pos %d", i, e.ns, e.pos)
		}
	}
	if v := c.victim("a"); v != "c" {
		t.Fatalf("victim = %q, want c", v)
	}
	if newNSCache[*tenantConfig]().victim("") != "" {
		t.Error("a victim in an empty cache")
	}
}
