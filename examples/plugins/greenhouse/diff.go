package greenhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Clone returns a copy of s that can take objects and lose them without
// changing s; the objects themselves are shared, and never changed.
func (s *Set) Clone() *Set {
	return &Set{Definitions: maps.Clone(s.Definitions), Presets: maps.Clone(s.Presets), Plugins: maps.Clone(s.Plugins),
		Clusters: maps.Clone(s.Clusters), Overrides: maps.Clone(s.Overrides)}
}

// WithOverride returns a copy of s with o in it, ranked as the API server
// would store it: an edit keeps the creation time of the override it
// replaces, a new one is the newest, whatever o says.
func (s *Set) WithOverride(o *PluginOverride) *Set {
	after := s.Clone()
	cp := *o
	if existing := s.Overrides[objectName(o.ObjectMeta)]; existing != nil {
		cp.CreationTimestamp = existing.CreationTimestamp
	} else {
		cp.CreationTimestamp = metav1.Now()
	}
	after.Overrides[objectName(o.ObjectMeta)] = &cp
	return after
}

// ContestsWith returns the contests o would take part in once written to
// all: for each Plugin of o's namespace whose values can be computed, by
// name, a line per option o contests (ContestLines), prefixed with the
// Plugin. Contests are looked for whatever s says of them.
//
// It stops when ctx ends (an admission's deadline), with what it found and
// a line saying where it stopped.
func ContestsWith(ctx context.Context, all *Set, o *PluginOverride, s Settings) []string {
	after := all.WithOverride(o)
	s.ContestsAreErrors = false
	id := objectName(o.ObjectMeta)
	var out []string
	for _, key := range slices.Sorted(maps.Keys(after.Plugins)) {
		ns, name, _ := strings.Cut(key, "/")
		if ns != o.Namespace {
			continue
		}
		if ctx.Err() != nil {
			return append(out, fmt.Sprintf("not looked for from Plugin %s on: %v", key, ctx.Err()))
		}
		res, err := Effective(after, ns, name, s)
		if err != nil {
			continue
		}
		lines, involved := ContestLines(res)
		if !slices.Contains(involved, id) {
			continue
		}
		for _, l := range lines {
			if strings.Contains(l, KindPluginOverride+" "+id+" ") || strings.Contains(l, KindPluginOverride+" "+id+",") {
				out = append(out, "Plugin "+key+": "+l)
			}
		}
	}
	return out
}

// All reads every object of the kinds this package reads, in every
// namespace, into a Set.
func (s Store) All() (*Set, error) { return s.In("") }

// In reads the objects of the kinds this package reads in namespace (""
// for every namespace), and every ClusterPluginDefinition, into a Set.
func (s Store) In(namespace string) (*Set, error) {
	set := NewSet()
	for _, kind := range slices.Sorted(maps.Keys(Resources)) {
		ns := namespace
		if kind == KindClusterPluginDefinition {
			ns = ""
		}
		us, err := s.R.List(s.Ctx, Resources[kind], ns)
		if err != nil {
			return nil, fmt.Errorf("listing %ss: %w", kind, err)
		}
		for _, u := range us {
			j, err := json.Marshal(u.Object)
			if err != nil {
				return nil, err
			}
			if _, err := set.Add(kind, j); err != nil {
				return nil, fmt.Errorf("%s %s: %w", kind, objectName(metav1.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName()}), err)
			}
		}
	}
	return set, nil
}

// PluginDiff is how one Plugin's option values change from one set of
// objects to another.
type PluginDiff struct {
	Plugin string `json:"plugin"`
	// Options are the options whose value changes, by name.
	Options []OptionDiff `json:"options,omitempty"`
	// Error is why the Plugin's values cannot be computed any more.
	Error string `json:"error,omitempty"`
}

// OptionDiff is one option's value before and after, nil where it is
// unset, each with the layer that decides it: a value from a Secret by
// its reference.
type OptionDiff struct {
	Name         string       `json:"name"`
	Before       *OptionValue `json:"before"`
	After        *OptionValue `json:"after"`
	BeforeSource string       `json:"beforeSource,omitempty"`
	AfterSource  string       `json:"afterSource,omitempty"`
}

// Diff returns, for every Plugin of before or after whose option values
// differ between the two sets, sorted by namespace and name, each option
// that changes; a Plugin whose values after cannot be computed, and could
// before, is listed with the error. One that cannot be computed either
// way is left out: the change does not cause it.
func Diff(ctx context.Context, before, after *Set, s Settings) []PluginDiff {
	names := slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, bool) bool) {
		for k := range before.Plugins {
			yield(k, true)
		}
		for k := range after.Plugins {
			yield(k, true)
		}
	})))
	var out []PluginDiff
	for _, key := range names {
		if ctx.Err() != nil {
			return out
		}
		ns, name, _ := strings.Cut(key, "/")
		b, errB := effectiveOrNil(before, ns, name, s)
		a, errA := effectiveOrNil(after, ns, name, s)
		switch {
		case errA != nil && errB != nil:
			continue
		case errA != nil:
			out = append(out, PluginDiff{Plugin: key, Error: errA.Error()})
			continue
		}
		if d := diffValues(key, b, a); len(d.Options) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// effectiveOrNil is Effective, nil for a Plugin set does not hold; an
// error of before stands for no values.
func effectiveOrNil(set *Set, ns, name string, s Settings) (*Result, error) {
	if set.Plugins[ns+"/"+name] == nil {
		return nil, nil
	}
	return Effective(set, ns, name, s)
}

// diffValues compares the values of before and after (nil: none).
func diffValues(key string, before, after *Result) PluginDiff {
	values := func(r *Result) map[string]OptionValue {
		out := map[string]OptionValue{}
		if r != nil {
			for _, v := range r.OptionValues {
				out[v.Name] = v
			}
		}
		return out
	}
	source := func(r *Result, name string) string {
		if r == nil {
			return ""
		}
		return r.Provenance[name].Source
	}
	bv, av := values(before), values(after)
	d := PluginDiff{Plugin: key}
	for _, name := range slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, bool) bool) {
		for k := range bv {
			yield(k, true)
		}
		for k := range av {
			yield(k, true)
		}
	}))) {
		b, inB := bv[name]
		a, inA := av[name]
		if inB && inA && Digest(b) == Digest(a) {
			continue
		}
		od := OptionDiff{Name: name, BeforeSource: source(before, name), AfterSource: source(after, name)}
		if inB {
			od.Before = &b
		}
		if inA {
			od.After = &a
		}
		d.Options = append(d.Options, od)
	}
	return d
}
