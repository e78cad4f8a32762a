package greenhouse

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/target"
)

// optionValues is where a layer's values are in the merge: a list keyed
// by option name, so that each option wins or loses whole, its value or
// its reference, never both and never neither.
const optionValues = "/optionValues"

var lists = merge.Lists{optionValues: "name"}

// Ladder is the order of the layers of a Plugin's values, lowest first:
// the definition's defaults, the preset's values (or a standalone
// Plugin's own), the preset's override for the Plugin's cluster, then
// PluginOverrides in ADR 007's order: no selector, cluster selector only,
// plugin definition only, both. Ties go by creation time, then name.
var Ladder = target.Ladder{"defaults", "values", "cluster-override", "override", "override-by-cluster", "override-by-definition", "override-by-both"}

// dimension is the target dimension PluginOverrides select plugin
// definitions by.
const dimension = "pluginDefinition"

// Result is the effective option values of a Plugin and how they came
// about: the JSON `plugins template` prints.
type Result struct {
	Plugin           string                 `json:"plugin"`
	OptionValues     []OptionValue          `json:"optionValues"`
	Provenance       map[string]ValueSource `json:"provenance"`
	AppliedOverrides []string               `json:"appliedOverrides"`
	Ignored          []IgnoredLayer         `json:"ignored"`
	// Unchecked are, admitting a write, what the computation left as the
	// Plugin's writer gave it, for Greenhouse to judge, rather than let it
	// turn the overrides off: a value strata refuses and Greenhouse may
	// take (a secret option's literal), a value an override's path cannot
	// go into, a cluster that does not exist.
	Unchecked []string `json:"unchecked,omitempty"`

	// writer is, admitting a write, the source of the writer's values
	// ("" otherwise); kept are the options whose value the writer gave and
	// the computation left out as unchecked, each set as written.
	writer string
	kept   map[string]bool
}

// ValueSource is where one option's value came from: the layer that gave
// it whole ("" when none did), the PluginOverrides that set a value inside
// it, and the layers whose value lost.
type ValueSource struct {
	Source string `json:"source"`
	// From says how the layer's value was made, when it was not written
	// out: `expression EXPR` (a preset's expression, evaluated for the
	// Plugin's cluster) or `ref KIND NAMESPACE/NAME[, ...]: EXPR` (a
	// preset's valueFrom.ref, evaluated over the objects named).
	From     string       `json:"from,omitempty"`
	Paths    []PathSource `json:"paths,omitempty"`
	Shadowed []string     `json:"shadowed"`
	// Contested are the values layers as specific as the winner's (one
	// rung of the ladder, ordered only by creation time and name) gave
	// and lost: a disagreement to resolve, not a choice strata should
	// make silently. A Secret's value is shown by its reference.
	Contested []Contender `json:"contested,omitempty"`
}

// Contender is a value that lost a contest, and the layer that gave it.
type Contender struct {
	Source    string           `json:"source"`
	Value     *json.RawMessage `json:"value,omitempty"`
	ValueFrom *ValueFrom       `json:"valueFrom,omitempty"`
}

// PathSource is a value set inside an option's value, and by whom.
type PathSource struct {
	Path   string `json:"path"`
	Source string `json:"source"`
}

// IgnoredLayer is a layer that does not apply to the Plugin, and why.
type IgnoredLayer struct {
	Source string `json:"source"`
	Reason string `json:"reason"`
}

// Effective computes the option values of the Plugin namespace/name from
// objs. Secrets are never read: a value from a Secret stays a reference.
// An error names the object and the field: a missing object, an option
// given twice in one list, a preset with two overrides for one cluster,
// an option the definition does not have, a value of the wrong type, a
// required option no layer sets.
//
// A preset's expressions are evaluated and its valueFrom.ref resolved as
// s says Greenhouse does.
func Effective(objs Objects, namespace, name string, s Settings) (*Result, error) {
	p, err := objs.Plugin(namespace, name)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, fmt.Errorf("Plugin %s/%s: not found", namespace, name)
	}
	return compute(objs, p, false, newResolving(s))
}

// resolving is what a computation carries into the ones a valueFrom.ref
// starts: the settings, and the objects whose values are being resolved,
// outermost first, so that a reference back to one of them is a cycle.
type resolving struct {
	settings Settings
	stack    []string
	// entered counts the objects resolved, which maxResolved bounds: a
	// tenant's presets that each refer to all the others by a selector
	// would otherwise make a computation take factorial time.
	entered int
	// cost is what is left of maxCost for the computation's expressions,
	// those of every object it resolves and every reference's together:
	// maxCost bounds them all, not each alone.
	cost uint64
}

// newResolving returns what a computation with settings s starts with.
func newResolving(s Settings) *resolving { return &resolving{settings: s, cost: maxCost} }

// maxResolved bounds the objects one computation resolves.
const maxResolved = 1000

// enter adds the object id to the objects being resolved, and returns how
// to leave it, or the cycle it would close, named object by object.
func (r *resolving) enter(id string) (func(), error) {
	if i := slices.Index(r.stack, id); i >= 0 {
		return nil, fmt.Errorf("valueFrom.ref makes a cycle: %s → %s", strings.Join(r.stack[i:], " → "), id)
	}
	if r.entered++; r.entered > maxResolved {
		return nil, fmt.Errorf("valueFrom.ref: more than %d objects resolved for one Plugin: the references reach too far", maxResolved)
	}
	r.stack = append(r.stack, id)
	return func() { r.stack = r.stack[:len(r.stack)-1] }, nil
}

// compute is Effective of p. asWritten takes p's values as written (less
// what the webhook wrote over them) for its values layer whether or not a
// preset made it, and passes by the values of options its definition does
// not have.
func compute(objs Objects, p *Plugin, asWritten bool, r *resolving) (*Result, error) {
	namespace, name := p.Namespace, p.Name
	def, err := objs.Definition(namespace, p.Spec.PluginDefinitionRef)
	if err != nil {
		return nil, err
	}
	if def == nil {
		return nil, fmt.Errorf("Plugin %s/%s: spec.pluginDefinitionRef: %s not found", namespace, name, refString(namespace, p.Spec.PluginDefinitionRef))
	}
	var cluster *Cluster
	if p.Spec.ClusterName != "" {
		if cluster, err = objs.Cluster(namespace, p.Spec.ClusterName); err != nil {
			return nil, err
		}
		if cluster == nil && !asWritten {
			return nil, fmt.Errorf("Plugin %s/%s: spec.clusterName: Cluster %s/%s not found", namespace, name, namespace, p.Spec.ClusterName)
		}
	}
	tgt := target.Target{Name: p.Spec.ClusterName, Dimensions: map[string]string{dimension: def.Name}}
	if cluster != nil {
		tgt.Labels = cluster.Labels
	}

	leave, err := r.enter(KindPlugin + " " + objectName(p.ObjectMeta))
	if err != nil {
		return nil, err
	}
	defer leave()
	b := &builder{def: def, objs: objs, namespace: namespace, cluster: cluster, r: r, admitting: asWritten}
	if p.Spec.ClusterName != "" && cluster == nil {
		// Greenhouse checks that a Plugin's cluster exists only for a
		// definition with a Helm chart: admitting a write, the overrides
		// still apply, those that select clusters by label to none.
		b.unchecked = append(b.unchecked, fmt.Sprintf("spec.clusterName: Cluster %s/%s not found: no PluginOverride selects it by its labels", namespace, p.Spec.ClusterName))
	}
	b.defaults()
	var preset *PluginPreset
	if asWritten {
		b.written(p)
	} else if presetName := p.Labels[LabelPluginPreset]; presetName != "" {
		if preset, err = objs.PluginPreset(namespace, presetName); err != nil {
			return nil, err
		}
		if preset == nil {
			return nil, fmt.Errorf("Plugin %s/%s: label %s: PluginPreset %s/%s not found", namespace, name, LabelPluginPreset, namespace, presetName)
		}
		b.preset(preset)
	} else {
		b.own(p)
	}
	overrides, err := objs.PluginOverrides(namespace)
	if err != nil {
		return nil, err
	}
	// By name, so that what is ignored and every error come in one order
	// whichever order the objects were listed in (a lister's is a map's).
	overrides = slices.SortedFunc(slices.Values(overrides), func(a, b *PluginOverride) int { return strings.Compare(a.Name, b.Name) })
	for _, o := range overrides {
		b.override(o)
	}
	if err := errors.Join(b.errs...); err != nil {
		return nil, err
	}

	applied, ignored, err := Ladder.Select(tgt, b.layers)
	if err != nil {
		return nil, err
	}
	res := &Result{Plugin: namespace + "/" + name, Provenance: map[string]ValueSource{}, AppliedOverrides: []string{}, Ignored: []IgnoredLayer{}}
	for _, l := range applied {
		if strings.HasPrefix(l.Class, "override") {
			res.AppliedOverrides = append(res.AppliedOverrides, l.Name)
		}
	}
	res.Ignored = append(res.Ignored, b.ignored...)
	res.Unchecked = b.unchecked
	if asWritten {
		res.writer, res.kept = b.writerSource, b.kept
	}
	for _, ig := range ignored {
		res.Ignored = append(res.Ignored, IgnoredLayer{Source: ig.Layer.Name, Reason: ig.Reason})
	}
	merged := merge.Merge(target.Layers(applied)...)
	var patches []patch
	for rank, l := range applied {
		for _, pv := range b.paths[l] {
			patches = append(patches, patch{PathValue: pv, rank: rank, source: l.Layer.Source.String() + " " + pv.At, class: l.Class})
		}
	}
	if err := res.collect(merged, def, applied, patches, b.from); err != nil {
		return nil, fmt.Errorf("Plugin %s/%s: %w", namespace, name, err)
	}
	if err := res.contests(merged, applied, r.settings); err != nil {
		return nil, fmt.Errorf("Plugin %s/%s: %w", namespace, name, err)
	}
	return res, nil
}

// builder makes the layers of one Plugin, gathering every error.
type builder struct {
	def       *PluginDefinition
	objs      Objects
	namespace string
	layers    []*target.Layer
	ignored   []IgnoredLayer
	unchecked []string // Result.Unchecked
	// writerSource is the source of the writer's values, and kept the
	// options whose value written left out as unchecked (Result.kept).
	writerSource string
	kept         map[string]bool
	// admitting says the layers are those of a write being admitted.
	admitting bool
	errs      []error
	// paths are the values PluginOverrides set inside options' values,
	// by the layer of their override.
	paths map[*target.Layer][]PathValue
	// cluster is the Plugin's (nil: none), which a preset's expressions
	// read; r carries what a valueFrom.ref resolves.
	cluster *Cluster
	r       *resolving
	// from says, by layer source and option, how a preset's value was
	// made (ValueSource.From).
	from map[string]map[string]string
}

func (b *builder) add(source merge.Source, class, name string, sel target.Selector, created metav1.Time, field string, values []OptionValue) {
	l, err := Layer(source, values, b.def, field, b.namespace)
	if err != nil {
		b.errs = append(b.errs, Prefix(source.String(), err))
		return
	}
	b.layers = append(b.layers, &target.Layer{Layer: l, Selector: sel, Class: class, Name: name, Created: created.Time})
}

// defaults is the definition's defaults, a layer of its own.
func (b *builder) defaults() {
	var vals []OptionValue
	for _, o := range b.def.Spec.Options {
		if o.Default != nil && string(*o.Default) != "null" {
			vals = append(vals, OptionValue{Name: o.Name, Value: o.Default})
		}
	}
	src := merge.Source{Origin: b.def.Kind, Name: objectName(b.def.ObjectMeta) + " (default)"}
	b.add(src, "defaults", src.String(), target.Selector{}, b.def.CreationTimestamp, "spec.options[].default", vals)
}

// preset is the preset's values, and its overrides by cluster: the one
// for a cluster its selector does not select is left out, and says why.
func (b *builder) preset(pp *PluginPreset) {
	name := objectName(pp.ObjectMeta)
	src := merge.Source{Origin: KindPluginPreset, Name: name}
	leave, err := b.r.enter(KindPluginPreset + " " + name)
	if err != nil {
		b.errs = append(b.errs, err)
		return
	}
	defer leave()
	sel, selErr := metav1.LabelSelectorAsSelector(&pp.Spec.ClusterSelector)
	if selErr != nil {
		b.errs = append(b.errs, fmt.Errorf("PluginPreset %s: spec.clusterSelector: %w", name, selErr))
		return
	}
	// Greenhouse applies the override for the Plugin's cluster before it
	// evaluates anything: what that override replaces is not evaluated.
	var replaced map[string]bool
	for _, o := range pp.Spec.ClusterOptionOverrides {
		if b.cluster != nil && o.ClusterName == b.cluster.Name && sel.Matches(labels.Set(b.cluster.Labels)) {
			replaced = map[string]bool{}
			for _, v := range o.Overrides {
				replaced[v.Name] = true
			}
		}
	}
	if values, ok := b.presetValues(pp, src, pp.Spec.Plugin.OptionValues, "spec.plugin.optionValues", replaced); ok {
		b.add(src, "values", src.String(), target.Selector{}, pp.CreationTimestamp, "spec.plugin.optionValues", values)
	}
	seen := map[string]int{}
	for i, o := range pp.Spec.ClusterOptionOverrides {
		field := fmt.Sprintf("spec.clusterOptionOverrides[%d]", i)
		if j, dup := seen[o.ClusterName]; dup {
			b.errs = append(b.errs, fmt.Errorf("PluginPreset %s: %s and spec.clusterOptionOverrides[%d] both override cluster %s: give a cluster one entry", name, field, j, o.ClusterName))
			continue
		}
		seen[o.ClusterName] = i
		osrc := merge.Source{Origin: KindPluginPreset, Name: name + " " + field + " (cluster " + o.ClusterName + ")"}
		c, err := b.objs.Cluster(b.namespace, o.ClusterName)
		switch {
		case err != nil:
			b.errs = append(b.errs, err)
			continue
		case c == nil:
			b.ignored = append(b.ignored, IgnoredLayer{Source: osrc.String(), Reason: fmt.Sprintf("Cluster %s/%s does not exist", b.namespace, o.ClusterName)})
			continue
		case !sel.Matches(labels.Set(c.Labels)):
			b.ignored = append(b.ignored, IgnoredLayer{Source: osrc.String(), Reason: fmt.Sprintf("cluster %s is not selected by the PluginPreset's clusterSelector (%s): this override never applies", o.ClusterName, sel)})
			continue
		}
		if values, ok := b.presetValues(pp, osrc, o.Overrides, field+".overrides", nil); ok {
			b.add(osrc, "cluster-override", osrc.String(), target.Selector{Names: []string{o.ClusterName}}, pp.CreationTimestamp, field+".overrides", values)
		}
	}
}

// own is a standalone Plugin's own values: what its spec holds, but for
// the values the webhook wrote over them, which its annotation records,
// and Greenhouse's own global.greenhouse.* values, which its webhook
// stores in every Plugin and no definition declares.
func (b *builder) own(p *Plugin) {
	src := merge.Source{Origin: KindPlugin, Name: objectName(p.ObjectMeta)}
	values := slices.DeleteFunc(Base(p), func(v OptionValue) bool {
		return strings.HasPrefix(v.Name, greenhousePrefix) && b.def.Option(v.Name) == nil
	})
	b.add(src, "values", src.String(), target.Selector{}, p.CreationTimestamp, "spec.optionValues", values)
}

// greenhousePrefix begins the names of the values Greenhouse itself
// stores in a Plugin.
const greenhousePrefix = "global.greenhouse."

// written is a Plugin's values as its writer gave them (Base), those of
// options its definition has: Greenhouse writes others (its
// global.greenhouse.* values) and keeps them whatever the overrides say.
func (b *builder) written(p *Plugin) {
	src := merge.Source{Origin: KindPlugin, Name: objectName(p.ObjectMeta)}
	var known []OptionValue
	for i, v := range Base(p) {
		if b.def.Option(v.Name) == nil {
			continue
		}
		// A value strata refuses and Greenhouse may take (a secret
		// option's literal) is left out, not the Plugin: the overrides
		// still apply, and Admit keeps the value as written, for
		// Greenhouse to judge. A writer cannot turn the overrides off.
		if _, err := layer(src, []OptionValue{v}, []int{i}, b.def, "spec.optionValues", b.namespace); err != nil {
			b.unchecked = append(b.unchecked, Prefix(src.String(), err).Error())
			if b.kept == nil {
				b.kept = map[string]bool{}
			}
			b.kept[v.Name] = true
			continue
		}
		known = append(known, v)
	}
	b.writerSource = src.String()
	b.add(src, "values", src.String(), target.Selector{}, p.CreationTimestamp, "spec.optionValues", known)
}

// override is a PluginOverride, in the class its selector's shape gives.
func (b *builder) override(o *PluginOverride) {
	name := objectName(o.ObjectMeta)
	src := merge.Source{Origin: KindPluginOverride, Name: name}
	cs := o.Spec.ClusterSelector
	sel := target.Selector{Names: cs.ClusterNames, ExcludeNames: cs.IgnoreClusters}
	if cs.LabelSelector != nil {
		ls, err := metav1.LabelSelectorAsSelector(cs.LabelSelector)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s: spec.clusterSelector.labelSelector: %w", src, err))
			return
		}
		sel.Labels = ls
	}
	byCluster := cs.LabelSelector != nil || len(cs.ClusterNames) > 0 || len(cs.IgnoreClusters) > 0
	byDefinition := len(o.Spec.PluginDefinitionNames) > 0
	if byDefinition {
		sel.Dimensions = map[string][]string{dimension: o.Spec.PluginDefinitionNames}
		if !slices.Contains(o.Spec.PluginDefinitionNames, b.def.Name) {
			// Not this definition's: its options are not checked
			// against this definition.
			b.layers = append(b.layers, &target.Layer{Layer: &merge.Layer{Source: src}, Selector: sel, Class: overrideClass(byCluster, byDefinition), Name: src.String(), Created: o.CreationTimestamp.Time})
			return
		}
	}
	values := o.Spec.Overrides
	var pos []int // of values in spec.overrides, when some are left out
	if !byDefinition || b.admitting {
		values = nil
		for i, v := range o.Spec.Overrides {
			at := fmt.Sprintf("%s spec.overrides[%d] (%s)", src, i, v.Name)
			// One for every plugin applies to the options this
			// definition has: the others are left out, and said so.
			if !byDefinition && b.def.Option(v.Name) == nil {
				b.ignored = append(b.ignored, IgnoredLayer{Source: at,
					Reason: fmt.Sprintf("%s %s has no option %q", b.def.Kind, objectName(b.def.ObjectMeta), v.Name)})
				continue
			}
			// Admitting a write, a value this definition does not take
			// is left out too (the writer chose the definition): the
			// override's other values, and the other overrides, still
			// apply. Computed otherwise, it is an error, for the
			// operator to hear of.
			if b.admitting {
				if err := OverrideValueFits(v, i, b.def, "spec.overrides", b.namespace); err != nil {
					b.ignored = append(b.ignored, IgnoredLayer{Source: at, Reason: fmt.Sprintf("%s %s: %v", b.def.Kind, objectName(b.def.ObjectMeta), err)})
					b.unchecked = append(b.unchecked, fmt.Sprintf("%s: %v, for %s %s: not applied", src, err, b.def.Kind, objectName(b.def.ObjectMeta)))
					continue
				}
			}
			values, pos = append(values, v), append(pos, i)
		}
		if len(values) == 0 && len(o.Spec.Overrides) > 0 {
			return // every value left out: it applies nothing to this Plugin
		}
	}
	l, paths, err := overrideLayer(src, values, pos, b.def, "spec.overrides", b.namespace)
	if err != nil {
		b.errs = append(b.errs, Prefix(src.String(), err))
		return
	}
	tl := &target.Layer{Layer: l, Selector: sel, Class: overrideClass(byCluster, byDefinition), Name: src.String(), Created: o.CreationTimestamp.Time}
	b.layers = append(b.layers, tl)
	if len(paths) > 0 {
		if b.paths == nil {
			b.paths = map[*target.Layer][]PathValue{}
		}
		b.paths[tl] = paths
	}
}

// PathValue is a value a PluginOverride sets inside an option's value.
type PathValue struct {
	Option string
	// Path is the JSON pointer into the option's value, as written, and
	// segments it read.
	Path     string
	segments []string
	// Value is the JSON value set there.
	Value json.RawMessage
	// At names the override's field: "spec.overrides[2] (resources)".
	At string
}

// OverrideLayer returns a PluginOverride's values: those that give a whole
// option's value as the layer of source (Layer), and those that set a
// value inside one. An option given whole twice, or whole and inside, two
// paths of which one holds the other, a path into an option that is not a
// map, a path that is no JSON pointer, and a path with valueFrom (a
// Secret gives a whole value) are errors naming field and positions, as
// well as Layer's.
func OverrideLayer(source merge.Source, values []OverrideValue, def *PluginDefinition, field, namespace string) (*merge.Layer, []PathValue, error) {
	return overrideLayer(source, values, nil, def, field, namespace)
}

// OverrideValueFits reports, as OverrideLayer would, whether v, at
// position at of field, is a value def takes.
func OverrideValueFits(v OverrideValue, at int, def *PluginDefinition, field, namespace string) error {
	_, _, err := overrideLayer(merge.Source{}, []OverrideValue{v}, []int{at}, def, field, namespace)
	return err
}

// overrideLayer is OverrideLayer, in[i] the position of values[i] in
// field (i when in is nil).
func overrideLayer(source merge.Source, values []OverrideValue, in []int, def *PluginDefinition, field, namespace string) (*merge.Layer, []PathValue, error) {
	var errs []error
	var whole []OptionValue
	var pos []int
	var paths []PathValue
	for i, v := range values {
		at := fmt.Sprintf("%s[%d] (%s)", field, position(in, i), v.Name)
		for j, w := range values[:i] {
			if w.Name == v.Name && (v.Path == "" || w.Path == "" || within(v.Path, w.Path) || within(w.Path, v.Path)) {
				errs = append(errs, fmt.Errorf("%s[%d] and %s[%d] both set option %q%s", field, position(in, j), field, position(in, i), v.Name, overlap(w.Path, v.Path)))
				break
			}
		}
		if v.Path == "" {
			whole, pos = append(whole, v.OptionValue), append(pos, position(in, i))
			continue
		}
		segs, ok := merge.Segments(v.Path)
		var o *PluginOption
		if def != nil {
			o = def.Option(v.Name)
		}
		switch {
		case !ok || len(segs) == 0 || slices.Contains(segs, ""):
			errs = append(errs, fmt.Errorf("%s: path %q is no JSON pointer into the value (\"/limits/cpu\")", at, v.Path))
		case def != nil && o == nil:
			errs = append(errs, fmt.Errorf("%s: %s has no option %q", at, objectName(def.ObjectMeta), v.Name))
		case o != nil && o.Type != TypeMap:
			errs = append(errs, fmt.Errorf("%s: path %s: option %q is of type %s, and only a map's value has paths", at, v.Path, v.Name, o.Type))
		case v.ValueFrom != nil:
			errs = append(errs, fmt.Errorf("%s: path %s with valueFrom: a Secret gives an option's whole value, never a part of it", at, v.Path))
		case v.Value == nil:
			errs = append(errs, fmt.Errorf("%s: path %s: no value: give the value to set there", at, v.Path))
		default:
			paths = append(paths, PathValue{Option: v.Name, Path: v.Path, segments: segs, Value: *v.Value, At: at})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	l, err := layer(source, whole, pos, def, field, namespace)
	return l, paths, err
}

// position is the position of the i-th of some values in their field:
// pos[i], or i when pos is nil (none was left out).
func position(pos []int, i int) int {
	if pos != nil {
		return pos[i]
	}
	return i
}

// within reports whether JSON pointer p is q or lies under it.
func within(p, q string) bool { return p == q || merge.IsAncestor(q, p) }

// overlap says how two values of one option meet, for an error.
func overlap(a, b string) string {
	switch {
	case a == "" && b == "":
		return ""
	case a == "" || b == "":
		return ", whole and at a path"
	}
	return fmt.Sprintf(" at paths %s and %s, one within the other", a, b)
}

func overrideClass(byCluster, byDefinition bool) string {
	switch {
	case byCluster && byDefinition:
		return "override-by-both"
	case byDefinition:
		return "override-by-definition"
	case byCluster:
		return "override-by-cluster"
	}
	return "override"
}

// Layer returns values as the layer of source: an element per option
// under optionValues, a value from a Secret held as a reference, which
// only these elements may hold (merge.Layer.Refs): a literal value of a
// reference's shape stays a literal. An option given twice, one the
// definition does not have, one with both or neither of value and
// valueFrom, a literal not of its option's type, or a secret option
// given as a literal is an error naming field and positions. def nil
// checks no names and no types. A reference is to a Secret of namespace.
func Layer(source merge.Source, values []OptionValue, def *PluginDefinition, field, namespace string) (*merge.Layer, error) {
	if err := Duplicates(values, field); err != nil {
		return nil, err
	}
	return layer(source, values, nil, def, field, namespace)
}

// layer is Layer of values that give no option twice, pos[i] the position
// of values[i] in field (i when pos is nil).
func layer(source merge.Source, values []OptionValue, pos []int, def *PluginDefinition, field, namespace string) (*merge.Layer, error) {
	var errs []error
	elems := make([]json.RawMessage, 0, len(values))
	var refs map[string]bool
	for i, v := range values {
		at := fmt.Sprintf("%s[%d] (%s)", field, position(pos, i), v.Name)
		var o *PluginOption
		if def != nil {
			if o = def.Option(v.Name); o == nil {
				errs = append(errs, fmt.Errorf("%s: %s has no option %q", at, objectName(def.ObjectMeta), v.Name))
				continue
			}
		}
		e, ref, err := element(v, o, at, namespace)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		elems = append(elems, e)
		if ref {
			if refs == nil {
				refs = map[string]bool{}
			}
			refs[merge.Child(optionValues, v.Name)] = true
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	doc, _ := json.Marshal(map[string]any{"optionValues": elems})
	vals, err := lists.Flatten(doc)
	if err != nil {
		return nil, err
	}
	return &merge.Layer{Source: source, Values: vals, Refs: refs, Lists: lists}, nil
}

// element is an option value as the merge holds it: {"name", "value"},
// the value a literal of o's type (any, with o nil) or a merge.Ref, and
// whether it is the reference.
func element(v OptionValue, o *PluginOption, at, namespace string) (json.RawMessage, bool, error) {
	hasValue := v.Value != nil && string(*v.Value) != "null"
	hasRef := v.ValueFrom != nil && v.ValueFrom.Secret != nil
	var value json.RawMessage
	switch {
	case hasValue && hasRef:
		return nil, false, fmt.Errorf("%s: both value and valueFrom: give one", at)
	case hasRef:
		s := v.ValueFrom.Secret
		if s.Name == "" || s.Key == "" {
			return nil, false, fmt.Errorf("%s: valueFrom.secret needs name and key", at)
		}
		if errs := validation.IsDNS1123Subdomain(s.Name); len(errs) > 0 {
			return nil, false, fmt.Errorf("%s: valueFrom.secret.name %q is not the name of a Secret of the Plugin's namespace: %s", at, s.Name, strings.Join(errs, "; "))
		}
		value = json.RawMessage(merge.Ref{Kind: "secret", Namespace: namespace, Name: s.Name, Key: s.Key}.JSON())
	case hasValue:
		if o != nil {
			if err := checkType(o, *v.Value); err != nil {
				return nil, false, fmt.Errorf("%s: value %w", at, err)
			}
		}
		value = *v.Value
	default:
		return nil, false, fmt.Errorf("%s: neither value nor valueFrom: give one", at)
	}
	e, err := json.Marshal(map[string]any{"name": v.Name, "value": value})
	return e, hasRef, err
}

// Duplicates returns an error naming the positions of an option given
// twice in values, at field.
func Duplicates[T interface{ optionName() string }](values []T, field string) error {
	at := map[string]int{}
	var errs []error
	n := 0
	for i, v := range values {
		name := v.optionName()
		if j, dup := at[name]; dup {
			if n++; n <= text.MaxListed { // a writer's list may hold thousands
				errs = append(errs, fmt.Errorf("%s[%d] and %s[%d] both set option %s", field, j, field, i, text.Quote(name)))
			}
			continue
		}
		at[name] = i
	}
	if n > text.MaxListed {
		errs = append(errs, fmt.Errorf("… and %d more values of %s give an option set before", n-text.MaxListed, field))
	}
	return errors.Join(errs...)
}

func (v OptionValue) optionName() string                   { return v.Name }
func (v PluginPresetPluginOptionValue) optionName() string { return v.Name }

// CheckPresetValues checks a preset's values at field as far as they
// can be checked without a cluster: no option twice, each entry one of
// value, valueFrom.secret, valueFrom.ref and expression, and each literal
// and Secret reference as Layer checks it against def (nil: no names and
// no types). Expressions and references are evaluated for each Plugin.
func CheckPresetValues(values []PluginPresetPluginOptionValue, def *PluginDefinition, field, namespace string) error {
	errs := []error{Duplicates(values, field)}
	var given []OptionValue
	var pos []int
	for i, v := range values {
		if err := v.oneSource(fmt.Sprintf("%s[%d] (%s)", field, i, v.Name)); err != nil {
			errs = append(errs, err)
			continue
		}
		if v.Expression != nil || v.ValueFrom != nil && v.ValueFrom.Ref != nil {
			continue
		}
		ov := OptionValue{Name: v.Name, Value: v.Value}
		if v.ValueFrom != nil {
			ov.ValueFrom = &ValueFrom{Secret: v.ValueFrom.Secret}
		}
		given, pos = append(given, ov), append(pos, i)
	}
	if _, err := layer(merge.Source{}, given, pos, def, field, namespace); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// patch is a PathValue of an applied PluginOverride: its rank in the
// ladder, and its source as provenance names it.
type patch struct {
	PathValue
	rank   int
	source string
	// class is its override's rung of the ladder.
	class string
}

// collect turns the merged layers, applied (lowest first), and the values
// PluginOverrides set inside options' values into the result: every
// value checked against its option's type, every required option set.
//
// from says how a layer's value was made, by layer source and option.
func (res *Result) collect(merged *merge.Result, def *PluginDefinition, applied []*target.Layer, patches []patch, from map[string]map[string]string) error {
	doc, err := merged.Document()
	if err != nil {
		return err
	}
	var out struct {
		OptionValues []struct {
			Name  string          `json:"name"`
			Value json.RawMessage `json:"value"`
		} `json:"optionValues"`
	}
	if err := json.Unmarshal(doc, &out); err != nil {
		return err
	}
	whole := map[string]json.RawMessage{}
	for _, e := range out.OptionValues {
		whole[e.Name] = e.Value
	}
	for _, pt := range patches { // an option set only inside
		if _, ok := whole[pt.Option]; !ok {
			whole[pt.Option] = nil
		}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(whole)) {
		value := whole[name]
		key := merge.Child(optionValues, name)
		vs := ValueSource{Shadowed: []string{}}
		winner := -1 // the rank of the layer that gave the value whole
		if value != nil {
			p, _ := merged.Explain(key)
			vs.Source = p.Source.String()
			vs.From = from[vs.Source][name]
			for _, s := range p.Shadowed {
				vs.Shadowed = append(vs.Shadowed, s.Source.String())
			}
			winner = slices.IndexFunc(applied, func(l *target.Layer) bool { return l.Layer.Source == p.Source })
		}
		byOverride := winner >= 0 && strings.HasPrefix(applied[winner].Class, "override")
		if res.kept[name] && !byOverride {
			// The writer's value, left out unchecked, is kept as written
			// where no override gives a whole value over it: the paths
			// of overrides are not applied to what stands in its place.
			if slices.ContainsFunc(patches, func(pt patch) bool { return pt.Option == name }) {
				res.Unchecked = append(res.Unchecked, fmt.Sprintf("option %q kept as written, without the paths PluginOverrides set inside it", name))
			}
			continue
		}
		ov := OptionValue{Name: name}
		if ref, ok := merged.RefOf(key, string(value)); ok && value != nil {
			// A Secret gives the whole value, never read: a path ranked
			// above it cannot apply, one below it lost to it.
			if err := vs.shadowedBySecret(name, winner, patches); err != nil {
				res.keepWritten(name, byOverride, err, &errs)
				continue
			}
			ov.ValueFrom = &ValueFrom{Secret: &SecretKeyReference{Name: ref.Name, Key: ref.Key}}
		} else {
			patched, err := vs.apply(name, value, winner, patches)
			if err != nil {
				res.keepWritten(name, byOverride, err, &errs)
				continue
			}
			if err := checkType(def.Option(name), patched); err != nil {
				errs = append(errs, fmt.Errorf("option %q from %s: %w", name, cmp.Or(vs.Source, "its paths"), err))
			}
			v := json.RawMessage(bytes.Clone(patched))
			ov.Value = &v
		}
		res.Provenance[name] = vs
		res.OptionValues = append(res.OptionValues, ov)
	}
	for _, o := range def.Spec.Options {
		_, set := whole[o.Name]
		switch {
		case !o.Required || set || res.kept[o.Name]:
		case res.writer != "":
			// Admitting a write, Greenhouse's validation judges what the
			// stored Plugin lacks: the writer's values (and what a
			// record of theirs says of them) cannot turn the overrides
			// off.
			res.Unchecked = append(res.Unchecked, fmt.Sprintf("option %q is required by %s %s and no layer sets it", o.Name, def.Kind, objectName(def.ObjectMeta)))
		default:
			errs = append(errs, fmt.Errorf("option %q is required by %s %s and no layer sets it", o.Name, def.Kind, objectName(def.ObjectMeta)))
		}
	}
	if res.OptionValues == nil {
		res.OptionValues = []OptionValue{}
	}
	return errors.Join(errs...)
}

// keepWritten handles err, a PluginOverride's path that cannot apply
// inside option name's value: admitting a write, where no override gave
// that value (the writer did, or the default of the definition the writer
// chose), the option is left as it is, the paths not applied, and the
// other overrides still apply, so that a writer cannot turn them off;
// otherwise err is the computation's.
func (res *Result) keepWritten(name string, byOverride bool, err error, errs *[]error) {
	if res.writer == "" || byOverride {
		*errs = append(*errs, err)
		return
	}
	res.Unchecked = append(res.Unchecked, fmt.Sprintf("option %q left as given, without the paths PluginOverrides set inside it: %v", name, err))
}

// shadowedBySecret records the patches of option name ranked below
// winner, the layer whose Secret gives its value, as shadowed by it; one
// ranked above it is an error naming the override.
func (vs *ValueSource) shadowedBySecret(name string, winner int, patches []patch) error {
	for _, pt := range patches {
		switch {
		case pt.Option != name:
		case pt.rank < winner:
			vs.Shadowed = append(vs.Shadowed, pt.source+" at "+pt.Path)
		default:
			return fmt.Errorf("%s: path %s: option %q's value comes from a Secret, from %s, and a Secret gives an option's whole value, never a part of it", pt.source, pt.Path, name, vs.Source)
		}
	}
	return nil
}

// apply sets the values patches give inside option name's value (nil:
// no layer gave it whole, so it starts empty), in ladder order, and
// records them in vs: a patch ranked below winner, the layer that gave
// the value whole, is shadowed by it, and so is one a later patch at or
// above its path replaces. A path that crosses a value that is not an
// object is an error naming the override.
func (vs *ValueSource) apply(name string, value json.RawMessage, winner int, patches []patch) (json.RawMessage, error) {
	var mine []patch
	for _, pt := range patches {
		if pt.Option == name {
			mine = append(mine, pt)
		}
	}
	if len(mine) == 0 {
		return value, nil
	}
	var root any = map[string]any{}
	if value != nil {
		if err := decodeNumbers(value, &root); err != nil {
			return nil, err
		}
	}
	var done []patch
	for _, pt := range mine {
		if pt.rank < winner {
			vs.Shadowed = append(vs.Shadowed, pt.source+" at "+pt.Path)
			continue
		}
		// Who set what lies at a path: the last patch at or above it,
		// else the layer that gave the value whole.
		setter := func(ptr string) string {
			for _, d := range slices.Backward(done) {
				if within(ptr, d.Path) {
					return d.source
				}
			}
			return cmp.Or(vs.Source, "no layer")
		}
		cur, ok := root.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: path %s: option %q's value, from %s, is not an object", pt.source, pt.Path, name, setter(""))
		}
		last := len(pt.segments) - 1
		for k, seg := range pt.segments[:last] {
			next, ok := cur[seg]
			if !ok || next == nil {
				m := map[string]any{}
				cur[seg], cur = m, m
				continue
			}
			if cur, ok = next.(map[string]any); !ok {
				crossed := merge.Pointer(pt.segments[:k+1]...)
				return nil, fmt.Errorf("%s: path %s crosses %s of option %q, which %s sets to a value that is not an object", pt.source, pt.Path, crossed, name, setter(crossed))
			}
		}
		var v any
		if err := decodeNumbers(pt.Value, &v); err != nil {
			return nil, fmt.Errorf("%s: path %s: %w", pt.source, pt.Path, err)
		}
		for _, d := range done {
			// An earlier path as specific that holds this one, and set
			// another value here, loses that part of its value.
			if d.class == pt.class && d.Path != pt.Path && within(pt.Path, d.Path) {
				if old, ok := cur[pt.segments[last]]; ok && !sameAt(v, patch{PathValue: PathValue{Value: mustJSON(old)}}) {
					value := mustJSON(old)
					vs.Contested = append(vs.Contested, Contender{Source: d.source + " at " + pt.Path, Value: &value})
				}
			}
		}
		cur[pt.segments[last]] = v
		kept := done[:0]
		for _, d := range done {
			if within(d.Path, pt.Path) {
				vs.Shadowed = append(vs.Shadowed, d.source+" at "+d.Path)
				if d.class == pt.class && !sameAt(root, d) {
					// As specific as pt, and pt changed what it set.
					value := d.Value
					vs.Contested = append(vs.Contested, Contender{Source: d.source + " at " + d.Path, Value: &value})
				}
				continue
			}
			kept = append(kept, d)
		}
		done = append(kept, pt)
	}
	for _, d := range done {
		vs.Paths = append(vs.Paths, PathSource{Path: d.Path, Source: d.source})
	}
	return json.Marshal(root)
}

// mustJSON is v, a value decodeNumbers read, as JSON.
func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// sameAt reports whether root holds, at d's path, the value d set.
func sameAt(root any, d patch) bool {
	cur := root
	for _, seg := range d.segments {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[seg]; !ok {
			return false
		}
	}
	var v any
	if decodeNumbers(d.Value, &v) != nil {
		return false
	}
	a, _ := json.Marshal(cur)
	b, _ := json.Marshal(v)
	return bytes.Equal(a, b)
}

// contests records, in each option's provenance, the values layers as
// specific as the winner's gave and lost (target.Contests), and returns
// an error naming every contest when s makes contests errors.
func (res *Result) contests(merged *merge.Result, applied []*target.Layer, s Settings) error {
	for _, c := range target.Contests(applied, merged) {
		segs, ok := merge.Segments(c.Key)
		if !ok || len(segs) != 2 || "/"+segs[0] != optionValues {
			continue
		}
		name := segs[1]
		vs, ok := res.Provenance[name]
		if !ok {
			continue
		}
		for _, o := range c.Others {
			vs.Contested = append(vs.Contested, contender(applied, c.Key, o))
		}
		res.Provenance[name] = vs
	}
	if !s.ContestsAreErrors {
		return nil
	}
	lines, _ := ContestLines(res)
	var errs []error
	for _, l := range lines {
		errs = append(errs, fmt.Errorf("%s (contests are errors here)", l))
	}
	return errors.Join(errs...)
}

// ContestLines returns a line for each contested option of res, sorted by
// option, and the PluginOverrides involved ("namespace/name", sorted).
func ContestLines(res *Result) (lines, involved []string) {
	seen := map[string]bool{}
	note := func(source string) {
		if rest, ok := strings.CutPrefix(source, KindPluginOverride+" "); ok {
			name, _, _ := strings.Cut(rest, " ")
			seen[name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(res.Provenance)) {
		vs := res.Provenance[name]
		if len(vs.Contested) == 0 {
			continue
		}
		for _, c := range vs.Contested {
			winner := vs.Source
			if _, path, ok := strings.Cut(c.Source, " at /"); ok {
				for _, p := range vs.Paths {
					if within("/"+path, p.Path) {
						winner = p.Source + " at " + p.Path
					}
				}
			}
			note(winner)
			note(c.Source)
			lines = append(lines, fmt.Sprintf("option %q is contested: %s wins by creation time, then name, over %s, as specific, which gives %s",
				name, winner, c.Source, c.describe()))
		}
	}
	return lines, slices.Sorted(maps.Keys(seen))
}

// contender is the losing value s of the element key, given by one of
// applied: a reference only if that layer wrote one there.
func contender(applied []*target.Layer, key string, s merge.Shadow) Contender {
	c := Contender{Source: s.Source.String()}
	var e struct {
		Value json.RawMessage `json:"value"`
	}
	if json.Unmarshal([]byte(s.Value), &e) != nil || e.Value == nil {
		v := json.RawMessage(s.Value) // a removal
		c.Value = &v
		return c
	}
	for _, l := range applied {
		if l.Layer.Source != s.Source {
			continue
		}
		if ref, ok := l.Layer.RefOf(key, string(e.Value)); ok {
			c.ValueFrom = &ValueFrom{Secret: &SecretKeyReference{Name: ref.Name, Key: ref.Key}}
			return c
		}
	}
	c.Value = &e.Value
	return c
}

// describe is the contender's value for a message: its JSON, or the
// Secret's reference, never its content.
func (c Contender) describe() string {
	if c.ValueFrom != nil && c.ValueFrom.Secret != nil {
		return "secret " + c.ValueFrom.Secret.Name + "#" + c.ValueFrom.Secret.Key
	}
	if c.Value != nil {
		return string(*c.Value)
	}
	return "nothing"
}

// decodeNumbers decodes j into v keeping numbers as written
// (json.Number): a value merged at a path keeps every digit of the rest.
func decodeNumbers(j []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	return dec.Decode(v)
}

// checkType checks a literal value against its option's type.
func checkType(o *PluginOption, v json.RawMessage) error {
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return err
	}
	ok := true
	switch o.Type {
	case TypeBool:
		_, ok = x.(bool)
	case TypeInt:
		f, isNum := x.(float64)
		ok = isNum && f == float64(int64(f))
	case TypeString:
		_, ok = x.(string)
	case TypeList:
		_, ok = x.([]any)
	case TypeMap:
		_, ok = x.(map[string]any)
	case TypeSecret:
		return fmt.Errorf("is of type secret: give it by valueFrom.secret, never as a value")
	default:
		return fmt.Errorf("the definition gives it type %q, none of bool, int, string, list, map, secret", o.Type)
	}
	if !ok {
		return fmt.Errorf("%s is not of type %s", text.Cut(string(v), text.MaxQuoted), o.Type)
	}
	return nil
}

// Option returns the option of d named name, or nil.
func (d *PluginDefinition) Option(name string) *PluginOption {
	for i := range d.Spec.Options {
		if d.Spec.Options[i].Name == name {
			return &d.Spec.Options[i]
		}
	}
	return nil
}

// Digest is the digest of an option value as a Plugin's spec holds it:
// of its JSON with members sorted and numbers as written, so that values
// that differ only past float64's precision differ.
func Digest(v OptionValue) string {
	b, _ := json.Marshal(v)
	var canon any
	_ = decodeNumbers(b, &canon)
	b, _ = json.Marshal(canon)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Prefix returns err with every line of it prefixed "what: ".
func Prefix(what string, err error) error {
	if err == nil {
		return nil
	}
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = what + ": " + l
	}
	return errors.New(strings.Join(lines, "\n"))
}

func objectName(m metav1.ObjectMeta) string {
	if m.Namespace == "" {
		return m.Name
	}
	return m.Namespace + "/" + m.Name
}

func refString(namespace string, ref PluginDefinitionReference) string {
	kind := ref.Kind
	if kind == "" {
		kind = KindPluginDefinition
	}
	if kind == KindClusterPluginDefinition {
		return kind + " " + ref.Name
	}
	return kind + " " + namespace + "/" + ref.Name
}
