package greenhouse

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

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
	Plugin           string                      `json:"plugin"`
	OptionValues     []OptionValue               `json:"optionValues"`
	Provenance       map[string]ValueSource      `json:"provenance"`
	AppliedOverrides []string                    `json:"appliedOverrides"`
	Ignored          []IgnoredLayer              `json:"ignored"`
	sources          map[string]merge.Provenance // by option name
}

// ValueSource is where one option's value came from.
type ValueSource struct {
	Source   string   `json:"source"`
	Shadowed []string `json:"shadowed"`
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
func Effective(objs Objects, namespace, name string) (*Result, error) {
	p, err := objs.Plugin(namespace, name)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, fmt.Errorf("Plugin %s/%s: not found", namespace, name)
	}
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
		if cluster == nil {
			return nil, fmt.Errorf("Plugin %s/%s: spec.clusterName: Cluster %s/%s not found", namespace, name, namespace, p.Spec.ClusterName)
		}
	}
	tgt := target.Target{Name: p.Spec.ClusterName, Dimensions: map[string]string{dimension: def.Name}}
	if cluster != nil {
		tgt.Labels = cluster.Labels
	}

	b := &builder{def: def, objs: objs, namespace: namespace}
	b.defaults()
	var preset *PluginPreset
	if presetName := p.Labels[LabelPluginPreset]; presetName != "" {
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
	res := &Result{Plugin: namespace + "/" + name, Provenance: map[string]ValueSource{}, AppliedOverrides: []string{}, Ignored: []IgnoredLayer{}, sources: map[string]merge.Provenance{}}
	for _, l := range applied {
		if strings.HasPrefix(l.Class, "override") {
			res.AppliedOverrides = append(res.AppliedOverrides, l.Name)
		}
	}
	res.Ignored = append(res.Ignored, b.ignored...)
	for _, ig := range ignored {
		res.Ignored = append(res.Ignored, IgnoredLayer{Source: ig.Layer.Name, Reason: ig.Reason})
	}
	merged := merge.Merge(target.Layers(applied)...)
	if err := res.collect(merged, def); err != nil {
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
	errs      []error
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
	b.add(src, "values", src.String(), target.Selector{}, pp.CreationTimestamp, "spec.plugin.optionValues", pp.Spec.Plugin.OptionValues)
	sel, selErr := metav1.LabelSelectorAsSelector(&pp.Spec.ClusterSelector)
	if selErr != nil {
		b.errs = append(b.errs, fmt.Errorf("PluginPreset %s: spec.clusterSelector: %w", name, selErr))
		return
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
		b.add(osrc, "cluster-override", osrc.String(), target.Selector{Names: []string{o.ClusterName}}, pp.CreationTimestamp, field+".overrides", o.Overrides)
	}
}

// own is a standalone Plugin's own values: what its spec holds, but for
// the values the example wrote over them, which its status records.
func (b *builder) own(p *Plugin) {
	src := merge.Source{Origin: KindPlugin, Name: objectName(p.ObjectMeta)}
	b.add(src, "values", src.String(), target.Selector{}, p.CreationTimestamp, "spec.optionValues", OwnValues(p))
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
	if !byDefinition {
		// It applies to every plugin: an option this definition does
		// not have is left out, and said so.
		values = nil
		for i, v := range o.Spec.Overrides {
			if option(b.def, v.Name) == nil {
				b.ignored = append(b.ignored, IgnoredLayer{Source: fmt.Sprintf("%s spec.overrides[%d] (%s)", src, i, v.Name),
					Reason: fmt.Sprintf("%s %s has no option %q", b.def.Kind, objectName(b.def.ObjectMeta), v.Name)})
				continue
			}
			values = append(values, v)
		}
	}
	b.add(src, overrideClass(byCluster, byDefinition), src.String(), sel, o.CreationTimestamp, "spec.overrides", values)
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
	var errs []error
	elems := make([]json.RawMessage, 0, len(values))
	var refs map[string]bool
	for i, v := range values {
		at := fmt.Sprintf("%s[%d] (%s)", field, i, v.Name)
		var o *PluginOption
		if def != nil {
			if o = option(def, v.Name); o == nil {
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
func Duplicates(values []OptionValue, field string) error {
	at := map[string]int{}
	var errs []error
	for i, v := range values {
		if j, dup := at[v.Name]; dup {
			errs = append(errs, fmt.Errorf("%s[%d] and %s[%d] both set option %q", field, j, field, i, v.Name))
			continue
		}
		at[v.Name] = i
	}
	return errors.Join(errs...)
}

// collect turns the merged layers into the result: every value checked
// against its option's type, every required option set.
func (res *Result) collect(merged *merge.Result, def *PluginDefinition) error {
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
	var errs []error
	set := map[string]bool{}
	for _, e := range out.OptionValues {
		key := merge.Child(optionValues, e.Name)
		p, _ := merged.Explain(key)
		vs := ValueSource{Source: p.Source.String(), Shadowed: []string{}}
		for _, s := range p.Shadowed {
			vs.Shadowed = append(vs.Shadowed, s.Source.String())
		}
		res.Provenance[e.Name] = vs
		res.sources[e.Name] = p
		set[e.Name] = true
		o := option(def, e.Name)
		ov := OptionValue{Name: e.Name}
		if ref, ok := merged.RefOf(key, string(e.Value)); ok {
			ov.ValueFrom = &ValueFrom{Secret: &SecretKeyReference{Name: ref.Name, Key: ref.Key}}
		} else {
			if err := checkType(o, e.Value); err != nil {
				errs = append(errs, fmt.Errorf("option %q from %s: %w", e.Name, p.Source, err))
			}
			v := json.RawMessage(bytes.Clone(e.Value))
			ov.Value = &v
		}
		res.OptionValues = append(res.OptionValues, ov)
	}
	for _, o := range def.Spec.Options {
		if o.Required && !set[o.Name] {
			errs = append(errs, fmt.Errorf("option %q is required by %s %s and no layer sets it", o.Name, def.Kind, objectName(def.ObjectMeta)))
		}
	}
	sort.Slice(res.OptionValues, func(i, j int) bool { return res.OptionValues[i].Name < res.OptionValues[j].Name })
	if res.OptionValues == nil {
		res.OptionValues = []OptionValue{}
	}
	return errors.Join(errs...)
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
		return fmt.Errorf("%s is not of type %s", v, o.Type)
	}
	return nil
}

func option(def *PluginDefinition, name string) *PluginOption {
	for i := range def.Spec.Options {
		if def.Spec.Options[i].Name == name {
			return &def.Spec.Options[i]
		}
	}
	return nil
}

// Sources returns, for a Plugin's status, where each effective value came
// from and its digest.
func (res *Result) Sources() []OptionValueSource {
	out := make([]OptionValueSource, 0, len(res.OptionValues))
	for _, v := range res.OptionValues {
		out = append(out, OptionValueSource{Name: v.Name, Source: res.Provenance[v.Name].Source, Digest: Digest(v)})
	}
	return out
}

// Digest is the digest of an option value as a Plugin's spec holds it.
func Digest(v OptionValue) string {
	b, _ := json.Marshal(v)
	var canon any
	_ = json.Unmarshal(b, &canon)
	b, _ = json.Marshal(canon)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// OwnValues returns a standalone Plugin's own values: the entries of its
// spec, but for those whose digest its status records as written from
// another source (a default, an override) and that nobody changed since.
func OwnValues(p *Plugin) []OptionValue {
	written := map[string]OptionValueSource{}
	for _, s := range p.Status.OptionValueSources {
		written[s.Name] = s
	}
	self := KindPlugin + " " + objectName(p.ObjectMeta)
	var out []OptionValue
	for _, v := range p.Spec.OptionValues {
		if w, ok := written[v.Name]; ok && w.Source != self && w.Digest == Digest(v) {
			continue
		}
		out = append(out, v)
	}
	return out
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
