package namespaced

import (
	"context"
	"slices"
	"sync"
)

// subscribers are the functions Subscribe registered. Each subscription
// has a queue of namespaces of its own, drained by a goroutine of its own
// with no lock held, so that a subscriber may call anything on the
// resolver and a slow one delays only itself.
type subscribers[T any] struct {
	cache   *nsCache[T]
	mu      sync.Mutex
	list    []*subscription[T]
	stopped bool // the resolver stopped: no subscription runs
}

// subscription is one subscriber, the namespaces whose snapshot changed
// since it last looked, in order, each once with the newest snapshot
// published, and the snapshot it saw last of each: processorListener's
// shape. However often a namespace changes while fn lags, fn is called
// once, from what it saw to what is now; a change is told even when the
// namespace was evicted before fn got to it.
type subscription[T any] struct {
	fn func(ns string, old, new *Snapshot[T])

	mu    sync.Mutex
	wake  *sync.Cond
	queue []string
	to    map[string]*Snapshot[T] // by namespace queued, the newest published
	seen  map[string]*Snapshot[T]
	cache *nsCache[T]
	busy  bool // fn is running
	off   bool
}

// add registers fn, having seen the snapshots in seen, starts its
// goroutine, and returns how to stop both. Once the resolver stopped, fn
// is never called. The caller holds state.mu, so that no change is posted
// between seen and the registration.
func (s *subscribers[T]) add(fn func(ns string, old, new *Snapshot[T]), seen map[string]*Snapshot[T]) (cancel func()) {
	sub := &subscription[T]{fn: fn, to: map[string]*Snapshot[T]{}, seen: seen, cache: s.cache}
	sub.wake = sync.NewCond(&sub.mu)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return func() {}
	}
	s.list = append(s.list, sub)
	go sub.run()
	return func() {
		s.mu.Lock()
		s.list = slices.DeleteFunc(s.list, func(x *subscription[T]) bool { return x == sub })
		s.mu.Unlock()
		sub.cancel()
	}
}

// stop cancels every subscription; until restart, none is taken. It does
// not wait for a subscriber that is running: Stop may be called from one.
func (s *subscribers[T]) stop() {
	s.mu.Lock()
	list := s.list
	s.list, s.stopped = nil, true
	s.mu.Unlock()
	for _, sub := range list {
		sub.cancel()
	}
}

// restart takes subscriptions again after stop.
func (s *subscribers[T]) restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = false
}

// post tells every subscriber of snap, published for ns: first when ns was
// just cached (what its next change is from, not a change), nil when ns
// was evicted. The caller holds state.mu, so that posts come in the order
// of the changes.
func (s *subscribers[T]) post(ns string, snap *Snapshot[T], first bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sub := range s.list {
		sub.post(ns, snap, first)
	}
}

func (sub *subscription[T]) post(ns string, snap *Snapshot[T], first bool) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	_, queued := sub.to[ns]
	switch {
	case sub.off:
	case snap == nil: // evicted: a change queued is still told
		if !queued {
			delete(sub.seen, ns)
		}
	case first && !queued:
		sub.seen[ns] = snap
	default: // a change, or cached again with one not yet told
		if !queued {
			sub.queue = append(sub.queue, ns)
			sub.wake.Broadcast()
		}
		sub.to[ns] = snap
	}
}

// cancel ends the subscription: its goroutine returns once fn, if
// running, has.
func (sub *subscription[T]) cancel() {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	sub.off = true
	sub.queue, sub.to, sub.seen = nil, nil, nil
	sub.wake.Broadcast()
}

// run calls fn for each namespace queued whose newest snapshot is not the
// one fn saw last, with no lock held, until the subscription is
// cancelled.
func (sub *subscription[T]) run() {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	for {
		for !sub.off && len(sub.queue) == 0 {
			sub.wake.Broadcast() // for wait: nothing is left
			sub.wake.Wait()
		}
		if sub.off {
			return
		}
		ns := sub.queue[0]
		sub.queue = sub.queue[1:]
		now, old := sub.to[ns], sub.seen[ns]
		delete(sub.to, ns)
		sub.seen[ns] = now
		if sub.cache.get(ns) == nil {
			delete(sub.seen, ns) // evicted: told now, then forgotten
		}
		if old == nil || old == now {
			continue
		}
		sub.busy = true
		sub.mu.Unlock()
		sub.fn(ns, old, now)
		sub.mu.Lock()
		sub.busy = false
	}
}

// wait returns once fn has returned from every namespace queued, or the
// subscription was cancelled, or ctx is done.
func (sub *subscription[T]) wait(ctx context.Context) error {
	return waitWhile(ctx, &sub.mu, sub.wake, func() bool { return !sub.off && (len(sub.queue) > 0 || sub.busy) })
}

// wait is subscription.wait for every subscriber.
func (s *subscribers[T]) wait(ctx context.Context) error {
	s.mu.Lock()
	list := slices.Clone(s.list)
	s.mu.Unlock()
	for _, sub := range list {
		if err := sub.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}
