// Package target decides which layers apply to a target and in what
// order: layers that carry a selector over a target's attributes (its
// labels, its name, names to leave out, and further named dimensions such
// as a plugin definition) and a specificity class, applied in a ladder of
// classes the caller declares, most generic first, then by a rank the
// caller may give within a class, then by creation time, then by name. Given a target it says which layers apply, in what order,
// and which were left out and why.
//
// It is Greenhouse's plugin-override model (ADR 007): an override scoped
// to no cluster, to clusters by label or name, to plugin definitions, or
// to both, most generic first and most specific last. strata's namespace
// selector layers (layers/namespaced) are another use: one class, ranked
// by their selector's number of terms.
//
// Label selectors are apimachinery's (k8s.io/apimachinery/pkg/labels), as
// Kubernetes matches them; the package needs no client-go and no API
// types.
package target

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/stratacfg/strata/merge"
)

// Target is what layers are selected for: a cluster, a namespace.
type Target struct {
	// Name is the target's name.
	Name string
	// Labels are the target's labels.
	Labels map[string]string
	// Dimensions are further attributes a selector may name, such as
	// "pluginDefinition": "kube-monitoring".
	Dimensions map[string]string
}

// Selector says which targets a layer applies to. Every part that is set
// must match; the zero Selector applies to every target.
type Selector struct {
	// Labels, when set, must match the target's labels: a selector of
	// apimachinery's, parsed (labels.Parse) or converted from an API
	// object's (metav1.LabelSelectorAsSelector), which checks it.
	Labels labels.Selector
	// Names, when not empty, are the only target names it applies to.
	Names []string
	// ExcludeNames are names it never applies to, whatever else matches.
	ExcludeNames []string
	// Dimensions maps a dimension to the values it applies to (any of
	// them); a target without the dimension does not match.
	Dimensions map[string][]string
}

// check returns an error for a dimension with no values: a selector
// that can never match.
func (s Selector) check() error {
	for d, vs := range s.Dimensions {
		if len(vs) == 0 {
			return fmt.Errorf("dimension %s: no values", d)
		}
	}
	return nil
}

// Matches reports whether s applies to t, as Why does without saying
// why: it formats and allocates nothing, for a caller that asks often.
func (s Selector) Matches(t Target) bool {
	if slices.Contains(s.ExcludeNames, t.Name) || len(s.Names) > 0 && !slices.Contains(s.Names, t.Name) {
		return false
	}
	if s.Labels != nil && !s.Labels.Matches(labels.Set(t.Labels)) {
		return false
	}
	for d, vs := range s.Dimensions {
		if v, ok := t.Dimensions[d]; !ok || !slices.Contains(vs, v) {
			return false
		}
	}
	return true
}

// Why returns why s does not apply to t, or "" when it does: the first
// part that does not match, in the order names left out, names, labels,
// dimensions.
func (s Selector) Why(t Target) string {
	if slices.Contains(s.ExcludeNames, t.Name) {
		return fmt.Sprintf("%s is among the names left out", t.Name)
	}
	if len(s.Names) > 0 && !slices.Contains(s.Names, t.Name) {
		return fmt.Sprintf("%s is not among the names %s", t.Name, strings.Join(s.Names, ", "))
	}
	if s.Labels != nil {
		if why := labelsWhy(s.Labels, t.Labels); why != "" {
			return why
		}
	}
	dims := make([]string, 0, len(s.Dimensions))
	for d := range s.Dimensions {
		dims = append(dims, d)
	}
	sort.Strings(dims)
	for _, d := range dims {
		v, ok := t.Dimensions[d]
		if !ok {
			return fmt.Sprintf("%s has no %s", t.Name, d)
		}
		if !slices.Contains(s.Dimensions[d], v) {
			return fmt.Sprintf("%s %s is not among %s", d, v, strings.Join(s.Dimensions[d], ", "))
		}
	}
	return ""
}

// labelsWhy returns why sel does not match set, or "": the first of its
// requirements that does not hold.
func labelsWhy(sel labels.Selector, set map[string]string) string {
	if sel.Matches(labels.Set(set)) {
		return ""
	}
	reqs, selectable := sel.Requirements()
	for _, r := range reqs {
		if !r.Matches(labels.Set(set)) {
			return fmt.Sprintf("label %s: %s", r.String(), have(set, r.Key()))
		}
	}
	if !selectable {
		return "its label selector selects nothing"
	}
	return fmt.Sprintf("label selector %s does not match", sel)
}

func have(labels map[string]string, k string) string {
	if v, ok := labels[k]; ok {
		return "it is " + v
	}
	return "not set"
}

// Layer is a layer that applies only to the targets its selector
// selects, at the rung of its class.
type Layer struct {
	*merge.Layer
	Selector Selector
	// Class is the layer's rung of the Ladder.
	Class string
	// Rank orders layers of one class before their creation time: lower
	// first. A caller that ranks by specificity within a class (strata's
	// namespace selector layers rank by their selector's number of terms)
	// sets it; the zero Rank leaves creation time to decide.
	Rank int
	// Created orders layers of one class and rank: older first.
	Created time.Time
	// Name orders layers of one class created at the same time, and
	// names the layer where its Source does not.
	Name string
}

// display names x: its Name, or its Source.
func (x *Layer) display() string {
	if x.Name == "" && x.Layer != nil {
		return x.Layer.Source.String()
	}
	return x.Name
}

// Ignored is a layer left out for a target, and why.
type Ignored struct {
	Layer  *Layer
	Reason string
}

// Ladder is the declared order of specificity classes, most generic
// first: a layer of a later class applies above every layer of an
// earlier one.
type Ladder []string

// Sort returns layers in the order they apply: their class's rung, then
// their rank, then creation time, then name. A layer whose class is not on
// the ladder, or whose selector names a dimension with no values, is an
// error naming it: nothing is left out silently.
func (l Ladder) Sort(layers []*Layer) ([]*Layer, error) {
	rung := make(map[string]int, len(l))
	for i, c := range l {
		rung[c] = i
	}
	var errs []string
	for _, x := range layers {
		if _, ok := rung[x.Class]; !ok {
			errs = append(errs, fmt.Sprintf("%s: class %q is not on the ladder (%s)", x.display(), x.Class, strings.Join(l, " < ")))
		}
		if err := x.Selector.check(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: selector: %v", x.display(), err))
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	sorted := slices.Clone(layers)
	slices.SortStableFunc(sorted, func(a, b *Layer) int {
		return cmp.Or(cmp.Compare(rung[a.Class], rung[b.Class]), cmp.Compare(a.Rank, b.Rank),
			a.Created.Compare(b.Created), strings.Compare(a.Name, b.Name))
	})
	return sorted, nil
}

// Select returns the layers that apply to t, in the order Sort gives, and
// those left out, each with why, in the same order; its error is Sort's.
func (l Ladder) Select(t Target, layers []*Layer) (applied []*Layer, ignored []Ignored, err error) {
	sorted, err := l.Sort(layers)
	if err != nil {
		return nil, nil, err
	}
	for _, x := range sorted {
		if why := x.Selector.Why(t); why != "" {
			ignored = append(ignored, Ignored{Layer: x, Reason: why})
			continue
		}
		applied = append(applied, x)
	}
	return applied, ignored, nil
}

// Layers returns the merge layers of applied, in order, for merge.Merge
// after whatever lies below them.
func Layers(applied []*Layer) []*merge.Layer {
	out := make([]*merge.Layer, len(applied))
	for i, x := range applied {
		out[i] = x.Layer
	}
	return out
}

// Contest is a key that layers of one class and rank, which only their
// creation times and names order, set to different values: the value
// that wins, and the others, nearest first, each with its layer.
// Crossplane's and Gatekeeper's users ask for exactly this report: two
// equally specific layers that disagree are a mistake to show, not a
// choice to make silently.
type Contest struct {
	Key    string
	Winner merge.Shadow
	Others []merge.Shadow
}

// Contests returns the contested keys of r, the merge of applied (in the
// order Select gives them, over whatever lies below them), sorted by key.
// A layer that sets a key to the winner's value does not contest it, and
// neither does one of another class or rank, which the ladder orders.
func Contests(applied []*Layer, r *merge.Result) []Contest {
	type tie struct {
		class string
		rank  int
	}
	byTie := map[tie]int{}
	bySource := make(map[merge.Source]*Layer, len(applied))
	for _, x := range applied {
		byTie[tie{x.Class, x.Rank}]++
		bySource[x.Layer.Source] = x
	}
	if len(byTie) == len(applied) { // no two layers can tie
		return nil
	}
	var out []Contest
	keys := append(r.Keys(), r.Tombstones()...) // a removal contests a value too
	slices.Sort(keys)
	for _, key := range keys {
		p, _ := r.Explain(key)
		win, shadowed := merge.Shadow{Source: p.Source, Value: p.Value}, p.Shadowed
		if bySource[win.Source] == nil && len(shadowed) > 0 {
			// A step after merging (defaulting) refilled the value: the
			// merge's winner is the layer below it.
			win, shadowed = shadowed[0], shadowed[1:]
		}
		w := bySource[win.Source]
		if w == nil || byTie[tie{w.Class, w.Rank}] < 2 {
			continue
		}
		c := Contest{Key: key, Winner: win}
		for _, s := range shadowed {
			if x := bySource[s.Source]; x != nil && x.Class == w.Class && x.Rank == w.Rank && !sameJSON(s.Value, win.Value) {
				c.Others = append(c.Others, s)
			}
		}
		for _, rp := range p.Replaced { // a key above or under it, which setting it replaced
			if x := bySource[rp.Source]; x != nil && x.Class == w.Class && x.Rank == w.Rank {
				c.Others = append(c.Others, merge.Shadow{Source: rp.Source, Value: x.Values[rp.Key]})
			}
		}
		if len(c.Others) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// sameJSON reports whether two JSON texts hold the same value: 1 and 1.0,
// or members in another order, are one; integers past 2^53 are compared
// exactly.
func sameJSON(a, b string) bool {
	if a == b {
		return true
	}
	x, errx := decodeNumbers(a)
	y, erry := decodeNumbers(b)
	return errx == nil && erry == nil && equalJSON(x, y)
}

// decodeNumbers decodes JSON text with its numbers as written.
func decodeNumbers(s string) (any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// equalJSON compares two decoded values, numbers by value.
func equalJSON(x, y any) bool {
	switch x := x.(type) {
	case json.Number:
		y, ok := y.(json.Number)
		return ok && equalNumbers(x, y)
	case map[string]any:
		y, ok := y.(map[string]any)
		return ok && maps.EqualFunc(x, y, equalJSON)
	case []any:
		y, ok := y.([]any)
		return ok && slices.EqualFunc(x, y, equalJSON)
	}
	return x == y
}

// equalNumbers compares two JSON numbers exactly as rationals, or as
// float64s where one has an exponent or over 64 characters (a rational
// of 1e999999 costs seconds).
func equalNumbers(a, b json.Number) bool {
	exact := func(n json.Number) bool { return len(n) <= 64 && !strings.ContainsAny(string(n), "eE") }
	if exact(a) && exact(b) {
		x, okx := new(big.Rat).SetString(string(a))
		y, oky := new(big.Rat).SetString(string(b))
		return okx && oky && x.Cmp(y) == 0
	}
	x, errx := a.Float64()
	y, erry := b.Float64()
	return errx == nil && erry == nil && x == y
}
