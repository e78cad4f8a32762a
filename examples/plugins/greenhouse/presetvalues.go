package greenhouse

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stratacfg/strata/merge"
)

// presetValues returns a preset's values at field (those of the layer
// src) as the Plugin on b's cluster gets them: a literal or a Secret's
// reference as given, an expression evaluated as Greenhouse's controller
// evaluates it, a valueFrom.ref resolved; and records in b.from how each
// made value was made. An expression or a valueFrom.ref of an option
// replaced names (the override of the Plugin's cluster sets it) is left
// out unevaluated, as Greenhouse applies that override first. An entry
// with none or more than one of value, valueFrom.secret, valueFrom.ref
// and expression, an expression where Greenhouse evaluates none or one
// that fails, and a reference that cannot be resolved are errors naming
// src, the field and the position; ok is false after one.
func (b *builder) presetValues(pp *PluginPreset, src merge.Source, values []PluginPresetPluginOptionValue, field string, replaced map[string]bool) (out []OptionValue, ok bool) {
	var errs []error
	for i, v := range values {
		if replaced[v.Name] && (v.Expression != nil || v.ValueFrom != nil && v.ValueFrom.Ref != nil) {
			continue // never evaluated: the cluster's override replaced it first
		}
		at := fmt.Sprintf("%s[%d] (%s)", field, i, v.Name)
		if err := v.oneSource(at); err != nil {
			errs = append(errs, err)
			continue
		}
		ov := OptionValue{Name: v.Name, Value: v.Value}
		var made string
		switch {
		case v.Expression != nil:
			raw, err := b.expression(pp, *v.Expression)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: expression: %w", at, err))
				continue
			}
			ov.Value, made = &raw, "expression "+*v.Expression
		case v.ValueFrom != nil && v.ValueFrom.Secret != nil:
			ov.Value, ov.ValueFrom = nil, &ValueFrom{Secret: v.ValueFrom.Secret}
		case v.ValueFrom != nil && v.ValueFrom.Ref != nil:
			raw, desc, err := b.ref(v.ValueFrom.Ref)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: valueFrom.ref: %w", at, err))
				continue
			}
			ov.Value, made = &raw, desc
		}
		if made != "" {
			if b.from == nil {
				b.from = map[string]map[string]string{}
			}
			if b.from[src.String()] == nil {
				b.from[src.String()] = map[string]string{}
			}
			b.from[src.String()][v.Name] = made
		}
		out = append(out, ov)
	}
	if err := errors.Join(errs...); err != nil {
		b.errs = append(b.errs, Prefix(src.String(), err))
		return nil, false
	}
	return out, true
}

// oneSource checks that v gives its value one way: a value, a Secret's
// reference, another object's value or an expression.
func (v PluginPresetPluginOptionValue) oneSource(at string) error {
	n := 0
	for _, has := range []bool{v.Value != nil && string(*v.Value) != "null", v.ValueFrom != nil && v.ValueFrom.Secret != nil,
		v.ValueFrom != nil && v.ValueFrom.Ref != nil, v.Expression != nil} {
		if has {
			n++
		}
	}
	switch {
	case n > 1:
		return fmt.Errorf("%s: more than one of value, valueFrom.secret, valueFrom.ref and expression: give one", at)
	case n == 0:
		return fmt.Errorf("%s: none of value, valueFrom.secret, valueFrom.ref and expression: give one", at)
	}
	return nil
}

// expression evaluates a preset's expression for the Plugin on b's
// cluster.
func (b *builder) expression(pp *PluginPreset, expression string) (json.RawMessage, error) {
	s := b.r.settings
	if s.NoExpressions {
		return nil, errors.New("not evaluated: Greenhouse evaluates none here (pluginPreset.expressionEvaluationEnabled is off), and its controller fails the preset")
	}
	raw, err := evaluateExpression(expression, TemplateData(pp.Namespace, pp.Labels, b.cluster, s), &b.r.cost)
	if err != nil && s.DNSDomain == "" && strings.Contains(expression, "baseDomain") {
		err = fmt.Errorf("%w (global.greenhouse.baseDomain is Greenhouse's --dns-domain: give it)", err)
	}
	return raw, err
}

// ref resolves a preset value's valueFrom.ref for the Plugin on b's
// cluster: the objects of its kind (a PluginPreset's by default) in the
// namespace, by name or by selector, each with its option values resolved
// (a Plugin's effective values, a preset's values for the same cluster),
// are given to its expression as `object`, as Greenhouse's CEL evaluator
// gives one object; by name the value is the expression's, by selector
// the list of the expression's over each object selected, by name. It
// returns the value's JSON and what made it, for provenance.
func (b *builder) ref(r *ExternalValueSource) (json.RawMessage, string, error) {
	kind := cmp.Or(r.Kind, KindPluginPreset)
	switch {
	case kind != KindPlugin && kind != KindPluginPreset:
		return nil, "", fmt.Errorf("kind %q is neither Plugin nor PluginPreset", r.Kind)
	case (r.Name == "") == (r.Selector == nil):
		return nil, "", errors.New("give one of name and selector")
	case r.Expression == "":
		return nil, "", errors.New("no expression: give the CEL expression that reads the value from `object`")
	}
	var sel labels.Selector
	if r.Selector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(r.Selector); err != nil {
			return nil, "", fmt.Errorf("selector: %w", err)
		}
	}
	type target struct {
		id  string
		obj map[string]any
	}
	var targets []target
	add := func(id string, o any, values func(map[string]any) error) error {
		obj, err := toMap(o)
		if err != nil {
			return err
		}
		if err := values(obj); err != nil {
			return err
		}
		targets = append(targets, target{id: id, obj: obj})
		return nil
	}
	switch kind {
	case KindPlugin:
		ps, err := pick(b.namespace, r.Name, sel, b.objs.Plugin, b.objs.ListPlugins)
		if err != nil {
			return nil, "", err
		}
		for _, p := range ps {
			id := KindPlugin + " " + objectName(p.ObjectMeta)
			if err := add(id, p, func(obj map[string]any) error {
				res, err := compute(b.objs, p, false, b.r)
				if err != nil {
					return err
				}
				return setValues(obj, res.OptionValues, "spec", "optionValues")
			}); err != nil {
				return nil, "", err
			}
		}
	case KindPluginPreset:
		pps, err := pick(b.namespace, r.Name, sel, b.objs.PluginPreset, b.objs.ListPluginPresets)
		if err != nil {
			return nil, "", err
		}
		for _, pp := range pps {
			id := KindPluginPreset + " " + objectName(pp.ObjectMeta)
			if err := add(id, pp, func(obj map[string]any) error {
				leave, err := b.r.enter(id)
				if err != nil {
					return err
				}
				defer leave()
				sub := &builder{objs: b.objs, namespace: b.namespace, cluster: b.cluster, r: b.r}
				values, ok := sub.presetValues(pp, merge.Source{Origin: KindPluginPreset, Name: objectName(pp.ObjectMeta)}, pp.Spec.Plugin.OptionValues, "spec.plugin.optionValues", nil)
				if !ok {
					return errors.Join(sub.errs...)
				}
				return setValues(obj, values, "spec", "plugin", "optionValues")
			}); err != nil {
				return nil, "", err
			}
		}
	}
	if len(targets) == 0 {
		return nil, "", fmt.Errorf("selector %s selects no %s in %s", sel, kind, b.namespace)
	}
	slices.SortFunc(targets, func(a, b target) int { return strings.Compare(a.id, b.id) })
	var results []any
	ids := make([]string, len(targets))
	for i, t := range targets {
		ids[i] = strings.TrimPrefix(t.id, kind+" ")
		v, err := EvaluateObject(r.Expression, t.obj, &b.r.cost)
		if err != nil {
			return nil, "", fmt.Errorf("expression over %s: %w", t.id, err)
		}
		results = append(results, v)
	}
	var value any = results
	if r.Name != "" {
		value = results[0]
	}
	raw, err := json.Marshal(value)
	if err != nil {
		return nil, "", fmt.Errorf("the expression's value %v has no JSON: %w", value, err)
	}
	return raw, fmt.Sprintf("ref %s %s: %s", kind, strings.Join(ids, ", "), r.Expression), nil
}

// pick returns the object of namespace named name, or those sel selects.
func pick[T any, P interface {
	*T
	GetLabels() map[string]string
}](namespace, name string, sel labels.Selector, get func(namespace, name string) (P, error), list func(namespace string) ([]P, error)) ([]P, error) {
	if name != "" {
		o, err := get(namespace, name)
		if err != nil {
			return nil, err
		}
		if o == nil {
			return nil, fmt.Errorf("%s/%s not found", namespace, name)
		}
		return []P{o}, nil
	}
	all, err := list(namespace)
	if err != nil {
		return nil, err
	}
	var out []P
	for _, o := range all {
		if sel.Matches(labels.Set(o.GetLabels())) {
			out = append(out, o)
		}
	}
	return out, nil
}

// toMap is an object as JSON holds it, as Greenhouse's evaluator gives it
// to an expression.
func toMap(o any) (map[string]any, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

// setValues puts values at path of obj.
func setValues(obj map[string]any, values []OptionValue, path ...string) error {
	list := make([]any, 0, len(values))
	for _, v := range values {
		m, err := toMap(v)
		if err != nil {
			return err
		}
		list = append(list, m)
	}
	setAt(obj, list, path...)
	return nil
}

// setAt puts v at path of root, making the objects on the way, in place
// of whatever is there that is not one.
func setAt(root map[string]any, v any, path ...string) {
	cur := root
	for _, p := range path[:len(path)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	cur[path[len(path)-1]] = v
}
