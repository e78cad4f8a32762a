package namespaced

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// nsCache maps namespaces to entries. It is an open-addressing hash table
// (linear probing) whose slots are atomic pointers to the entries
// themselves, so that a read takes no lock, allocates nothing, hashes the
// name once with a hash cheaper than a Go map's, and follows one pointer:
// the read is a reconcile's hot path. Writes are serialised by the caller;
// a table that fills up is rebuilt and swapped in whole, and a reader still
// probing the old one finds what was there when it started.
type nsCache[T any] struct {
	tab  atomic.Pointer[nsTable[T]]
	tomb *entry[T] // marks a removed slot, so that probing goes on past it
	seed uint64
	n    int // live entries
	dead int // tombstones in the current table
	// ring holds the live entries for eviction by CLOCK (second chance):
	// a read marks its entry referenced; the hand sweeps the ring,
	// clearing marks, and evicts the first entry it finds unmarked. An
	// entry's pos is its index in ring.
	ring []*entry[T]
	hand int
}

type nsTable[T any] struct {
	mask  uint64
	slots []atomic.Pointer[entry[T]]
}

// minCacheSlots is the size of an empty table; tables are powers of two.
const minCacheSlots = 16

func newNSCache[T any]() *nsCache[T] {
	c := &nsCache[T]{tomb: &entry[T]{}, seed: maphash.String(maphash.MakeSeed(), "strata")}
	c.tab.Store(newNSTable[T](minCacheSlots))
	return c
}

func newNSTable[T any](size int) *nsTable[T] {
	return &nsTable[T]{mask: uint64(size - 1), slots: make([]atomic.Pointer[entry[T]], size)}
}

// get returns the entry of ns, or nil.
func (c *nsCache[T]) get(ns string) *entry[T] {
	t := c.tab.Load()
	// hash, inlined for the common lengths.
	var h uint64
	switch n := len(ns); {
	case n >= 8 && n <= 16:
		h = mix(le64(ns, 0)^hashK1, le64(ns, n-8)^c.seed^uint64(n))
	case n >= 4 && n < 8:
		h = mix(le32(ns, 0)^hashK1, le32(ns, n-4)^c.seed^uint64(n))
	default:
		h = c.hash(ns)
	}
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i].Load()
		if e == nil {
			return nil
		}
		if e.hash == h && e.ns == ns && e != c.tomb {
			return e
		}
	}
}

// put adds e as the entry of ns, replacing any; the caller serialises
// writes. e must not be in the cache already.
func (c *nsCache[T]) put(ns string, e *entry[T]) {
	e.ns, e.hash = ns, c.hash(ns)
	e.referenced.Store(true)
	t := c.tab.Load()
	if i, ok := c.find(t, ns, e.hash); ok {
		old := t.slots[i].Load()
		e.pos, c.ring[old.pos] = old.pos, e
		t.slots[i].Store(e)
		return
	}
	e.pos = int32(len(c.ring))
	c.ring = append(c.ring, e)
	if (c.n+c.dead+1)*4 > len(t.slots)*3 {
		t = c.rebuild(c.n + 1)
	}
	for i := e.hash & t.mask; ; i = (i + 1) & t.mask {
		if s := t.slots[i].Load(); s == nil || s == c.tomb {
			if s == c.tomb {
				c.dead--
			}
			t.slots[i].Store(e)
			c.n++
			return
		}
	}
}

// del removes ns; the caller serialises writes.
func (c *nsCache[T]) del(ns string) {
	t := c.tab.Load()
	if i, ok := c.find(t, ns, c.hash(ns)); ok {
		c.unring(t.slots[i].Load())
		t.slots[i].Store(c.tomb)
		c.n--
		c.dead++
	}
}

// unring takes e out of the ring, moving the last entry into its place.
func (c *nsCache[T]) unring(e *entry[T]) {
	last := len(c.ring) - 1
	moved := c.ring[last]
	moved.pos, c.ring[e.pos] = e.pos, moved
	c.ring[last] = nil
	c.ring = c.ring[:last]
	if c.hand >= len(c.ring) {
		c.hand = 0
	}
}

// victim returns the namespace to evict, by CLOCK, other than keep: in
// amortised constant time, since each sweep clears the marks it passes.
// It returns "" when keep is the only entry.
func (c *nsCache[T]) victim(keep string) string {
	for range 2*len(c.ring) + 1 {
		if len(c.ring) == 0 {
			return ""
		}
		if c.hand >= len(c.ring) {
			c.hand = 0
		}
		e := c.ring[c.hand]
		c.hand++
		if e.ns == keep {
			continue
		}
		if e.referenced.Load() {
			e.referenced.Store(false)
			continue
		}
		return e.ns
	}
	return ""
}

// find returns the slot index of ns, whose hash is h, in t.
func (c *nsCache[T]) find(t *nsTable[T], ns string, h uint64) (uint64, bool) {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i].Load()
		if e == nil {
			return 0, false
		}
		if e != c.tomb && e.ns == ns {
			return i, true
		}
	}
}

// rebuild swaps in a table sized for n live entries at most half full,
// without tombstones, and returns it.
func (c *nsCache[T]) rebuild(n int) *nsTable[T] {
	size := minCacheSlots
	for size < 2*n {
		size *= 2
	}
	next := newNSTable[T](size)
	c.each(func(_ string, e *entry[T]) {
		for i := e.hash & next.mask; ; i = (i + 1) & next.mask {
			if next.slots[i].Load() == nil {
				next.slots[i].Store(e)
				break
			}
		}
	})
	c.dead = 0
	c.tab.Store(next)
	return next
}

// each calls fn for every entry; the caller serialises writes.
func (c *nsCache[T]) each(fn func(ns string, e *entry[T])) {
	t := c.tab.Load()
	for i := range t.slots {
		if e := t.slots[i].Load(); e != nil && e != c.tomb {
			fn(e.ns, e)
		}
	}
}

// hash hashes a namespace name: every byte is read, eight at a time, and
// mixed by 128-bit multiplication (the folded multiply of wyhash). The seed
// is random per process, so names cannot be chosen to collide.
func (c *nsCache[T]) hash(s string) uint64 {
	h := c.seed ^ uint64(len(s))
	for len(s) > 16 {
		h = mix(le64(s, 0)^hashK0, le64(s, 8)^h)
		s = s[16:]
	}
	var a, b uint64
	switch n := len(s); {
	case n >= 8:
		a, b = le64(s, 0), le64(s, n-8)
	case n >= 4:
		a, b = le32(s, 0), le32(s, n-4)
	case n > 0:
		a = uint64(s[0])<<16 | uint64(s[n>>1])<<8 | uint64(s[n-1])
	}
	return mix(a^hashK1, b^h)
}

// The constants of hash.
const hashK0, hashK1 = 0xa0761d6478bd642f, 0xe7037ed1a0b428db

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func le64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string, i int) uint64 {
	s = s[i : i+4]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
}
