package greenhouse

import (
	"encoding/json"
	"slices"
	"strings"
)

// The annotations the webhook keeps on a Plugin it admits. Greenhouse
// owns a Plugin's status, and its CRD keeps no field it does not declare,
// so what the webhook says of a Plugin is said in its metadata.
const (
	// AnnotationAppliedOverrides lists the PluginOverrides applied to the
	// Plugin, in the order they applied, one per line.
	AnnotationAppliedOverrides = "plugins.strata.dev/applied-overrides"
	// AnnotationWritten records each value the webhook wrote over what
	// the Plugin's writer gave (a JSON list of Written), so that the next
	// admission can tell the writer's values from its own.
	AnnotationWritten = "plugins.strata.dev/written"
)

// Written is a value the webhook wrote: the option, the override that
// decided it, the digest of the value written, and the value the writer
// gave in its place (nil: the writer gave none).
type Written struct {
	Name   string       `json:"name"`
	Source string       `json:"source"`
	Digest string       `json:"digest"`
	Base   *OptionValue `json:"base,omitempty"`
}

// Admission is what a write of a Plugin stores once the webhook admits
// it: the option values, with the PluginOverrides over what the writer
// gave, and the annotations that say so.
type Admission struct {
	OptionValues []OptionValue
	Applied      []string
	Written      []Written
	// Result is the computation, with its provenance.
	Result *Result
}

// Annotations returns the annotations the admission sets; an empty one
// is to be removed.
func (a *Admission) Annotations() map[string]string {
	out := map[string]string{AnnotationAppliedOverrides: strings.Join(a.Applied, "\n"), AnnotationWritten: ""}
	if len(a.Written) > 0 {
		b, _ := json.Marshal(a.Written)
		out[AnnotationWritten] = string(b)
	}
	return out
}

// Admit returns what a write of p stores: p's option values as its writer
// gave them (Base), each value the PluginOverrides that apply to p decide
// put in place of the writer's (or added, after the writer's, by name),
// in the ladder's order and with paths. Values no override decides stay
// as the writer gave them, in its order, and so do values of options p's
// definition does not have (Greenhouse's global.greenhouse.*). The
// definition's defaults are not written (Greenhouse's own webhook merges
// them); an override's path into a value only a default gives starts from
// the default. s says whether a contest is an error.
func Admit(objs Objects, p *Plugin, s Settings) (*Admission, error) {
	res, err := compute(objs, p, true, newResolving(s))
	if err != nil {
		return nil, err
	}
	a := &Admission{Applied: res.AppliedOverrides, Result: res}
	decided := func(name string) (OptionValue, string, bool) {
		vs, ok := res.Provenance[name]
		if !ok {
			return OptionValue{}, "", false
		}
		src := vs.Source
		if !slices.Contains(res.AppliedOverrides, src) {
			if len(vs.Paths) == 0 {
				return OptionValue{}, "", false
			}
			src = vs.Paths[len(vs.Paths)-1].Source
		}
		i := slices.IndexFunc(res.OptionValues, func(v OptionValue) bool { return v.Name == name })
		return res.OptionValues[i], src, true
	}
	given := map[string]bool{}
	for _, v := range Base(p) {
		given[v.Name] = true
		w, src, ok := decided(v.Name)
		if !ok {
			a.OptionValues = append(a.OptionValues, v)
			continue
		}
		base := v
		a.OptionValues = append(a.OptionValues, w)
		a.Written = append(a.Written, Written{Name: v.Name, Source: src, Digest: Digest(w), Base: &base})
	}
	for _, v := range res.OptionValues { // sorted by name
		if given[v.Name] {
			continue
		}
		if w, src, ok := decided(v.Name); ok {
			a.OptionValues = append(a.OptionValues, w)
			a.Written = append(a.Written, Written{Name: v.Name, Source: src, Digest: Digest(w)})
		}
	}
	if a.OptionValues == nil {
		a.OptionValues = []OptionValue{}
	}
	return a, nil
}

// Base returns p's option values as its writer gave them: its spec's, but
// for each value the webhook wrote that nobody changed since (its digest
// is the one AnnotationWritten records), the writer's value in its place,
// or none. An annotation that does not decode is taken as no record: the
// values are all the writer's.
func Base(p *Plugin) []OptionValue {
	written := map[string]Written{}
	var ws []Written
	if raw := p.Annotations[AnnotationWritten]; raw != "" && json.Unmarshal([]byte(raw), &ws) == nil {
		for _, w := range ws {
			written[w.Name] = w
		}
	}
	var out []OptionValue
	for _, v := range p.Spec.OptionValues {
		w, ok := written[v.Name]
		switch {
		case !ok || w.Digest != Digest(v) || w.Base != nil && w.Base.Name != v.Name:
			out = append(out, v) // no record of it, or one that is not the webhook's
		case w.Base != nil:
			out = append(out, *w.Base)
		}
	}
	return out
}
