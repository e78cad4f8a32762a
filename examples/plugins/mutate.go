package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
	"github.com/stratacfg/strata/internal/admissionreview"
)

// mutatePath is where the mutating webhook on Plugins is served.
const mutatePath = "/mutate"

// mutator is the mutating webhook on Plugins: whoever writes a Plugin
// (Greenhouse's PluginPreset controller, a user, the example asking for
// a Plugin to be admitted again), the PluginOverrides that apply to it
// are layered over what was written, and the Plugin's annotations say
// which applied and what they replaced. A Plugin whose values cannot be
// computed is admitted as written, with a warning: a tenant's broken
// override must not stop Greenhouse from writing Plugins.
type mutator struct {
	objs     greenhouse.Objects
	log      klog.Logger
	admitted *metrics.CounterVec // by result: mutated, unchanged, failed
	settings greenhouse.Settings
}

func (m *mutator) handler() http.Handler {
	return admissionreview.Handler(func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		ops, warning, failed := m.mutate(req.Namespace, req.Object.Raw)
		resp := &admissionv1.AdmissionResponse{Allowed: true}
		if warning != "" {
			resp.Warnings = []string{admissionWarning(warning)}
		}
		switch {
		case failed:
			m.admitted.WithLabelValues("failed").Inc()
		case len(ops) == 0:
			m.admitted.WithLabelValues("unchanged").Inc()
		default:
			patch, _ := json.Marshal(ops)
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = patch, &pt
			m.admitted.WithLabelValues("mutated").Inc()
		}
		return resp
	})
}

// op is one JSON patch operation.
type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// mutate returns the JSON patch that makes raw, a Plugin written to
// namespace, what Admit says it stores, and a warning naming the writer's
// values it kept as written unchecked; or, when its values cannot be
// computed, no patch, why, and failed.
func (m *mutator) mutate(namespace string, raw []byte) (ops []op, warning string, failed bool) {
	var p greenhouse.Plugin
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, "strata-plugins: overrides not applied: the Plugin does not decode: " + err.Error(), true
	}
	if p.Namespace == "" {
		p.Namespace = namespace
	}
	a, err := greenhouse.Admit(m.objs, &p, m.settings)
	if err != nil {
		m.log.Info("A Plugin's overrides cannot be applied; admitting it as written", "plugin", p.Namespace+"/"+p.Name, "err", err)
		return nil, "strata-plugins: overrides not applied, the Plugin is admitted as written: " + strings.ReplaceAll(err.Error(), "\n", "; "), true
	}
	if len(a.Result.Unchecked) > 0 {
		warning = "strata-plugins: kept as written, for Greenhouse to judge, with the overrides applied over the rest: " + strings.Join(a.Result.Unchecked, "; ")
	}
	return plan(&p, a), warning, false
}

// plan is the patch from p to what a stores: its option values whole,
// when they differ, and the annotations one by one.
func plan(p *greenhouse.Plugin, a *greenhouse.Admission) []op {
	var ops []op
	if !sameOrder(p.Spec.OptionValues, a.OptionValues) {
		ops = append(ops, op{Op: "add", Path: "/spec/optionValues", Value: a.OptionValues})
	}
	want := a.Annotations()
	if p.Annotations == nil {
		set := map[string]string{}
		for k, v := range want {
			if v != "" {
				set[k] = v
			}
		}
		if len(set) > 0 {
			ops = append(ops, op{Op: "add", Path: "/metadata/annotations", Value: set})
		}
		return ops
	}
	for _, k := range []string{greenhouse.AnnotationAppliedOverrides, greenhouse.AnnotationWritten} {
		have, ok := p.Annotations[k]
		path := "/metadata/annotations/" + strings.ReplaceAll(k, "/", "~1")
		switch {
		case want[k] == "" && ok:
			ops = append(ops, op{Op: "remove", Path: path})
		case want[k] != "" && have != want[k]:
			ops = append(ops, op{Op: "add", Path: path, Value: want[k]})
		}
	}
	return ops
}

// sameOrder reports whether two lists of values are the same, in the same
// order, each value compared as JSON.
func sameOrder(a, b []greenhouse.OptionValue) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || greenhouse.Digest(a[i]) != greenhouse.Digest(b[i]) {
			return false
		}
	}
	return true
}
