package tektonconfig_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/tektoncd/pipeline/pkg/apis/config"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/examples/tekton/tektonconfig"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
)

func cm(ns, name string, labels, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: data}
}

func tenantDefaults(ns string, data map[string]string) *corev1.ConfigMap {
	return cm(ns, tektonconfig.NamespaceDefaultsConfigMap, tektonconfig.Labels, data)
}

func tenantFlags(ns string, data map[string]string) *corev1.ConfigMap {
	return cm(ns, tektonconfig.NamespaceFeatureFlagsConfig, tektonconfig.Labels, data)
}

func clusterFlags(data map[string]string) *corev1.ConfigMap {
	return cm(tektonconfig.SystemNamespace, "feature-flags", nil, data)
}

var clusterDefaults = cm(tektonconfig.SystemNamespace, "config-defaults", nil, map[string]string{
	"default-timeout-minutes": "50", "default-service-account": "cluster-sa",
})

var open = map[string]string{"per-namespace-configuration": "true"}

// refusal is how a key was refused: "" for applied.
func refusal(s *namespaced.Snapshot[*tektonconfig.Config], key string) string {
	for _, d := range s.Rejected() {
		if d.Key == key {
			return d.Reason
		}
	}
	return ""
}

// TestNamespaceRules runs the rules of Tekton's per-namespace
// configuration (TEP-0085, PR #9517) case by case.
func TestNamespaceRules(t *testing.T) {
	r, err := namespaced.NewDryRun(tektonconfig.Options(tektonconfig.SystemNamespace))
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(t *testing.T, ns string, objs ...runtime.Object) *namespaced.Snapshot[*tektonconfig.Config] {
		t.Helper()
		s, err := r.Resolve(ns, objs)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	t.Run("the gate closed, or absent, applies the cluster's values", func(t *testing.T) {
		for _, flags := range []map[string]string{nil, {"per-namespace-configuration": "false"}} {
			s := resolve(t, "team", clusterDefaults, clusterFlags(flags), tenantDefaults("team", map[string]string{"default-timeout-minutes": "30"}))
			if s.Object.Defaults.DefaultTimeoutMinutes != 50 {
				t.Errorf("gate %v: timeout %d, want the cluster's 50", flags, s.Object.Defaults.DefaultTimeoutMinutes)
			}
		}
	})

	t.Run("every overridable key applies", func(t *testing.T) {
		defaults := map[string]string{
			"default-service-account":                 "team-sa",
			"default-timeout-minutes":                 "30",
			"default-managed-by-label-value":          "team-ci",
			"default-pod-template":                    "nodeSelector:\n  pool: builds\n",
			"default-task-run-workspace-binding":      "emptyDir: {}",
			"default-max-matrix-combinations-count":   "64",
			"default-imagepullbackoff-timeout":        "2m",
			"default-container-resource-requirements": "default:\n  requests:\n    memory: 64Mi\n",
		}
		flags := map[string]string{
			"running-in-environment-with-injected-sidecars": "false",
			"await-sidecar-readiness":                       "false",
			"max-result-size":                               "8192",
			"coschedule":                                    "disabled",
			"keep-pod-on-cancel":                            "true",
			"enable-cel-in-whenexpression":                  "true",
			"enable-artifacts":                              "true",
			"enable-param-enum":                             "true",
			"enable-kubernetes-sidecar":                     "true",
			"enable-wait-exponential-backoff":               "true",
		}
		alpha := map[string]string{"per-namespace-configuration": "true", "enable-api-fields": "alpha"} // the alpha flags' stability allowed
		s := resolve(t, "team", clusterDefaults, clusterFlags(alpha), tenantDefaults("team", defaults), tenantFlags("team", flags))
		if len(s.Rejected()) != 0 || len(s.Ignored()) != 0 {
			t.Fatalf("rejected %v, ignored %v", s.Rejected(), s.Ignored())
		}
		wantDefaults, _ := config.NewDefaultsFromMap(map[string]string{"default-service-account": "team-sa", "default-timeout-minutes": "30",
			"default-managed-by-label-value": "team-ci", "default-pod-template": defaults["default-pod-template"],
			"default-task-run-workspace-binding": "emptyDir: {}", "default-max-matrix-combinations-count": "64",
			"default-imagepullbackoff-timeout": "2m", "default-container-resource-requirements": defaults["default-container-resource-requirements"]})
		wantFlags, _ := config.NewFeatureFlagsFromMap(maps.Collect(func(yield func(string, string) bool) {
			for k, v := range flags {
				yield(k, v)
			}
			yield("enable-api-fields", "alpha") // the cluster's
		}))
		q := s.Object.Defaults.DefaultContainerResourceRequirements["default"].Requests[corev1.ResourceMemory]
		if !s.Object.Defaults.Equals(wantDefaults) || q.Cmp(resource.MustParse("64Mi")) != 0 {
			t.Errorf("defaults\n%+v\nwant\n%+v", s.Object.Defaults, wantDefaults)
		}
		if *s.Object.FeatureFlags != *wantFlags {
			t.Errorf("feature flags\n%+v\nwant\n%+v", s.Object.FeatureFlags, wantFlags)
		}
		for key := range defaults {
			if src, _ := s.Provenance().SourceOf("/config-defaults/" + key); src.Name != "team/tekton-config-defaults" {
				t.Errorf("%s from %s", key, src)
			}
		}
	})

	t.Run("keys tenants may never set", func(t *testing.T) {
		never := []string{"enforce-nonfalsifiability", "set-security-context", "set-security-context-read-only-root-filesystem",
			"trusted-resources-verification-no-match-policy", "disable-creds-init", "disable-inline-spec", "results-from"}
		flags := map[string]string{}
		for _, k := range never {
			flags[k] = "x"
		}
		flags["per-namespace-configuration"] = "false"
		flags["non-overridable-fields"] = "coschedule"
		flags["enable-api-fields"] = "alpha"
		defaults := map[string]string{"default-forbidden-env": "A", "default-sidecar-log-polling-interval": "1s", "default-step-ref-concurrency-limit": "9"}
		s := resolve(t, "team", clusterDefaults, clusterFlags(open), tenantDefaults("team", defaults), tenantFlags("team", flags))
		for _, k := range never {
			if got := refusal(s, "feature-flags/"+k); got != tenancy.ReasonNotOverridable {
				t.Errorf("%s: %q", k, got)
			}
		}
		for _, k := range []string{"per-namespace-configuration", "non-overridable-fields", "enable-api-fields"} {
			if got := refusal(s, "feature-flags/"+k); got != tenancy.ReasonPolicyKey {
				t.Errorf("%s: %q", k, got)
			}
		}
		for k := range defaults {
			if got := refusal(s, "config-defaults/"+k); got != tenancy.ReasonNotOverridable {
				t.Errorf("%s: %q", k, got)
			}
		}
		if len(s.Ignored()) != 0 || s.Object.FeatureFlags.EnableAPIFields != "beta" {
			t.Errorf("the refused keys changed something: ignored %v, api fields %q", s.Ignored(), s.Object.FeatureFlags.EnableAPIFields)
		}
	})

	t.Run("a tenant's alpha or beta flag applies only at a stability the cluster allows", func(t *testing.T) {
		// enable-artifacts is alpha and keep-pod-on-cancel beta, as
		// Tekton's own PerFeatureFlag definitions say.
		if config.DefaultEnableArtifacts.Stability != config.AlphaAPIFields || config.DefaultEnableKeepPodOnCancel.Stability != config.BetaAPIFields {
			t.Fatal("Tekton's stabilities changed: the table below no longer tests what it says")
		}
		tenant := tenantFlags("team", map[string]string{"enable-artifacts": "true", "keep-pod-on-cancel": "true"})
		for _, tc := range []struct {
			level       string // the cluster's enable-api-fields; "" leaves it to Tekton's default, beta
			alpha, beta string // the refusal of each flag: "" applied
		}{
			{"stable", tenancy.ReasonAlpha, tenancy.ReasonBeta},
			{"beta", tenancy.ReasonAlpha, ""},
			{"alpha", "", ""},
			{"", tenancy.ReasonAlpha, ""},
		} {
			flags := map[string]string{"per-namespace-configuration": "true"}
			if tc.level != "" {
				flags["enable-api-fields"] = tc.level
			}
			s := resolve(t, "team", clusterDefaults, clusterFlags(flags), tenant)
			if got := refusal(s, "feature-flags/enable-artifacts"); got != tc.alpha || s.Object.FeatureFlags.EnableArtifacts != (tc.alpha == "") {
				t.Errorf("cluster at %q: enable-artifacts refused %q, applied %v; want refused %q", tc.level, got, s.Object.FeatureFlags.EnableArtifacts, tc.alpha)
			}
			if got := refusal(s, "feature-flags/keep-pod-on-cancel"); got != tc.beta || s.Object.FeatureFlags.EnableKeepPodOnCancel != (tc.beta == "") {
				t.Errorf("cluster at %q: keep-pod-on-cancel refused %q, applied %v; want refused %q", tc.level, got, s.Object.FeatureFlags.EnableKeepPodOnCancel, tc.beta)
			}
		}
	})

	t.Run("the operator's lock list, comma-separated, spaces trimmed, governs both sections", func(t *testing.T) {
		flags := map[string]string{"per-namespace-configuration": "true", "non-overridable-fields": " default-service-account ,coschedule,, "}
		s := resolve(t, "team", clusterDefaults, clusterFlags(flags),
			tenantDefaults("team", map[string]string{"default-service-account": "root", "default-timeout-minutes": "30"}),
			tenantFlags("team", map[string]string{"coschedule": "disabled", "keep-pod-on-cancel": "true"}))
		if refusal(s, "config-defaults/default-service-account") != tenancy.ReasonLocked || refusal(s, "feature-flags/coschedule") != tenancy.ReasonLocked {
			t.Errorf("rejected %v", s.Rejected())
		}
		if s.Object.Defaults.DefaultServiceAccount != "cluster-sa" || s.Object.Defaults.DefaultTimeoutMinutes != 30 || !s.Object.FeatureFlags.EnableKeepPodOnCancel {
			t.Errorf("%+v %+v", s.Object.Defaults, s.Object.FeatureFlags)
		}
		// A lock list naming no key is the operator's typo: the cluster
		// configuration is invalid, never a key left open.
		if _, err := r.Resolve("team", []runtime.Object{clusterDefaults, clusterFlags(map[string]string{"non-overridable-fields": "default-service-acount"})}); err == nil ||
			!strings.Contains(err.Error(), `"default-service-acount" is no key of any section`) {
			t.Errorf("a lock list typo: %v", err)
		}
	})

	t.Run("_example is never a key", func(t *testing.T) {
		s := resolve(t, "team", clusterDefaults, clusterFlags(open), tenantDefaults("team", map[string]string{"_example": "default-timeout-minutes: \"1\"", "default-timeout-minutes": "30"}))
		if len(s.Rejected()) != 0 || s.Object.Defaults.DefaultTimeoutMinutes != 30 {
			t.Errorf("rejected %v, timeout %d", s.Rejected(), s.Object.Defaults.DefaultTimeoutMinutes)
		}
	})

	t.Run("system namespaces take no namespace layer", func(t *testing.T) {
		for _, ns := range []string{"tekton-pipelines", "kube-system", "kube-public"} {
			s := resolve(t, ns, clusterDefaults, clusterFlags(open), tenantDefaults(ns, map[string]string{"default-timeout-minutes": "30"}))
			if s.Object.Defaults.DefaultTimeoutMinutes != 50 {
				t.Errorf("%s: timeout %d, want the cluster's", ns, s.Object.Defaults.DefaultTimeoutMinutes)
			}
		}
	})

	t.Run("both labels are required", func(t *testing.T) {
		for _, ls := range []map[string]string{
			{"tekton.dev/pipeline-config": "true"},
			{"app.kubernetes.io/part-of": "tekton-pipelines"},
		} {
			s := resolve(t, "team", clusterDefaults, clusterFlags(open), cm("team", tektonconfig.NamespaceDefaultsConfigMap, ls, map[string]string{"default-timeout-minutes": "30"}))
			if s.Object.Defaults.DefaultTimeoutMinutes != 50 {
				t.Errorf("labels %v: timeout %d, want the cluster's", ls, s.Object.Defaults.DefaultTimeoutMinutes)
			}
		}
	})

	t.Run("an invalid namespace ConfigMap is refused as a whole; the other section stays", func(t *testing.T) {
		s := resolve(t, "team", clusterDefaults, clusterFlags(open),
			tenantDefaults("team", map[string]string{"default-timeout-minutes": "abc", "default-service-account": "team-sa"}),
			tenantFlags("team", map[string]string{"coschedule": "disabled"}))
		if s.Object.Defaults.DefaultTimeoutMinutes != 50 || s.Object.Defaults.DefaultServiceAccount != "cluster-sa" || s.Object.FeatureFlags.Coschedule != "disabled" {
			t.Errorf("%+v %+v", s.Object.Defaults, s.Object.FeatureFlags)
		}
		var le *namespaced.LayerError
		if len(s.Ignored()) != 1 || !errors.As(s.Ignored()[0], &le) || le.Source.Name != "team/tekton-config-defaults" ||
			!strings.Contains(le.Err.Error(), `failed parsing default config "default-timeout-minutes"`) {
			t.Errorf("ignored %v", s.Ignored())
		}
	})

	t.Run("invalid cluster ConfigMaps are an error", func(t *testing.T) {
		for _, objs := range [][]runtime.Object{
			{cm(tektonconfig.SystemNamespace, "config-defaults", nil, map[string]string{"default-timeout-minutes": "abc"}), clusterFlags(open)},
			{clusterDefaults, clusterFlags(map[string]string{"enable-api-fields": "gamma"})},
			{clusterDefaults, clusterFlags(map[string]string{"per-namespace-configuration": "maybe"})},
		} {
			if _, err := r.Resolve("team", objs); err == nil {
				t.Errorf("%v: no error", objs)
			}
		}
	})
}

// TestTenantMayTurnAFeatureOff: TEP-0085 says a namespace "cannot enable
// an alpha-stability feature" the cluster's enable-api-fields does not
// allow, and PR #9517 applies every allow-listed key: with the cluster at
// beta and enable-artifacts (alpha) on cluster-wide, a namespace turns it
// off; with it off cluster-wide, turning it on stays refused.
func TestTenantMayTurnAFeatureOff(t *testing.T) {
	r, err := namespaced.NewDryRun(tektonconfig.Options(tektonconfig.SystemNamespace))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ cluster, tenant string }{{"true", "false"}, {"false", "true"}} {
		flags := clusterFlags(map[string]string{"per-namespace-configuration": "true", "enable-api-fields": "beta", "enable-artifacts": c.cluster})
		s, err := r.Resolve("team", []runtime.Object{clusterDefaults, flags, tenantFlags("team", map[string]string{"enable-artifacts": c.tenant})})
		if err != nil {
			t.Fatal(err)
		}
		refused := refusal(s, "feature-flags/enable-artifacts")
		if s.Object.FeatureFlags.EnableArtifacts || (refused == "") != (c.tenant == "false") {
			t.Errorf("cluster %s, namespace %s: enable-artifacts %t, refused %q; want off, refused only turning it on", c.cluster, c.tenant, s.Object.FeatureFlags.EnableArtifacts, refused)
		}
	}
}

// TestBinaryDataIsNotTektonConfiguration: Tekton's constructors, and PR
// #9517's lister, read a ConfigMap's Data only: a tenant's gzip'd
// binaryData key is no override, any other binaryData leaves its Data
// applied, and a cluster ConfigMap with binaryData is as valid as its
// Data, as for Tekton's store.
func TestBinaryDataIsNotTektonConfiguration(t *testing.T) {
	r, err := namespaced.NewDryRun(tektonconfig.Options(tektonconfig.SystemNamespace))
	if err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte("5"))
	zw.Close()
	for name, binary := range map[string]map[string][]byte{
		"gzip'd":   {"default-timeout-minutes": zipped.Bytes()},
		"an image": {"logo.png": {0x89, 'P', 'N', 'G'}},
	} {
		tenant := tenantDefaults("team", map[string]string{"default-service-account": "team-sa"})
		tenant.BinaryData = binary
		s, err := r.Resolve("team", []runtime.Object{clusterDefaults, clusterFlags(open), tenant})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := config.NewDefaultsFromMap(map[string]string{"default-timeout-minutes": clusterDefaults.Data["default-timeout-minutes"], "default-service-account": "team-sa"})
		if got := s.Object.Defaults; got.DefaultTimeoutMinutes != want.DefaultTimeoutMinutes || got.DefaultServiceAccount != "team-sa" || len(s.Ignored()) > 0 {
			t.Errorf("%s binaryData: timeout %d, service account %q, ignored %v; Tekton: %d, team-sa", name, got.DefaultTimeoutMinutes, got.DefaultServiceAccount, s.Ignored(), want.DefaultTimeoutMinutes)
		}
	}
	flags := clusterFlags(map[string]string{"enable-api-fields": "alpha"})
	flags.BinaryData = map[string][]byte{"notes": {0, 1, 2}}
	if s, err := r.Resolve("team", []runtime.Object{clusterDefaults, flags}); err != nil || s.Object.FeatureFlags.EnableAPIFields != "alpha" {
		t.Errorf("a cluster ConfigMap with binaryData: %v", err)
	}
}

// TestTenantErrorNamesTheKey: a tenant's invalid value ignores its layer
// with an error naming the ConfigMap, the key and the problem, where
// Tekton's constructor names no key (a boolean, max-result-size, a YAML
// key).
func TestTenantErrorNamesTheKey(t *testing.T) {
	r, err := namespaced.NewDryRun(tektonconfig.Options(tektonconfig.SystemNamespace))
	if err != nil {
		t.Fatal(err)
	}
	alpha := map[string]string{"per-namespace-configuration": "true", "enable-api-fields": "alpha"}
	for _, c := range []struct{ cm, key, value string }{
		{tektonconfig.NamespaceFeatureFlagsConfig, "await-sidecar-readiness", "yes"},
		{tektonconfig.NamespaceFeatureFlagsConfig, "max-result-size", "4k"},
		{tektonconfig.NamespaceDefaultsConfigMap, "default-pod-template", "nodeSelector: [a"},
	} {
		tenant := tenantFlags("team", map[string]string{c.key: c.value, "enable-artifacts": "true"})
		if c.cm == tektonconfig.NamespaceDefaultsConfigMap {
			tenant = tenantDefaults("team", map[string]string{c.key: c.value, "default-service-account": "sa"})
		}
		s, err := r.Resolve("team", []runtime.Object{clusterDefaults, clusterFlags(alpha), tenant})
		if err != nil {
			t.Fatal(err)
		}
		if ig := s.Ignored(); len(ig) != 1 || !strings.Contains(ig[0].Error(), "team/"+c.cm) || !strings.Contains(ig[0].Error(), `"`+c.key+`"`) {
			t.Errorf("%s: %q: ignored %v; want one error naming the ConfigMap and the key", c.cm, c.key, ig)
		}
	}
}

// TestTenantMayTurnAFeatureOffAsTektonReadsFalse: TEP-0085's safeguard
// lets a tenant turn an alpha or beta feature off whatever the cluster's
// enable-api-fields, with any value Tekton's own constructor reads as
// false (strconv.ParseBool's "0", "f", "F", "FALSE", "False", "false").
func TestTenantMayTurnAFeatureOffAsTektonReadsFalse(t *testing.T) {
	r, err := namespaced.NewDryRun(tektonconfig.Options(tektonconfig.SystemNamespace))
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []string{"0", "f", "F", "FALSE", "False", "false"} {
		if v, err := strconv.ParseBool(off); err != nil || v {
			t.Fatalf("%q: Tekton's ParseBool gives %t, %v", off, v, err)
		}
		flags := clusterFlags(map[string]string{"per-namespace-configuration": "true", "enable-api-fields": "beta", "enable-artifacts": "true"})
		s, err := r.Resolve("team", []runtime.Object{clusterDefaults, flags, tenantFlags("team", map[string]string{"enable-artifacts": off})})
		if err != nil {
			t.Fatal(err)
		}
		if refused := refusal(s, "feature-flags/enable-artifacts"); refused != "" || s.Object.FeatureFlags.EnableArtifacts {
			t.Errorf("namespace enable-artifacts %q (false to Tekton): refused %q, enable-artifacts %t; want applied, off", off, refused, s.Object.FeatureFlags.EnableArtifacts)
		}
	}
}
