// Package target decides which layers apply to a target and in what
// order: layers that carry a selector over a target's attributes (its
// labels, its name, names to leave out, and further named dimensions such
// as a plugin definition) and a specificity class, applied in a ladder of
// classes the caller declares, most generic first, then by creation time,
// then by name. Given a target it says which layers apply, in what order,
// and which were left out and why.
//
// It is Greenhouse's plugin-override model (ADR 007): an override scoped
// to no cluster, to clusters by label or name, to plugin definitions, or
// to both, most generic first and most specific last. strata's namespace
// selector layers are another use.
//
// The package imports nothing but the standard library and merge: no
// client-go, no API types.
package target

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

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

// Operator is a label requirement's operator.
type Operator string

// The operators of Kubernetes label selectors.
const (
	In           Operator = "In"
	NotIn        Operator = "NotIn"
	Exists       Operator = "Exists"
	DoesNotExist Operator = "DoesNotExist"
)

// Requirement is one label requirement, as in a Kubernetes label
// selector's matchExpressions.
type Requirement struct {
	Key      string
	Operator Operator
	Values   []string
}

// LabelSelector is a Kubernetes label selector: every label of
// MatchLabels and every requirement must hold. The zero LabelSelector
// matches everything.
type LabelSelector struct {
	MatchLabels      map[string]string
	MatchExpressions []Requirement
}

// Selector says which targets a layer applies to. Every part that is set
// must match; the zero Selector applies to every target.
type Selector struct {
	// Labels, when set, must match the target's labels.
	Labels *LabelSelector
	// Names, when not empty, are the only target names it applies to.
	Names []string
	// ExcludeNames are names it never applies to, whatever else matches.
	ExcludeNames []string
	// Dimensions maps a dimension to the values it applies to (any of
	// them); a target without the dimension does not match.
	Dimensions map[string][]string
}

// Check returns an error for a selector that can never be read the same
// way twice: an unknown operator, In or NotIn with no values, Exists or
// DoesNotExist with values, a dimension with no values.
func (s Selector) Check() error {
	if s.Labels != nil {
		for i, r := range s.Labels.MatchExpressions {
			switch r.Operator {
			case In, NotIn:
				if len(r.Values) == 0 {
					return fmt.Errorf("matchExpressions[%d]: %s %s needs values", i, r.Key, r.Operator)
				}
			case Exists, DoesNotExist:
				if len(r.Values) > 0 {
					return fmt.Errorf("matchExpressions[%d]: %s %s takes no values", i, r.Key, r.Operator)
				}
			default:
				return fmt.Errorf("matchExpressions[%d]: %q is no operator (In, NotIn, Exists, DoesNotExist)", i, r.Operator)
			}
		}
	}
	for d, vs := range s.Dimensions {
		if len(vs) == 0 {
			return fmt.Errorf("dimension %s: no values", d)
		}
	}
	return nil
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
		if why := s.Labels.why(t.Labels); why != "" {
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

// why returns why ls does not match labels, or "".
func (ls *LabelSelector) why(labels map[string]string) string {
	keys := make([]string, 0, len(ls.MatchLabels))
	for k := range ls.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := labels[k]; !ok || v != ls.MatchLabels[k] {
			return fmt.Sprintf("label %s=%s: %s", k, ls.MatchLabels[k], have(labels, k))
		}
	}
	for _, r := range ls.MatchExpressions {
		v, ok := labels[r.Key]
		switch r.Operator {
		case In:
			if !ok || !slices.Contains(r.Values, v) {
				return fmt.Sprintf("label %s in (%s): %s", r.Key, strings.Join(r.Values, ", "), have(labels, r.Key))
			}
		case NotIn:
			if ok && slices.Contains(r.Values, v) {
				return fmt.Sprintf("label %s notin (%s): %s", r.Key, strings.Join(r.Values, ", "), have(labels, r.Key))
			}
		case Exists:
			if !ok {
				return fmt.Sprintf("label %s exists: not set", r.Key)
			}
		case DoesNotExist:
			if ok {
				return fmt.Sprintf("label %s does not exist: %s", r.Key, have(labels, r.Key))
			}
		default:
			return fmt.Sprintf("label %s: %q is no operator", r.Key, r.Operator)
		}
	}
	return ""
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
	// Created orders layers of one class: older first.
	Created time.Time
	// Name orders layers of one class created at the same time, and
	// names the layer where its Source does not.
	Name string
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

// Select returns the layers that apply to t, in the order they apply
// (their class's rung, then creation time, then name), and those left
// out, each with why, in the same order. A layer whose class is not on
// the ladder, or whose selector is malformed, is an error naming it:
// nothing is left out silently.
func (l Ladder) Select(t Target, layers []*Layer) (applied []*Layer, ignored []Ignored, err error) {
	rung := make(map[string]int, len(l))
	for i, c := range l {
		rung[c] = i
	}
	sorted := slices.Clone(layers)
	var errs []string
	for _, x := range sorted {
		if _, ok := rung[x.Class]; !ok {
			errs = append(errs, fmt.Sprintf("%s: class %q is not on the ladder (%s)", x.Name, x.Class, strings.Join(l, " < ")))
		}
		if err := x.Selector.Check(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: selector: %v", x.Name, err))
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	slices.SortStableFunc(sorted, func(a, b *Layer) int {
		return cmp.Or(cmp.Compare(rung[a.Class], rung[b.Class]), a.Created.Compare(b.Created), strings.Compare(a.Name, b.Name))
	})
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
