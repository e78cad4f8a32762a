// Package mergeengine gives strata's own packages the hooks of the merge
// engine that package merge keeps unexported, so that merge.Result stays
// read-only for everyone else:
//
//   - Extend merges more layers above a Result without merging its layers
//     again;
//   - Fill and FillFunc record what a step after merging (defaulting) set;
//   - EachFrom walks the keys the layers from the n-th on set;
//   - Flat says whether every key has one segment.
//
// Package merge registers the hooks when it is initialised, before any
// package that imports it runs; Get panics if the types asked for are not
// merge's.
package mergeengine

// Hooks are the engine's hooks over merge's result R, layer L and source S.
type Hooks[R, L, S any] struct {
	// Extend returns the merge of r's layers followed by upper; r is not
	// changed. It panics on a filled r.
	Extend func(r R, upper ...L) R
	// Fill records values set after merging, winning over every layer,
	// credited to src. Only before r is shared.
	Fill func(r R, src S, values map[string]string)
	// FillFunc is Fill computed when r is first read, by fn(a, b,
	// values): fn takes what it needs in a and b instead of capturing it,
	// as EachFrom's does. Only before r is shared, at most once.
	FillFunc func(r R, src S, fn func(a, b any, values map[string]string) map[string]string, a, b any)
	// EachFrom calls fn(a, b, key, value) for every effective key whose
	// value comes from layer n or a later one, until fn returns false, and
	// reports whether fn stopped it. fn takes what it needs in a and b
	// instead of capturing it: a closure called through a hook escapes,
	// and the walk is on the path of every namespace rebuild.
	EachFrom func(r R, n int, fn func(a, b any, key, value string) bool, a, b any) (stopped bool)
	// Flat reports whether every key merged has one segment.
	Flat func(r R) bool
}

var registered any

// Register records the hooks; package merge calls it once, from init.
func Register[R, L, S any](h Hooks[R, L, S]) { registered = h }

// Get returns the hooks package merge registered.
func Get[R, L, S any]() Hooks[R, L, S] { return registered.(Hooks[R, L, S]) }
