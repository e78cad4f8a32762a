package pipeline

import (
	"hash/maphash"
	"maps"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/merge"
)

// sharedMost bounds the configurations a Stack keeps to share: past it,
// it forgets them all and starts again.
const sharedMost = 4096

// shared are the configurations a Stack built, by the keys the upper
// layers set and their values: nothing else decides what Build makes of
// them (the layers' sources, which differ between namespaces, only name
// who set what). Namespaces whose own keys are the same get one object;
// their snapshots differ only in provenance. That holds because
// defaulting and validation depend on the object alone, as scheme.Config
// says they must.
//
// A configuration is kept the second time it is built, not the first:
// the doorkeeper remembers the first, so that a set of keys built once,
// as most namespaces' own are when their overrides differ, costs neither
// a copy of the set nor a place among the kept.
type shared struct {
	seed maphash.Seed
	mu   sync.Mutex
	by   map[uint64]*built // by setSum
	door Doorkeeper
}

// Doorkeeper tells a cache whether to keep something: yes the second
// time it is asked of one hash lately, so that what comes once costs the
// cache nothing. It remembers one hash in each of its slots, the hash's
// low bits choosing the slot, and is safe for concurrent use.
type Doorkeeper [doorSlots]atomic.Uint64

// doorSlots is a Doorkeeper's size, a power of two.
const doorSlots = 1024

// Again reports whether sum was asked of lately, and otherwise remembers
// it. Of calls at the same time with one sum, one is told false and the
// others true, unless another sum takes the slot between them, which
// costs only a configuration not kept.
func (d *Doorkeeper) Again(sum uint64) bool {
	if sum == 0 {
		sum = 1 // 0 is an empty slot's
	}
	slot := &d[sum&(doorSlots-1)]
	old := slot.Load()
	if old == sum {
		return true
	}
	return !slot.CompareAndSwap(old, sum) && slot.Load() == sum
}

// built is one configuration Build made.
type built struct {
	set       map[string]string // what the upper layers set, tombstones included
	hub       runtime.Object
	versioned runtime.Object // the hub in the merge version, defaulted
	Shared
}

// Shared is what the builds of one kept configuration share besides its
// object: what follows from the configuration's content alone, computed
// once for all of them.
type Shared struct {
	hashOnce sync.Once
	hash     string
}

// Hash returns the configuration's content hash, computed by compute on
// the first call of any build that shares it; a nil Shared (a build not
// kept) computes it each time.
func (s *Shared) Hash(compute func() string) string {
	if s == nil {
		return compute()
	}
	s.hashOnce.Do(func() { s.hash = compute() })
	return s.hash
}

// setSum sums a hash of each key the upper layers of a merge set and its
// value: the same keys and values give the same sum, in any order.
type setSum struct {
	seed maphash.Seed
	sum  uint64
	n    int
}

func addKey(a, _ any, key, value string) bool {
	s := a.(*setSum)
	s.sum += maphash.String(s.seed, key)*0x9e3779b97f4a7c15 ^ maphash.String(s.seed, value)
	s.n++
	return true
}

func sameKey(a, _ any, key, value string) bool {
	v, ok := a.(map[string]string)[key]
	return ok && v == value
}

func keepKey(a, _ any, key, value string) bool {
	a.(map[string]string)[key] = value
	return true
}

// sums holds the setSums of builds under way: a setSum handed to a
// hook escapes, and Build is on the path of every rebuild.
var sums = sync.Pool{New: func() any { return new(setSum) }}

// sum returns the setSum of what res's layers from the n-th on set; the
// caller puts it back in sums.
func (sh *shared) sum(res *merge.Result, n int) *setSum {
	s := sums.Get().(*setSum)
	*s = setSum{seed: sh.seed}
	Engine.EachFrom(res, n, addKey, s, nil)
	return s
}

// get returns the configuration built from what res's layers from the
// n-th on set, whose sum is s, if one is kept.
func (sh *shared) get(res *merge.Result, n int, s *setSum) *built {
	sh.mu.Lock()
	b := sh.by[s.sum]
	sh.mu.Unlock()
	if b == nil || len(b.set) != s.n || Engine.EachFrom(res, n, sameKey, b.set, nil) {
		return nil // none, or another set under the same sum
	}
	return b
}

// Room returns m, or a new map when m is nil or holds most entries: a
// memo bounded by starting again. A new memo starts small (a Stack is made
// per cluster change, and most keep few); one that starts again full is
// sized for most, as it will fill again.
func Room[K comparable, V any](m map[K]V, most int) map[K]V {
	switch {
	case m == nil:
		return map[K]V{}
	case len(m) >= most:
		return make(map[K]V, most)
	}
	return m
}

// set returns what res's layers from the n-th on set, whose sum is s.
func (sh *shared) set(res *merge.Result, n int, s *setSum) map[string]string {
	set := make(map[string]string, s.n)
	Engine.EachFrom(res, n, keepKey, set, nil)
	return set
}

// keep records hub and versioned as built from set, whose sum is s, and
// returns what is kept under s: the configuration an earlier build of the
// same set kept, if there is one, so that builds of one set at the same
// time share one object.
func (sh *shared) keep(s *setSum, set map[string]string, hub, versioned runtime.Object) *built {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if b := sh.by[s.sum]; b != nil && maps.Equal(b.set, set) {
		return b
	}
	sh.by = Room(sh.by, sharedMost)
	b := &built{set: set, hub: hub, versioned: versioned}
	sh.by[s.sum] = b
	return b
}
