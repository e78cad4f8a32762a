package namespaced

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestCheckConfigMap checks layer ConfigMaps as an admission webhook
// would: an invalid cluster ConfigMap and a namespace ConfigMap a parser
// refuses are errors naming the problem; refused keys are warnings, one
// per key, named as the tenant writes them; other ConfigMaps pass.
func TestCheckConfigMap(t *testing.T) {
	flags := configMap("pipelines", "feature-flags", nil, map[string]string{"per-namespace-configuration": "true", "non-overridable-fields": "config-defaults/default-service-account"})
	defaults := configMap("pipelines", "config-defaults", nil, map[string]string{"max-timeout-minutes": "120"})
	r, err := NewFromReader(newObjectReader(flags, defaults), pipelineOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := r.CheckConfigMap(ctx, defaults); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Errorf("before Start: %v", err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	tenant := func(name string, data map[string]string) *corev1.ConfigMap {
		return configMap("team", name, map[string]string{"pipeline-config": "true"}, data)
	}
	for _, tc := range []struct {
		name     string
		cm       *corev1.ConfigMap
		warnings []string
		err      string
	}{
		{"a valid tenant ConfigMap", tenant("ns-config-defaults", map[string]string{"default-timeout-minutes": "30"}), nil, ""},
		{"refused keys", tenant("ns-config-defaults", map[string]string{"default-timeout-minutes": "500", "default-service-account": "root", "unknown-key": "x"}), []string{
			`namespace team/ns-config-defaults: key "config-defaults/default-service-account" not applied: locked by the operator`,
			`namespace team/ns-config-defaults: key "config-defaults/default-timeout-minutes" not applied: above the operator's bound: 500 is not at most 120, cluster key config-defaults/max-timeout-minutes`,
			`namespace team/ns-config-defaults: key "config-defaults/unknown-key" not applied: not an overridable key`,
		}, ""},
		{"a tenant policy key", tenant("ns-feature-flags", map[string]string{"per-namespace-configuration": "yes"}), []string{
			`namespace team/ns-feature-flags: key "feature-flags/per-namespace-configuration" not applied: tenant policy key: only the cluster layer sets it`}, ""},
		{"an invalid cluster ConfigMap", configMap("pipelines", "feature-flags", nil, map[string]string{"enable-api-fields": "gamma"}), nil,
			`cluster ConfigMap pipelines/feature-flags: invalid value for feature flag "enable-api-fields": "gamma"`},
		{"a lock list typo", configMap("pipelines", "feature-flags", nil, map[string]string{"non-overridable-fields": "config-defaults/defualt-timeout-minutes"}), nil,
			`"config-defaults/defualt-timeout-minutes" is no key of section config-defaults`},
		{"a valid cluster ConfigMap", configMap("pipelines", "config-defaults", nil, map[string]string{"default-timeout-minutes": "20"}), nil, ""},
		{"another ConfigMap of the namespace", configMap("team", "app-settings", map[string]string{"pipeline-config": "true"}, map[string]string{"x": "y"}), nil, ""},
		{"a layer's name without the labels", configMap("team", "ns-config-defaults", nil, map[string]string{"default-timeout-minutes": "30"}), []string{
			"namespace team/ns-config-defaults is named as a namespace layer but lacks the labels pipeline-config=true: it is not applied"}, ""},
		{"a system namespace", configMap("kube-system", "ns-config-defaults", map[string]string{"pipeline-config": "true"}, map[string]string{"default-timeout-minutes": "x"}), nil, ""},
	} {
		warnings, err := r.CheckConfigMap(ctx, tc.cm)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		case strings.Join(warnings, "\n") != strings.Join(tc.warnings, "\n"):
			t.Errorf("%s: warnings\n%s\nwant\n%s", tc.name, strings.Join(warnings, "\n"), strings.Join(tc.warnings, "\n"))
		}
	}

	// A parser's error in a namespace layer denies it.
	r2opts := pipelineOptions()
	r2opts.Tenancy.Overridable = append(r2opts.Tenancy.Overridable, "feature-flags/enable-api-fields")
	r2opts.Tenancy.ClusterOnly = nil
	r2, err := NewFromReader(newObjectReader(flags, defaults), r2opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r2.Stop)
	if _, err := r2.CheckConfigMap(ctx, tenant("ns-feature-flags", map[string]string{"enable-api-fields": "gamma"})); err == nil ||
		!strings.Contains(err.Error(), `namespace team/ns-feature-flags: ignored: feature-flags: invalid value for feature flag "enable-api-fields": "gamma"`) {
		t.Errorf("a parser's error in a namespace layer: %v", err)
	}
}
