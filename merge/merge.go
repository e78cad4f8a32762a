package merge

import (
	"encoding/json"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Result is the outcome of Merge: the effective value of every key, which
// layer set it, and what was dropped on the way. It is read-only: nothing
// outside this package changes it once it is shared, and it is safe for
// concurrent reads.
type Result struct {
	layers []*Layer
	// base, when set, holds the entries of a Result this one extends:
	// a key not in entries has base's entry. base is flat, unfilled and
	// never extended in place, so a Result that extends it shares its
	// entries instead of copying them.
	base    *Result
	entries entryMap
	more    map[string][]uint64 // layers from the 64th on; see entry
	dropped []Dropped
	cleared []Cleared
	nested  bool // some key has more than one segment
	filled  bool // fill or fillFunc was applied
	merged  int  // the layers merged; those after are fills

	// A fill computed on first read; see fillFunc.
	fillSrc     Source
	fillFn      func(a, b any, values map[string]string) map[string]string // dropped once applied
	fillA       any                                                        // and what it takes
	fillB       any
	fillPending atomic.Bool
	fillOnce    sync.Once
}

// entry is one effective key. set records every layer that set the key, one
// bit per layer index below 64: the highest bit is the winner, the others it
// shadowed. Layers from the 64th on are recorded in Result.more, so that the
// common entry stays two words and a string.
type entry struct {
	value string
	set   uint64
}

// mark records that layer i set key.
func (r *Result) mark(e *entry, key string, i int) {
	if i < 64 {
		e.set |= 1 << uint(i)
		return
	}
	if r.more == nil {
		r.more = map[string][]uint64{}
	}
	words := r.more[key]
	w := i/64 - 1
	for len(words) <= w {
		words = append(words, 0)
	}
	words[w] |= 1 << uint(i%64)
	r.more[key] = words
}

// indexes returns the layers that set key, highest (the winner) first.
func (r *Result) indexes(key string, e entry) []int {
	var out []int
	more := r.moreOf(key)
	for w := len(more) - 1; w >= 0; w-- {
		for m := more[w]; m != 0; m &^= 1 << uint(63-bits.LeadingZeros64(m)) {
			out = append(out, (w+1)*64+63-bits.LeadingZeros64(m))
		}
	}
	for m := e.set; m != 0; m &^= 1 << uint(63-bits.LeadingZeros64(m)) {
		out = append(out, 63-bits.LeadingZeros64(m))
	}
	return out
}

// moreOf returns the words of layers from the 64th on that set key.
func (r *Result) moreOf(key string) []uint64 {
	if r.more == nil && (r.base == nil || r.base.more == nil) {
		return nil
	}
	if words, ok := r.more[key]; ok || r.base == nil {
		return words
	}
	if _, over := r.entries.get(key); over {
		return nil
	}
	return r.base.more[key]
}

// get returns the entry of key.
func (r *Result) get(key string) (entry, bool) {
	if e, ok := r.entries.get(key); ok || r.base == nil {
		return e, ok
	}
	return r.base.entries.get(key)
}

// getForUpdate returns the entry of key to be changed and stored in
// r.entries, taking a copy of what base holds of it.
func (r *Result) getForUpdate(key string) entry {
	e, ok := r.entries.get(key)
	if ok || r.base == nil {
		return e
	}
	e, _ = r.base.entries.get(key)
	if words := r.base.more[key]; words != nil {
		if r.more == nil {
			r.more = map[string][]uint64{}
		}
		r.more[key] = slices.Clone(words)
	}
	return e
}

// each calls fn for every entry until fn returns false.
func (r *Result) each(fn func(key string, e entry) bool) {
	for k, e := range r.entries.all() {
		if !fn(k, e) {
			return
		}
	}
	if r.base == nil {
		return
	}
	for k, e := range r.base.entries.all() {
		if _, over := r.entries.get(k); !over && !fn(k, e) {
			return
		}
	}
}

// winner returns the layer whose value of key is effective.
func (r *Result) winner(key string, e entry) int {
	if more := r.moreOf(key); more != nil {
		for w := len(more) - 1; w >= 0; w-- {
			if more[w] != 0 {
				return (w+1)*64 + 63 - bits.LeadingZeros64(more[w])
			}
		}
	}
	return 63 - bits.LeadingZeros64(e.set)
}

// Cleared is a key that a layer set but that does not take effect because a
// higher layer set an ancestor or a descendant of it, replacing the object
// it lived in (RFC 7386).
type Cleared struct {
	Key    string
	Source Source
	// By is the key, set by a higher layer, that replaced it.
	By       string
	BySource Source
}

// Merge merges layers, most generic first: for each key the last layer that
// sets it wins. A key a layer's Policy refuses is dropped and reported. A
// tombstone removes the key and, as any value does, whatever lower layers set
// under or above it. Merge keeps references to the layers for Explain; the
// caller must not modify them afterwards.
func Merge(layers ...*Layer) *Result {
	n := 0
	for _, l := range layers {
		n += len(l.Values)
	}
	r := &Result{layers: layers, entries: newEntryMap(n)}
	r.apply(0)
	return r
}

// extend returns the merge of r's layers followed by layers: what
// Merge(append(r.layers, layers...)...) returns, without merging r's
// layers again when every key is flat (one segment). With nested keys it
// merges everything again, since the keys an ancestor replaced in r still
// count as shadowed when they are set again above it. r is not modified
// and stays valid. extend panics when r was filled (fill, fillFunc): a
// fill is the last word on a merge, and layers do not go above it.
func (r *Result) extend(layers ...*Layer) *Result {
	if r.filled {
		panic("merge: extend of a filled Result")
	}
	all := append(slices.Clip(r.layers), layers...)
	if r.nested || r.base != nil {
		return Merge(all...)
	}
	n := 0
	for _, l := range layers {
		n += len(l.Values)
	}
	out := &Result{
		layers:  all,
		base:    r,
		entries: newEntryMap(n),
		dropped: slices.Clip(r.dropped),
		cleared: slices.Clip(r.cleared),
	}
	if !out.applyFlat(len(r.layers)) {
		return Merge(all...) // a nested key above: r's shadowed keys count again
	}
	return out
}

// apply merges r.layers[from:] into r.
func (r *Result) apply(from int) { r.merge(from, false) }

// applyFlat is apply of layers whose keys all have one segment: it stops
// at the first key with more, and reports whether it met none.
func (r *Result) applyFlat(from int) bool { return r.merge(from, true) }

// merge merges r.layers[from:] into r and reports whether every key had
// one segment; with flatOnly it stops at the first that has more.
func (r *Result) merge(from int, flatOnly bool) bool {
	dropped := len(r.dropped)
	nested := false
	for i, l := range r.layers[from:] {
		i += from
		appends := l.Lists.appends()
		for k, v := range l.Values {
			if l.Policy != nil {
				if ref := l.Policy.Admit(k, v); ref.Refused() {
					r.dropped = append(r.dropped, Dropped{Source: l.Source, Key: k, Value: v, Reason: ref.Reason, Field: ref.Field, Detail: ref.Detail})
					continue
				}
			}
			if appends {
				k = l.Lists.appendKey(k, i) // no two layers meet on an appended element
			}
			if !nested && isNested(k) {
				if flatOnly {
					return false
				}
				nested = true
			}
			e := r.getForUpdate(k)
			e.value = v
			r.mark(&e, k, i)
			r.entries.put(k, e)
		}
	}
	if nested {
		r.nested = true
		r.resolveNesting()
	}
	if len(r.dropped) > dropped {
		sort.Slice(r.dropped, func(i, j int) bool {
			if r.dropped[i].Key != r.dropped[j].Key {
				return r.dropped[i].Key < r.dropped[j].Key
			}
			return r.dropped[i].Source.String() < r.dropped[j].Source.String()
		})
	}
	return true
}

// isNested reports whether key has more than one segment, the only case in
// which it can have an ancestor.
func isNested(key string) bool {
	for i := 1; i < len(key); i++ {
		if key[i] == '/' {
			return true
		}
	}
	return false
}

// resolveNesting applies RFC 7386 between a key and its ancestors: whichever
// of the two was set by the later layer replaces the other.
func (r *Result) resolveNesting() {
	type clash struct {
		loser, by string
		byLayer   int
	}
	var clashes []clash
	for k, e := range r.entries.all() {
		for i := len(k) - 1; i > 0; i-- {
			if k[i] != '/' {
				continue
			}
			anc := k[:i]
			a, ok := r.entries.get(anc)
			if !ok {
				continue
			}
			if aw, ew := r.winner(anc, a), r.winner(k, e); aw > ew {
				clashes = append(clashes, clash{loser: k, by: anc, byLayer: aw})
			} else {
				clashes = append(clashes, clash{loser: anc, by: k, byLayer: ew})
			}
		}
	}
	// A key can lose to several: it is reported as replaced by the one
	// set last, whatever order the map was walked in.
	slices.SortFunc(clashes, func(a, b clash) int {
		if a.loser != b.loser {
			return strings.Compare(a.loser, b.loser)
		}
		if a.byLayer != b.byLayer {
			return b.byLayer - a.byLayer
		}
		return strings.Compare(a.by, b.by)
	})
	for _, c := range clashes {
		e, ok := r.entries.get(c.loser)
		if !ok {
			continue
		}
		r.entries.del(c.loser)
		r.cleared = append(r.cleared, Cleared{
			Key: c.loser, Source: r.layers[r.winner(c.loser, e)].Source,
			By: c.by, BySource: r.layers[c.byLayer].Source,
		})
	}
	if len(clashes) > 0 {
		sort.Slice(r.cleared, func(i, j int) bool { return r.cleared[i].Key < r.cleared[j].Key })
	}
	// A key replaced by one that was replaced in turn (what a flag's
	// tombstone erased, the tombstone then replaced by the flag's own
	// members) is reported by the key that took the place.
	by := make(map[string]string, len(r.cleared))
	for _, c := range r.cleared {
		by[c.Key] = c.By
	}
	for i := range r.cleared {
		for range len(r.cleared) {
			next, ok := by[r.cleared[i].By]
			if !ok || next == r.cleared[i].Key {
				break
			}
			r.cleared[i].By = next
		}
	}
}

// fill records values that a step after merging set, usually defaulting:
// each key in values takes that value and wins, and the layers that set it
// before are kept as shadowed. Pass only the keys that step filled in or
// changed: a key defaulting left alone keeps its layer. fill must be called
// before the Result is shared.
func (r *Result) fill(src Source, values map[string]string) {
	if !r.filled {
		r.merged = len(r.layers)
	}
	r.filled = true
	l := &Layer{Source: src, Values: values}
	idx := len(r.layers)
	r.layers = append(r.layers, l)
	for k, v := range values {
		e := r.getForUpdate(k)
		e.value = v
		r.mark(&e, k, idx)
		r.entries.put(k, e)
	}
}

// fillFunc is fill computed on first read: the first call of any method
// that reads keys or layers calls fn with a, b and the effective values
// (tombstones left out) and fills what it returns, once, while concurrent
// readers wait. It lets a step whose attribution is costly (finding the
// keys defaulting filled) be paid only when provenance is asked for. fn
// takes what it needs in a and b rather than capturing it: a closure would
// be one more allocation on the path of every rebuild. fillFunc must be
// called before the Result is shared, at most once, and fn must not call
// r.
func (r *Result) fillFunc(src Source, fn func(a, b any, values map[string]string) map[string]string, a, b any) {
	if !r.filled {
		r.merged = len(r.layers)
	}
	r.filled = true
	r.fillSrc, r.fillFn, r.fillA, r.fillB = src, fn, a, b
	r.fillPending.Store(true)
}

// settle applies a pending FillFunc.
func (r *Result) settle() {
	if r.fillPending.Load() {
		r.fillOnce.Do(func() {
			r.fill(r.fillSrc, r.fillFn(r.fillA, r.fillB, r.values()))
			r.fillFn, r.fillA, r.fillB = nil, nil, nil // and what they hold: the decoded object compared with
			r.fillPending.Store(false)
		})
	}
}

// size returns the number of effective keys, tombstones included.
func (r *Result) size() int {
	r.settle()
	n := 0
	r.each(func(string, entry) bool { n++; return true })
	return n
}

// Lookup returns the effective JSON value of key. A key removed by a
// tombstone is not found.
func (r *Result) Lookup(key string) (string, bool) {
	r.settle()
	e, ok := r.get(key)
	if !ok || e.value == Tombstone {
		return "", false
	}
	return e.value, true
}

// flat reports whether every key merged has one segment, as in a ConfigMap
// of flat keys.
func (r *Result) flat() bool { return !r.nested }

// eachFrom calls fn for every effective key whose value comes from layer n
// or a later one, with that value, until fn returns false: the keys
// layers[n:] changed against a merge of layers[:n]. A key a tombstone
// removed comes with the value Tombstone. The order is unspecified.
func (r *Result) eachFrom(n int, fn func(key, value string) bool) {
	r.settle()
	if r.base != nil && n >= len(r.base.layers) {
		// What base holds was set below n.
		for k, e := range r.entries.all() {
			if r.winner(k, e) >= n && !fn(k, e.value) {
				return
			}
		}
		return
	}
	r.each(func(k string, e entry) bool {
		return r.winner(k, e) < n || fn(k, e.value)
	})
}

// Values returns a new map of the effective values, tombstones left out.
func (r *Result) Values() map[string]string {
	r.settle()
	return r.values()
}

func (r *Result) values() map[string]string {
	n := r.entries.len()
	if r.base != nil {
		n += r.base.entries.len()
	}
	out := make(map[string]string, n)
	r.each(func(k string, e entry) bool {
		if e.value != Tombstone {
			out[k] = e.value
		}
		return true
	})
	return out
}

// Keys returns the effective keys, sorted, tombstones left out.
func (r *Result) Keys() []string {
	r.settle()
	out := make([]string, 0, r.entries.len())
	r.each(func(k string, e entry) bool {
		if e.value != Tombstone {
			out = append(out, k)
		}
		return true
	})
	sort.Strings(out)
	return out
}

// Tombstones returns the keys whose effective value is a tombstone, sorted:
// what a layer removed, with Explain saying which and what it erased.
func (r *Result) Tombstones() []string {
	r.settle()
	var out []string
	r.each(func(k string, e entry) bool {
		if e.value == Tombstone {
			out = append(out, k)
		}
		return true
	})
	sort.Strings(out)
	return out
}

// Document returns the effective values as one JSON object (Unflatten).
func (r *Result) Document() ([]byte, error) { return r.lists().Unflatten(r.Values()) }

// lists are the keyed lists of r's layers.
func (r *Result) lists() Lists {
	var out Lists
	for _, l := range r.layers {
		for p, member := range l.Lists {
			if out == nil {
				out = Lists{}
			}
			out[p] = member
		}
	}
	return out
}

// ListMember returns what r's layers declare of the list at key, a JSON
// pointer (Layer.Lists): the member that keys its elements, ListSet or
// ListAppend.
func (r *Result) ListMember(key string) (string, bool) { return r.lists().keyOf(key) }

// Elements returns the pointer segments of the effective elements of the
// list at key, one of r's layers' Lists, in the order Document writes
// them; nil for any other key.
func (r *Result) Elements(key string) []string {
	member, ok := r.ListMember(key)
	if !ok {
		return nil
	}
	var out []string
	for _, k := range r.Keys() {
		if i := strings.LastIndexByte(k, '/'); i == len(key) && k[:i] == key {
			out = append(out, k[i+1:])
		}
	}
	sortElements(out, member)
	return out
}

// SourceOfMember returns the layer that gave the value at sub, a JSON
// pointer inside key's value (a member of a keyed list's element): the
// layer that set key, unless that is a step after merging (Result's
// fill: defaulting refills an element whole when it defaults one of its
// members) and a layer below gave the same value at sub, the nearest of
// which is returned.
func (r *Result) SourceOfMember(key, sub string) (Source, bool) {
	p, ok := r.Explain(key)
	if !ok {
		return Source{}, false
	}
	if !r.filled || sub == "" || !r.isFill(p.Source) {
		return p.Source, true
	}
	want, ok := at(p.Value, sub)
	if !ok {
		return p.Source, true
	}
	for _, sh := range p.Shadowed {
		if got, ok := at(sh.Value, sub); ok && got == want {
			return sh.Source, true
		}
	}
	return p.Source, true
}

// isFill reports whether src is the source of a step after merging.
func (r *Result) isFill(src Source) bool {
	for _, l := range r.layers[r.merged:] {
		if l.Source == src {
			return true
		}
	}
	return false
}

// at returns the value at pointer sub inside the JSON text v, as compact
// JSON with members in order.
func at(v, sub string) (string, bool) {
	segs, ok := Segments(sub)
	if !ok {
		return "", false
	}
	var node any
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	if dec.Decode(&node) != nil {
		return "", false
	}
	for _, s := range segs {
		switch n := node.(type) {
		case map[string]any:
			if node, ok = n[s]; !ok {
				return "", false
			}
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(n) {
				return "", false
			}
			node = n[i]
		default:
			return "", false
		}
	}
	out, err := json.Marshal(node)
	return string(out), err == nil
}

// Dropped returns the keys that policies refused, sorted by key, in a new
// slice.
func (r *Result) Dropped() []Dropped { return slices.Clone(r.dropped) }

// Cleared returns the keys that a higher layer replaced by setting an
// ancestor or a descendant, sorted by key, in a new slice.
func (r *Result) Cleared() []Cleared { return slices.Clone(r.cleared) }

// Sources returns the sources of the merged layers in order, in a new
// slice; the step that filled in what no layer set (defaulting) comes
// last.
func (r *Result) Sources() []Source {
	r.settle()
	out := make([]Source, len(r.layers))
	for i, l := range r.layers {
		out[i] = l.Source
	}
	return out
}

// Provenance explains one effective key.
type Provenance struct {
	Key   string
	Value string
	// Source is the layer whose value is effective.
	Source Source
	// Shadowed are the lower layers that also set the key, the nearest
	// first, each with the value it set.
	Shadowed []Shadow
	// Replaced are the keys above or under this one that lower layers set
	// and that this key's value replaced (RFC 7386): what a tombstone
	// erased, or the members of a map an object replaced whole. Sorted by
	// key.
	Replaced []Cleared
}

// Shadow is a value that a higher layer overrode.
type Shadow struct {
	Source Source
	Value  string
}

// Explain returns the provenance of key. It reports false when no layer sets
// the key. A key removed by a tombstone is explained with the tombstone as its
// value.
func (r *Result) Explain(key string) (Provenance, bool) {
	r.settle()
	e, ok := r.get(key)
	if !ok {
		return Provenance{}, false
	}
	idx := r.indexes(key, e)
	p := Provenance{Key: key, Value: e.value, Source: r.layers[idx[0]].Source}
	if len(idx) > 1 {
		p.Shadowed = make([]Shadow, 0, len(idx)-1)
		for _, i := range idx[1:] {
			p.Shadowed = append(p.Shadowed, Shadow{Source: r.layers[i].Source, Value: r.layers[i].Values[key]})
		}
	}
	for _, c := range r.cleared {
		if c.By == key {
			p.Replaced = append(p.Replaced, c)
		}
	}
	return p, true
}

// SourceOf returns the source of key's effective value, without allocating.
func (r *Result) SourceOf(key string) (Source, bool) {
	r.settle()
	e, ok := r.get(key)
	if !ok {
		return Source{}, false
	}
	return r.layers[r.winner(key, e)].Source, true
}

func quote(s string) string { return strconv.Quote(s) }
