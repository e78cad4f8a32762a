// Package agent keeps CI configurations from any source strata's watcher
// reads (ConfigMap mounts, projected volumes, git-sync checkouts, a set
// configset publishes) and answers as ci-tools' ConfigAgent does: a
// configuration looked up by org, repo and branch, indexes the caller
// declares, subscriptions to what changed in an index, and the generation
// an answer came from.
//
// Every answer comes from one Snapshot, immutable, loaded whole: a reload
// never holds a reader up, an invalid one keeps the last good snapshot,
// and a reader that needs several answers from one generation takes
// Current once and asks it. Indexes are computed once per snapshot, when
// it is loaded or, for an index added later, on its first use.
//
// The Agent's methods have the names and shapes of ci-tools'
// pkg/load/agents ConfigAgent, the configuration type a parameter, so a
// consumer written against that interface runs on it. Branches match as
// its GetMatchingConfig matches them (through prowgen's ExactlyBranch and
// FeatureBranch); a branch that is not a valid regular expression makes
// the snapshot invalid, where ci-tools fails the lookups of its repo.
package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/stratacfg/strata/watch"
)

// Metadata identifies a configuration as ci-operator's
// zz_generated_metadata does. A Branch that is not a plain branch name is
// a regular expression.
type Metadata struct {
	Org     string `json:"org"`
	Repo    string `json:"repo"`
	Branch  string `json:"branch"`
	Variant string `json:"variant,omitempty"`
}

func (m Metadata) String() string {
	s := m.Org + "/" + m.Repo + "@" + m.Branch
	if m.Variant != "" {
		s += "__" + m.Variant
	}
	return s
}

// IndexFn gives the keys a configuration is indexed under.
type IndexFn[T any] func(T) []string

// IndexDelta is what changed under one key of an index: the configurations
// no longer there or changed (as they were), and those new or changed (as
// they are).
type IndexDelta[T any] struct {
	IndexKey string
	Added    []*T
	Removed  []*T
}

// Options configure an Agent.
type Options[T any] struct {
	// Watch is how the sources are read: paths, read bounds, a
	// consistency check, settle and poll intervals, metrics. Its Load and
	// OnReload belong to the agent and must be unset.
	Watch watch.Options[*Snapshot[T]]
	// Parse decodes one configuration file: its value and its identity.
	Parse func(file string, data []byte) (T, Metadata, error)
	// Skip, when set, says which files of the sources are not
	// configurations (a version marker, a manifest): target is the path
	// the file was read under, name its path inside a directory target.
	Skip func(target, name string) bool
	// OnReload, when set, is told of every reload attempt with the number
	// of configuration files it read, from the watcher's goroutine.
	OnReload func(r watch.Reload[*Snapshot[T]], files int)
}

// maxErrors bounds the problems one invalid reload names.
const maxErrors = 20

// An Agent is the configurations of its sources, kept current.
type Agent[T any] struct {
	w     *watch.Watcher[*Snapshot[T]]
	opts  Options[T]
	files int // configuration files of the attempt; the watcher's goroutine only
	gen   int // generations loaded; the watcher's goroutine only

	mu      sync.Mutex // guards indexes and subs
	indexes map[string]IndexFn[T]
	subs    map[string][]*subscription[T]
	done    chan struct{}
	stopped atomic.Bool
}

// New returns an agent over o's sources; Start reads them.
func New[T any](o Options[T]) (*Agent[T], error) {
	switch {
	case o.Parse == nil:
		return nil, errors.New("agent: Options.Parse is required")
	case o.Watch.Load != nil || o.Watch.OnReload != nil:
		return nil, errors.New("agent: Options.Watch.Load and OnReload are the agent's")
	}
	a := &Agent[T]{opts: o, indexes: map[string]IndexFn[T]{}, subs: map[string][]*subscription[T]{}, done: make(chan struct{})}
	wo := o.Watch
	wo.Load = a.load
	wo.OnReload = a.reloaded
	if check := o.Watch.Consistent; check != nil {
		wo.Consistent = func(c *watch.Contents) error {
			a.files = a.count(c)
			return check(c)
		}
	}
	var err error
	if a.w, err = watch.New(wo); err != nil {
		return nil, err
	}
	return a, nil
}

// Start loads the first snapshot, an error when it is invalid, and keeps
// the agent current until ctx ends; subscriptions' channels close then,
// or when Start fails. An agent is started once; until then its
// subscriptions wait.
func (a *Agent[T]) Start(ctx context.Context) error {
	go func() {
		<-a.w.Done()
		a.stop()
	}()
	return a.w.Start(ctx)
}

// Done is closed once the agent has stopped.
func (a *Agent[T]) Done() <-chan struct{} { return a.done }

// Current is the snapshot in effect, nil before the first load.
func (a *Agent[T]) Current() *Snapshot[T] { return a.w.Current() }

// Watcher is the watcher underneath: its Hash, Refused and Resync.
func (a *Agent[T]) Watcher() *watch.Watcher[*Snapshot[T]] { return a.w }

func (a *Agent[T]) current() (*Snapshot[T], error) {
	s := a.w.Current()
	if s == nil {
		return nil, errors.New("no configuration loaded yet")
	}
	return s, nil
}

// GetMatchingConfig returns the configuration for m from the current
// snapshot, matching branches as ci-tools does (Snapshot.GetMatchingConfig).
func (a *Agent[T]) GetMatchingConfig(m Metadata) (T, error) {
	s, err := a.current()
	if err != nil {
		var zero T
		return zero, err
	}
	return s.GetMatchingConfig(m)
}

// GetAll returns every configuration of the current snapshot by org and
// repo; the maps are the caller's.
func (a *Agent[T]) GetAll() map[string]map[string][]T {
	s := a.w.Current()
	if s == nil {
		return map[string]map[string][]T{}
	}
	return s.GetAll()
}

// GetGeneration returns the current snapshot's generation, 0 before the
// first load.
func (a *Agent[T]) GetGeneration() int {
	if s := a.w.Current(); s != nil {
		return s.Generation
	}
	return 0
}

// AddIndex declares an index, computed for each snapshot from now on; a
// name can be declared once. Those who subscribed to it before are sent
// its whole content.
func (a *Agent[T]) AddIndex(name string, fn IndexFn[T]) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.indexes[name]; ok {
		return fmt.Errorf("there is already an index named %q", name)
	}
	a.indexes[name] = fn
	for _, sub := range a.subs[name] {
		sub.notify()
	}
	return nil
}

// GetFromIndex returns the configurations the current snapshot holds under
// key in the index name.
func (a *Agent[T]) GetFromIndex(name, key string) ([]*T, error) {
	s, err := a.current()
	if err != nil {
		return nil, err
	}
	return s.GetFromIndex(name, key)
}

// SubscribeToIndexChanges returns a channel of what changes in the index
// name from the current snapshot on, one IndexDelta per key that changed.
// As with ci-tools, the index need not exist yet: a subscriber who wants
// its initial content subscribes before AddIndex, and is sent all of it
// once the index is declared and a snapshot is loaded.
// A subscriber that reads slowly is never queued a backlog: when it reads
// again it is sent what differs between what it was sent and the newest
// snapshot, whatever the snapshots loaded in between (a delta already
// under way when a newer snapshot loads is sent as it is). The channel
// closes when the agent stops.
func (a *Agent[T]) SubscribeToIndexChanges(name string) (<-chan IndexDelta[T], error) {
	sub := newSubscription(a, name) // computes the index: not under a.mu
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped.Load() {
		return nil, errors.New("the agent has stopped")
	}
	a.subs[name] = append(a.subs[name], sub)
	go sub.run()
	sub.notify() // a snapshot loaded since newSubscription read one
	return sub.ch, nil
}

// count returns the configuration files of c.
func (a *Agent[T]) count(c *watch.Contents) int {
	n := 0
	for _, g := range c.Generations {
		for _, f := range g.Files {
			if a.opts.Skip == nil || !a.opts.Skip(g.Path, f.Name) {
				n++
			}
		}
	}
	return n
}

// load parses every configuration of c into a snapshot. A file Parse
// refuses, or two of one identity, make the whole snapshot invalid, every
// such problem named.
func (a *Agent[T]) load(_ context.Context, c *watch.Contents) (*Snapshot[T], error) {
	a.files = a.count(c)
	s := &Snapshot[T]{Generation: a.gen + 1, Hash: c.Hash, byID: make(map[Metadata]*config[T], a.files), byRepo: map[orgRepo][]*config[T]{}}
	var errs []error
	for _, g := range c.Generations {
		for _, f := range g.Files {
			if a.opts.Skip != nil && a.opts.Skip(g.Path, f.Name) {
				continue
			}
			file := g.Path
			if g.Dir {
				file = filepath.Join(g.Path, filepath.FromSlash(f.Name))
			}
			v, id, err := a.opts.Parse(file, f.Data)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: %w", file, err))
				continue
			case id.Org == "" || id.Repo == "" || id.Branch == "":
				errs = append(errs, fmt.Errorf("%s: its metadata needs org, repo and branch", file))
				continue
			case s.byID[id] != nil:
				errs = append(errs, fmt.Errorf("%s: %s is configured by %s already", file, id, s.byID[id].file))
				continue
			}
			cfg := &config[T]{id: id, file: file, data: f.Data, value: v}
			if !simpleBranch.MatchString(id.Branch) {
				if cfg.pattern, err = regexp.Compile(id.Branch); err != nil {
					errs = append(errs, fmt.Errorf("%s: branch %q is neither a branch name nor a regular expression: %w", file, id.Branch, err))
					continue
				}
			}
			s.byID[id] = cfg
			repo := orgRepo{id.Org, id.Repo}
			s.byRepo[repo] = append(s.byRepo[repo], cfg)
		}
	}
	if len(errs) > maxErrors {
		errs = append(errs[:maxErrors], fmt.Errorf("and %d more problems", len(errs)-maxErrors))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	a.mu.Lock()
	fns := maps.Clone(a.indexes)
	a.mu.Unlock()
	s.agent, s.built = a, make(map[string]index[T], len(fns))
	for name, fn := range fns {
		s.built[name] = s.compute(fn)
	}
	return s, nil
}

// reloaded counts a new generation, wakes the subscribers and tells the
// caller.
func (a *Agent[T]) reloaded(r watch.Reload[*Snapshot[T]]) {
	files := a.files
	if r.Hash == "" { // the read failed: nothing was loaded
		files = 0
	}
	a.files = 0
	if r.Status == watch.StatusSuccess {
		a.gen = r.Value.Generation
		a.mu.Lock()
		for _, subs := range a.subs {
			for _, sub := range subs {
				sub.notify()
			}
		}
		a.mu.Unlock()
	}
	if a.opts.OnReload != nil {
		a.opts.OnReload(r, files)
	}
}

// stop closes every subscription.
func (a *Agent[T]) stop() {
	a.mu.Lock()
	a.stopped.Store(true)
	all := a.subs
	a.subs = nil
	a.mu.Unlock()
	for _, subs := range all {
		for _, sub := range subs {
			sub.wait()
		}
	}
	close(a.done)
}

// simpleBranch is a branch name that is not a pattern, as ci-tools tells
// them apart.
var simpleBranch = regexp.MustCompile(`^[\w\-.]+$`)

type orgRepo struct{ org, repo string }

// config is one configuration of a snapshot.
type config[T any] struct {
	id      Metadata
	file    string
	data    []byte
	value   T
	pattern *regexp.Regexp // a branch that is a pattern
}

// matches says whether the configuration serves branch, as ci-tools
// matches: a plain branch name serves itself and its feature branches
// (NAME-...), a pattern what it matches.
func (c *config[T]) matches(branch string) bool {
	if c.pattern != nil {
		return c.pattern.MatchString(branch)
	}
	rest, ok := strings.CutPrefix(branch, c.id.Branch)
	return ok && (rest == "" || rest[0] == '-')
}

// same says whether c and d are one file with the same bytes.
func (c *config[T]) same(d *config[T]) bool {
	return c.file == d.file && string(c.data) == string(d.data)
}

// index is one index of a snapshot: key → configurations.
type index[T any] map[string][]*config[T]

// Snapshot is one loaded generation of every source. It is immutable but
// for the indexes it computes on first use.
type Snapshot[T any] struct {
	// Generation counts the snapshots the agent loaded, from 1.
	Generation int
	// Hash is the content hash of what was read (watch.Contents.Hash),
	// the one a replica reports in last_config_info.
	Hash   string
	byID   map[Metadata]*config[T]
	byRepo map[orgRepo][]*config[T]

	agent *Agent[T]
	mu    sync.Mutex
	built map[string]index[T]
}

// Len returns the number of configurations.
func (s *Snapshot[T]) Len() int { return len(s.byID) }

// Get returns the configuration of exactly id.
func (s *Snapshot[T]) Get(id Metadata) (T, bool) {
	if c := s.byID[id]; c != nil {
		return c.value, true
	}
	var zero T
	return zero, false
}

// GetMatchingConfig returns the one configuration of m's org, repo and
// variant whose branch serves m.Branch: a plain branch name serves itself
// and its feature branches (NAME-...), a pattern what it matches. None,
// or more than one, is an error, as with ci-tools.
func (s *Snapshot[T]) GetMatchingConfig(m Metadata) (T, error) {
	var zero T
	cfgs, ok := s.byRepo[orgRepo{m.Org, m.Repo}]
	if !ok {
		return zero, fmt.Errorf("could not find any config for repo %s/%s", m.Org, m.Repo)
	}
	var found []*config[T]
	for _, c := range cfgs {
		if c.id.Variant == m.Variant && c.matches(m.Branch) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return zero, fmt.Errorf("could not find any config for branch %s on repo %s/%s", m.Branch, m.Org, m.Repo)
	case 1:
		return found[0].value, nil
	}
	files := make([]string, len(found))
	for i, c := range found {
		files[i] = c.file
	}
	slices.Sort(files)
	return zero, fmt.Errorf("found more than one matching config for branch %s on repo %s/%s: %v", m.Branch, m.Org, m.Repo, files)
}

// GetAll returns every configuration by org and repo.
func (s *Snapshot[T]) GetAll() map[string]map[string][]T {
	out := map[string]map[string][]T{}
	for repo, cfgs := range s.byRepo {
		if out[repo.org] == nil {
			out[repo.org] = map[string][]T{}
		}
		for _, c := range cfgs {
			out[repo.org][repo.repo] = append(out[repo.org][repo.repo], c.value)
		}
	}
	return out
}

// GetFromIndex returns the configurations under key in the index name.
func (s *Snapshot[T]) GetFromIndex(name, key string) ([]*T, error) {
	idx, err := s.index(name)
	if err != nil {
		return nil, err
	}
	cfgs := idx[key]
	out := make([]*T, len(cfgs))
	for i, c := range cfgs {
		out[i] = &c.value
	}
	return out, nil
}

// index returns the index name, computing it once, on its first use,
// when it was declared after the snapshot was loaded.
func (s *Snapshot[T]) index(name string) (index[T], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if idx, ok := s.built[name]; ok {
		return idx, nil
	}
	s.agent.mu.Lock()
	fn, ok := s.agent.indexes[name]
	s.agent.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no index %s configured", name)
	}
	idx := s.compute(fn)
	s.built[name] = idx
	return idx, nil
}

func (s *Snapshot[T]) compute(fn IndexFn[T]) index[T] {
	idx := index[T]{}
	for _, c := range s.byID {
		for _, k := range fn(c.value) {
			idx[k] = append(idx[k], c)
		}
	}
	for _, cfgs := range idx {
		slices.SortFunc(cfgs, func(a, b *config[T]) int { return strings.Compare(a.file, b.file) })
	}
	return idx
}

// subscription delivers one subscriber's deltas from its own goroutine,
// level-triggered: it keeps what the subscriber has been sent, key by key,
// and sends what differs from the newest snapshot, so that a subscriber
// that reads slowly is never queued a backlog of stale deltas.
type subscription[T any] struct {
	a     *Agent[T]
	index string
	ch    chan IndexDelta[T]
	wake  chan struct{}
	ended chan struct{}
	sent  map[string]map[Metadata]*config[T] // by key; its goroutine only
}

func newSubscription[T any](a *Agent[T], name string) *subscription[T] {
	sub := &subscription[T]{a: a, index: name, ch: make(chan IndexDelta[T]), wake: make(chan struct{}, 1), ended: make(chan struct{}), sent: map[string]map[Metadata]*config[T]{}}
	if s := a.w.Current(); s != nil {
		idx, _ := s.index(name)
		for k, cfgs := range idx {
			sub.sent[k] = byID(cfgs)
		}
	}
	return sub
}

func (sub *subscription[T]) notify() {
	select {
	case sub.wake <- struct{}{}:
	default: // already woken: it reads the newest snapshot then
	}
}

func (sub *subscription[T]) run() {
	defer close(sub.ended)
	defer close(sub.ch)
	for {
		select {
		case <-sub.wake:
		case <-sub.a.w.Done():
			return
		}
		if !sub.catchUp() {
			return
		}
	}
}

// catchUp sends, key by key in order, what differs between what the
// subscriber was sent and the newest snapshot, starting over when a newer
// one is loaded meanwhile. It returns false when the agent stopped.
func (sub *subscription[T]) catchUp() bool {
	for {
		now := sub.a.w.Current()
		if now == nil {
			return true // nothing loaded yet: the first load wakes it
		}
		idx, err := now.index(sub.index)
		if err != nil {
			return true // not declared yet: AddIndex wakes it
		}
		newer := false
		for _, k := range slices.Sorted(maps.Keys(union(sub.sent, idx))) {
			d := diff(k, sub.sent[k], idx[k])
			if len(d.Added)+len(d.Removed) == 0 {
				continue
			}
			select {
			case sub.ch <- d:
			case <-sub.a.w.Done():
				return false
			}
			if len(idx[k]) == 0 {
				delete(sub.sent, k)
			} else {
				sub.sent[k] = byID(idx[k])
			}
			if sub.a.w.Current() != now {
				newer = true
				break
			}
		}
		if !newer {
			return true
		}
	}
}

// wait returns once the subscription's goroutine has closed its channel,
// which it does when the watcher is done.
func (sub *subscription[T]) wait() { <-sub.ended }

// diff is what changed under key from sent to now: a configuration is
// changed when its file or the file's bytes are.
func diff[T any](key string, sent map[Metadata]*config[T], now []*config[T]) IndexDelta[T] {
	d := IndexDelta[T]{IndexKey: key}
	is := byID(now)
	for _, c := range sortedConfigs(sent) {
		if n := is[c.id]; n == nil || !c.same(n) {
			d.Removed = append(d.Removed, &c.value)
		}
	}
	for _, c := range now {
		if o := sent[c.id]; o == nil || !o.same(c) {
			d.Added = append(d.Added, &c.value)
		}
	}
	return d
}

func sortedConfigs[T any](m map[Metadata]*config[T]) []*config[T] {
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, func(a, b *config[T]) int { return strings.Compare(a.file, b.file) })
	return out
}

func union[A, B any](a map[string]A, b map[string]B) map[string]bool {
	keys := make(map[string]bool, len(a)+len(b))
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

func byID[T any](cfgs []*config[T]) map[Metadata]*config[T] {
	m := make(map[Metadata]*config[T], len(cfgs))
	for _, c := range cfgs {
		m[c.id] = c
	}
	return m
}
