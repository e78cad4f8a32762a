package namespaced

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/target"
)

// inputs are everything one namespace's snapshot is built from.
type inputs[T any] struct {
	cluster   *clusterState[T]
	selectors []*selectorLayer
	labels    map[string]string   // the namespace's, for selectors
	cms       []*corev1.ConfigMap // the namespace's own, in NamespaceConfigMaps order
	system    bool
	// parsed keeps namespace ConfigMaps parsed across builds, for modes
	// that keep no namespace (nil: none).
	parsed *parsedLayers
	// prior are the layers of the namespace's ConfigMaps the last build
	// of a caching mode made, reused for the very objects they were made
	// from (nil: none); the build records its own in next (nil: not
	// wanted).
	prior, next *ownLayers
}

// ownLayers are a namespace's ConfigMaps and the layers (or errors) made
// of them, in step. Never changed once a build made them.
type ownLayers struct {
	cms    []*corev1.ConfigMap
	layers []*merge.Layer
	errs   []error
}

// layer returns the layer made of cm, an object it holds (the same
// pointer: objects are never changed in place), under policy.
func (o *ownLayers) layer(cm *corev1.ConfigMap, policy merge.Policy) (*merge.Layer, error, bool) {
	if o == nil {
		return nil, nil, false
	}
	for i, have := range o.cms {
		if have != cm {
			continue
		}
		return underPolicy(o.layers[i], policy), o.errs[i], true
	}
	return nil, nil, false
}

// ignoredLayer is a layer left out as a whole, with why.
type ignoredLayer struct {
	cm     *corev1.ConfigMap
	origin string
	err    *LayerError
}

// build merges in into a snapshot: the cluster layer, the selector layers
// that match, the namespace's own ConfigMaps (when the gate is open and the
// namespace is not a system namespace), then the flags. A selector or
// namespace layer that does not convert, or with which the configuration
// does not decode or validate, is left out as a whole and returned among
// the ignored. A namespace with no layer of its own gets the cluster's
// base snapshot. build reads nothing but in and c, and changes nothing
// but in.next.
func (c *core[T]) build(in inputs[T]) (*Snapshot[T], []ignoredLayer, error) {
	var optional []*merge.Layer
	var ignored []ignoredLayer
	var ownerBuf [4]ignoredLayer
	owner := ownerBuf[:0] // of each optional layer
	var selected []*target.Layer
	for _, sl := range in.selectors {
		if !sl.applies(in.labels) {
			continue
		}
		if sl.err != nil {
			ignored = append(ignored, ignoredLayer{cm: sl.cm, origin: OriginSelector, err: sl.err})
			continue
		}
		l := *sl.t.Layer
		l.Policy = in.cluster.policy.selector
		optional = append(optional, &l)
		owner = append(owner, ignoredLayer{cm: sl.cm, origin: OriginSelector})
		selected = append(selected, sl.t)
	}
	if in.cluster.policy.open && !in.system {
		for _, cm := range in.cms {
			l, err, ok := in.prior.layer(cm, in.cluster.policy.tenant)
			if !ok {
				l, err = c.namespaceLayer(cm, in.cluster.policy.tenant, in.parsed)
			}
			if in.next != nil {
				in.next.cms, in.next.layers, in.next.errs = append(in.next.cms, cm), append(in.next.layers, l), append(in.next.errs, err)
			}
			if err != nil {
				ignored = append(ignored, ignoredLayer{cm: cm, origin: OriginNamespace, err: &LayerError{Source: configMapSource(cm, OriginNamespace), Err: err}})
				continue
			}
			optional = append(optional, l)
			owner = append(owner, ignoredLayer{cm: cm, origin: OriginNamespace})
		}
	}
	if len(optional) == 0 && len(ignored) == 0 {
		return in.cluster.base, nil, nil
	}
	kept, keptOwner := optional, owner
	s, err := c.decode(in.cluster, optional)
	if err != nil && len(optional) > 0 {
		kept, keptOwner, ignored = c.withoutInvalid(in.cluster, optional, owner, ignored)
		s, err = c.decode(in.cluster, kept)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(selected) > 1 {
		contested := target.Contests(selected, s.result)
		if len(contested) > 0 && c.o.Selectors.RefuseContests {
			// Every selector layer in a contest is left out here, as
			// invalid: which of them should win is the operator's to say.
			var rest []*merge.Layer
			var restOwner []ignoredLayer
			for i, l := range kept {
				if why := contestOf(contested, l.Source, s.display); why != "" {
					o := keptOwner[i]
					o.err = &LayerError{Source: l.Source, Err: errors.New(why)}
					ignored = append(ignored, o)
					continue
				}
				rest, restOwner = append(rest, l), append(restOwner, keptOwner[i])
			}
			if s, err = c.decode(in.cluster, rest); err != nil {
				// Leaving layers out can make what was valid beside them
				// invalid: find which, one at a time.
				rest, _, ignored = c.withoutInvalid(in.cluster, rest, restOwner, ignored)
				if s, err = c.decode(in.cluster, rest); err != nil {
					return nil, nil, err
				}
			}
		}
		s.contested = contested // still listed when refused: their layers are left out, and say why
	}
	for _, ig := range ignored {
		s.ignored = append(s.ignored, ig.err)
	}
	return s, ignored, nil
}

// withoutInvalid returns the layers of optional with which the
// configuration decodes, added one at a time, with their owners, and
// ignored with each layer left out added, as invalid.
func (c *core[T]) withoutInvalid(cluster *clusterState[T], optional []*merge.Layer, owner, ignored []ignoredLayer) ([]*merge.Layer, []ignoredLayer, []ignoredLayer) {
	var kept []*merge.Layer
	var keptOwner []ignoredLayer
	for i, l := range optional {
		if _, err := c.decode(cluster, append(slices.Clip(kept), l)); err != nil {
			o := owner[i]
			o.err = &LayerError{Source: l.Source, Err: err}
			ignored = append(ignored, o)
			continue
		}
		kept, keptOwner = append(kept, l), append(keptOwner, owner[i])
	}
	return kept, keptOwner, ignored
}

// contestOf says which contests of cs the layer src takes part in, as
// the error of a layer left out for them; "" when none. display names a
// key as its ConfigMap holds it.
func contestOf(cs []target.Contest, src merge.Source, display func(string) string) string {
	var parts []string
	for _, ct := range cs {
		if slices.ContainsFunc(append([]merge.Shadow{ct.Winner}, ct.Others...), func(x merge.Shadow) bool { return x.Source == src }) {
			parts = append(parts, describeContest(ct, display))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "contests " + strings.Join(parts, "; ") + " (contests are refused)"
}

// describeContest says what a contest is: the key, the values and which
// wins.
func describeContest(ct target.Contest, display func(string) string) string {
	losers := make([]string, 0, len(ct.Others))
	for _, o := range ct.Others {
		losers = append(losers, fmt.Sprintf("%s (%s)", o.Source, o.Value))
	}
	return fmt.Sprintf("key %q: %s (%s) wins by creation time, then name, over %s, as specific", display(ct.Key), ct.Winner.Source, ct.Winner.Value, strings.Join(losers, ", "))
}

// decode merges optional layers and the flags above the cluster layer and
// decodes the result.
func (c *core[T]) decode(cluster *clusterState[T], optional []*merge.Layer) (*Snapshot[T], error) {
	upper := c.upper(optional)
	obj, res, sh, err := cluster.stack.Build(upper)
	if err != nil {
		return nil, err
	}
	return newSnapshot(obj, res, sh, cluster.stack.Sources(), upper, c.display), nil
}

// contestNotes returns, for each selector ConfigMap of selectors that
// takes part in a contest in s, the note that says which keys, with whom,
// and who wins.
func contestNotes[T any](s *Snapshot[T], selectors []*selectorLayer) []refusal {
	if len(s.contested) == 0 {
		return nil
	}
	byName := map[string]*corev1.ConfigMap{}
	for _, sl := range selectors {
		byName[sl.cm.Namespace+"/"+sl.cm.Name] = sl.cm
	}
	notes := map[*corev1.ConfigMap][]string{}
	var order []*corev1.ConfigMap
	for _, ct := range s.contested {
		msg := describeContest(ct, s.display)
		for _, x := range append([]merge.Shadow{ct.Winner}, ct.Others...) {
			cm := byName[x.Source.Name]
			if cm == nil {
				continue
			}
			if _, ok := notes[cm]; !ok {
				order = append(order, cm)
			}
			notes[cm] = append(notes[cm], msg)
		}
	}
	out := make([]refusal, 0, len(order))
	for _, cm := range order {
		out = append(out, refusal{cm: cm, note: "Contested where these selectors meet: " + strings.Join(notes[cm], "; ")})
	}
	return out
}

// refusal is a ConfigMap some of whose keys a policy refused, and the note
// that says which and why.
type refusal struct {
	cm   *corev1.ConfigMap
	note string
}

// refusals returns, for each of the ConfigMaps whose keys s's policies
// refused (cms, the namespace's own, and the selector ConfigMaps), the
// keys in ConfigMap terms and the reasons, pointing first to doc
// (Options.TenantKeysDoc) when there is one.
func refusals[T any](s *Snapshot[T], selectors []*selectorLayer, cms []*corev1.ConfigMap, doc string) []refusal {
	if len(s.rejected) == 0 {
		return nil
	}
	byName := map[string]*corev1.ConfigMap{}
	for _, cm := range cms {
		byName[cm.Namespace+"/"+cm.Name] = cm
	}
	for _, sl := range selectors {
		byName[sl.cm.Namespace+"/"+sl.cm.Name] = sl.cm
	}
	notes := map[*corev1.ConfigMap][]string{}
	var order []*corev1.ConfigMap
	for _, d := range s.Rejected() {
		cm := byName[d.Source.Name]
		if cm == nil {
			continue
		}
		if _, ok := notes[cm]; !ok {
			order = append(order, cm)
		}
		msg := fmt.Sprintf("key %q: %s", d.Key, d.Why())
		if d.Field != "" {
			msg += " (field " + d.Field + " under it)"
		}
		notes[cm] = append(notes[cm], msg)
	}
	head := "Not applied: "
	if doc != "" {
		head = "Not applied (what tenants may set: " + doc + "): "
	}
	out := make([]refusal, 0, len(order))
	for _, cm := range order {
		out = append(out, refusal{cm: cm, note: head + strings.Join(notes[cm], "; ")})
	}
	return out
}
