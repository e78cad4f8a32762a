package layers

import (
	"sync/atomic"
)

// cacheShards is the number of copy-on-write maps the namespace cache is
// split into: a write copies one shard, a few dozen entries with 10,000
// namespaces cached, instead of the whole map.
const cacheShards = 256

// nsCache maps namespaces to entries. Reads take no lock and allocate
// nothing: they load a shard's map and index it. Writes replace a shard's map
// with a modified copy and must be serialised by the caller.
type nsCache[T any] struct {
	shards [cacheShards]atomic.Pointer[map[string]*T]
	n      int
}

func shardOf(ns string) uint32 {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(ns); i++ {
		h ^= uint32(ns[i])
		h *= 16777619
	}
	return h % cacheShards
}

func (c *nsCache[T]) get(ns string) *T {
	m := c.shards[shardOf(ns)].Load()
	if m == nil {
		return nil
	}
	return (*m)[ns]
}

// put adds or replaces ns; the caller serialises writes.
func (c *nsCache[T]) put(ns string, e *T) {
	s := &c.shards[shardOf(ns)]
	old := s.Load()
	next := make(map[string]*T, c.lenOf(old)+1)
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
		if _, ok := (*old)[ns]; !ok {
			c.n++
		}
	} else {
		c.n++
	}
	next[ns] = e
	s.Store(&next)
}

// del removes ns; the caller serialises writes.
func (c *nsCache[T]) del(ns string) {
	s := &c.shards[shardOf(ns)]
	old := s.Load()
	if old == nil {
		return
	}
	if _, ok := (*old)[ns]; !ok {
		return
	}
	next := make(map[string]*T, len(*old))
	for k, v := range *old {
		if k != ns {
			next[k] = v
		}
	}
	c.n--
	s.Store(&next)
}

// each calls fn for every entry; the caller serialises writes.
func (c *nsCache[T]) each(fn func(ns string, e *T)) {
	for i := range c.shards {
		if m := c.shards[i].Load(); m != nil {
			for k, v := range *m {
				fn(k, v)
			}
		}
	}
}

// clear removes every entry; the caller serialises writes.
func (c *nsCache[T]) clear() {
	for i := range c.shards {
		c.shards[i].Store(nil)
	}
	c.n = 0
}

func (c *nsCache[T]) lenOf(m *map[string]*T) int {
	if m == nil {
		return 0
	}
	return len(*m)
}
