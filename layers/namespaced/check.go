package namespaced

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/target"
)

// CheckConfigMap says whether cm may be written as it is: a cluster
// ConfigMap that makes the cluster configuration invalid, a selector
// ConfigMap that does not parse, and a namespace ConfigMap that would be
// ignored as a whole are each an error listing the problems; a namespace
// ConfigMap whose keys the tenant policy refuses is accepted, with one
// warning per refused key (so `kubectl apply` shows the tenant why), and
// so is one that namespace overrides are closed to. A ConfigMap that is no
// layer gets neither. It checks against the cluster configuration in
// effect, read through the resolver's cache (a Direct resolver reads it
// with its client); it changes nothing. When that cannot be read, cm is
// not checked: a warning says so, and no error. Package webhook serves it
// as an admission webhook. Before Start it returns ErrNotStarted.
func (r *Resolver[T]) CheckConfigMap(ctx context.Context, cm *corev1.ConfigMap) (warnings []string, err error) {
	return r.c.check(ctx, r.st.view, cm)
}

// check is CheckConfigMap against the cluster configuration view returns.
func (c *core[T]) check(ctx context.Context, view func(context.Context) (clusterView[T], error), cm *corev1.ConfigMap) (warnings []string, err error) {
	cluster, selector := c.isCluster(cm), c.isSelector(cm)
	switch {
	case cluster || selector:
	case !slices.Contains(c.ownCMs, cm.Name) || c.system(cm.Namespace):
		return nil, nil
	case !c.nsLabels.Matches(labels.Set(cm.Labels)):
		return []string{fmt.Sprintf("%s is named as a namespace layer but lacks the labels %s: it is not applied", configMapSource(cm, OriginNamespace), c.nsLabels)}, nil
	}
	v, err := view(ctx)
	if err != nil {
		return unread(cm, err)
	}
	switch {
	case cluster:
		// With the other cluster ConfigMaps as stored, then, when they
		// are refused, as they were last valid: a write that fixes what
		// is stored, or that is valid beside what was, is admitted.
		bases := []map[string]*corev1.ConfigMap{v.cl.cms}
		if v.invalid != nil {
			bases = []map[string]*corev1.ConfigMap{v.stored, v.cl.cms}
		}
		var first error
		for i, base := range bases {
			next := maps.Clone(base)
			if next == nil {
				next = map[string]*corev1.ConfigMap{}
			}
			next[cm.Name] = cm
			_, err := c.parseCluster(next)
			switch {
			case err == nil && i == len(bases)-1 && v.invalid != nil:
				return storedInvalid(v.invalid), nil
			case err == nil:
				return nil, nil
			case first == nil:
				first = err
			}
		}
		return nil, first
	case selector:
		sl := c.readSelectors([]*corev1.ConfigMap{cm})[0]
		if sl.err != nil {
			return nil, sl.err
		}
		// With the configuration: the keys convert, the parsers take
		// them and the whole validates, or the layer would be ignored
		// wherever it applies.
		l := *sl.t.Layer
		l.Policy = v.cl.policy.selector
		if _, err := c.decode(v.cl, []*merge.Layer{&l}); err != nil {
			return nil, &LayerError{Source: l.Source, Err: err}
		}
		others, err := v.selectors(ctx)
		if err != nil {
			return unread(cm, err)
		}
		contests := c.contestsWith(sl, others, v.cl.policy.selector)
		if len(contests) > 0 && c.o.Selectors.RefuseContests {
			return nil, &LayerError{Source: l.Source, Err: fmt.Errorf("%s (contests are refused: give one selector more terms, or make them agree)", strings.Join(contests, "; "))}
		}
		return append(storedInvalid(v.invalid), contests...), nil
	}
	cl := v.cl
	warnings = storedInvalid(v.invalid)
	src := configMapSource(cm, OriginNamespace)
	if !cl.policy.open {
		warnings = append(warnings, fmt.Sprintf("%s: namespace overrides are closed by the operator: it is not applied until they open", src))
		// Checked all the same, as if they were open.
	}
	open := *cl.policy
	open.open = true
	in := inputs[T]{cluster: &clusterState[T]{cms: cl.cms, layers: cl.layers, policy: &open, stack: cl.stack, base: cl.base}, cms: []*corev1.ConfigMap{cm}}
	s, ignored, err := c.build(in)
	if err != nil {
		return nil, err
	}
	for _, ig := range ignored {
		if ig.cm == cm {
			return nil, ig.err
		}
	}
	for _, d := range s.Rejected() {
		if d.Source.Name != src.Name {
			continue
		}
		w := fmt.Sprintf("%s: key %q not applied: %s", src, d.Key, d.Why())
		if d.Field != "" {
			w += " (field " + d.Field + " under it)"
		}
		if c.o.TenantKeysDoc != "" {
			w += "; what tenants may set: " + c.o.TenantKeysDoc
		}
		warnings = append(warnings, w)
	}
	return warnings, nil
}

// contestsWith returns the contests sl, a selector ConfigMap about to be
// written, would make with others, the selector layers in effect: with
// each of as many terms whose selector some namespace could match beside
// sl's, the keys both set (as their policy admits them) to values that
// differ, and which would win. policy is the selector layers' policy.
func (c *core[T]) contestsWith(sl *selectorLayer, others []*selectorLayer, policy merge.Policy) []string {
	mine := *sl.t
	if mine.Created.IsZero() {
		mine.Created = time.Now() // written now, a new ConfigMap is the newest
	}
	var out []string
	for _, o := range others {
		if o.err != nil || o.cm.Name == sl.cm.Name || o.t.Rank != sl.t.Rank || !mayMeet(o.t.Selector.Labels, sl.t.Selector.Labels) {
			continue
		}
		theirs := *o.t
		pair, _ := selectorLadder.Sort([]*target.Layer{&mine, &theirs})
		layers := make([]*merge.Layer, len(pair))
		for i, x := range pair {
			l := *x.Layer
			l.Policy = policy
			layers[i] = &l
		}
		for _, ct := range target.Contests(pair, merge.Merge(layers...)) {
			out = append(out, fmt.Sprintf("with selector ConfigMap %s/%s (%s), as specific: %s", o.cm.Namespace, o.cm.Name, o.t.Selector.Labels, describeContest(ct, c.display)))
		}
	}
	return out
}

// mayMeet reports whether some set of labels could match both a and b:
// false only when their requirements on one key cannot hold together (a
// value both require differently, one requires a key the other forbids).
// Gt and Lt are taken to meet.
func mayMeet(a, b labels.Selector) bool {
	ra, _ := a.Requirements()
	rb, _ := b.Requirements()
	type need struct {
		allowed  map[string]bool // nil: any value
		excluded map[string]bool
		exists   bool
		absent   bool
	}
	byKey := map[string]*need{}
	for _, r := range append(ra, rb...) {
		n := byKey[r.Key()]
		if n == nil {
			n = &need{excluded: map[string]bool{}}
			byKey[r.Key()] = n
		}
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			n.exists = true
			vals := r.Values()
			if n.allowed == nil {
				n.allowed = map[string]bool{}
				for v := range vals {
					n.allowed[v] = true
				}
				continue
			}
			for v := range n.allowed {
				if !vals.Has(v) {
					delete(n.allowed, v)
				}
			}
		case selection.NotEquals, selection.NotIn:
			for v := range r.Values() {
				n.excluded[v] = true
			}
		case selection.Exists:
			n.exists = true
		case selection.DoesNotExist:
			n.absent = true
		}
	}
	for _, n := range byKey {
		if n.exists && n.absent {
			return false
		}
		if n.allowed != nil {
			left := 0
			for v := range n.allowed {
				if !n.excluded[v] {
					left++
				}
			}
			if left == 0 {
				return false
			}
		}
	}
	return true
}

// unread is a check's answer when what cm is judged against cannot be
// read (a Direct resolver's client failed): a warning, so that an
// operator can write the cluster ConfigMap all the same; before Start,
// ErrNotStarted.
func unread(cm *corev1.ConfigMap, err error) ([]string, error) {
	if errors.Is(err, ErrNotStarted) {
		return nil, err
	}
	return []string{fmt.Sprintf("%s/%s not checked: reading the configuration it is judged against failed: %s", cm.Namespace, cm.Name, text.Cut(err.Error(), text.MaxMessage))}, nil
}

// storedInvalid is the warning of a ConfigMap judged against the last
// valid cluster configuration, or the defaults, because the cluster
// ConfigMaps as stored are invalid: never a denial, so that no stored
// mistake refuses every write, its fix included.
func storedInvalid(invalid error) []string {
	if invalid == nil {
		return nil
	}
	return []string{"judged against the last valid cluster configuration (or the defaults): the cluster ConfigMaps as stored are refused: " + text.Cut(invalid.Error(), text.MaxMessage)}
}
