package namespaced

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
)

// pipelineConfig is a configuration in the knative pattern: two sections,
// each filled by a hand-written constructor over a ConfigMap's data, as
// Tekton's config.Defaults and config.FeatureFlags are.
type pipelineConfig struct {
	Defaults *pipelineDefaults
	Flags    *pipelineFlags
}

type pipelineDefaults struct {
	TimeoutMinutes int
	ServiceAccount string
}

type pipelineFlags struct {
	PerNamespace bool
	Locked       string
	APIFields    string
}

func newDefaults(data map[string]string) (*pipelineDefaults, error) {
	d := &pipelineDefaults{TimeoutMinutes: 60, ServiceAccount: "default"}
	if v, ok := data["default-timeout-minutes"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("failed parsing default config %q: %v", "default-timeout-minutes", err)
		}
		d.TimeoutMinutes = n
	}
	if v, ok := data["default-service-account"]; ok {
		d.ServiceAccount = v
	}
	return d, nil
}

func newFlags(data map[string]string) (*pipelineFlags, error) {
	f := &pipelineFlags{APIFields: "beta"}
	if v, ok := data["per-namespace-configuration"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, err
		}
		f.PerNamespace = b
	}
	f.Locked = data["non-overridable-fields"]
	if v, ok := data["enable-api-fields"]; ok {
		switch v = strings.ToLower(v); v {
		case "alpha", "beta", "stable":
			f.APIFields = v
		default:
			return nil, fmt.Errorf("invalid value for feature flag %q: %q", "enable-api-fields", v)
		}
	}
	return f, nil
}

func pipelineOptions() Options[*pipelineConfig] {
	return Options[*pipelineConfig]{
		Namespace: "pipelines",
		Labels:    map[string]string{"pipeline-config": "true"},
		Parsed: &Parsed[*pipelineConfig]{
			New: func() *pipelineConfig { return &pipelineConfig{} },
			Sections: []Section[*pipelineConfig]{
				{Name: "config-defaults", ClusterConfigMap: "config-defaults", NamespaceConfigMap: "ns-config-defaults",
					Parse: FromMap(newDefaults, func(c *pipelineConfig, d *pipelineDefaults) { c.Defaults = d }),
					Keys:  []string{"default-timeout-minutes", "default-service-account", "max-timeout-minutes"}},
				{Name: "feature-flags", ClusterConfigMap: "feature-flags", NamespaceConfigMap: "ns-feature-flags",
					Parse: FromMap(newFlags, func(c *pipelineConfig, f *pipelineFlags) { c.Flags = f }),
					Keys:  []string{"per-namespace-configuration", "non-overridable-fields", "enable-api-fields"}},
			},
		},
		Tenancy: tenancy.Policy{
			GateKey: "feature-flags/per-namespace-configuration", GateOpen: "true", GateClosed: "false",
			LockKey:     "feature-flags/non-overridable-fields",
			Overridable: []string{"config-defaults/default-timeout-minutes", "config-defaults/default-service-account"},
			ClusterOnly: []string{"feature-flags/enable-api-fields"},
			Bounds:      []tenancy.Bound{{Key: "config-defaults/default-timeout-minutes", AtMostKey: "config-defaults/max-timeout-minutes", AtMost: "1440", AtLeast: "1"}},
		},
	}
}

// TestParsedSections resolves a configuration of two sections read by
// constructors: one snapshot holds both, the gate and lock list in one
// section govern the other, provenance is per SECTION/KEY, bounds refuse
// with the bound named, and a constructor's error refuses the layer that
// caused it.
func TestParsedSections(t *testing.T) {
	r := newDryRun(t, pipelineOptions())
	defaults := configMap("pipelines", "config-defaults", nil, map[string]string{"default-timeout-minutes": "50", "max-timeout-minutes": "120", "_example": "ignored"})
	flags := func(data map[string]string) runtime.Object { return configMap("pipelines", "feature-flags", nil, data) }
	tenant := func(name string, data map[string]string) runtime.Object {
		return configMap("team", name, map[string]string{"pipeline-config": "true"}, data)
	}
	resolve := func(objs ...runtime.Object) *Snapshot[*pipelineConfig] {
		t.Helper()
		s, err := r.Resolve("team", objs)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	rejected := func(s *Snapshot[*pipelineConfig]) string {
		var out []string
		for _, d := range s.Rejected() {
			out = append(out, d.String())
		}
		for _, e := range s.Ignored() {
			out = append(out, e.Error())
		}
		return strings.Join(out, "\n")
	}

	// The gate closed: the namespace gets the cluster's values.
	s := resolve(defaults, flags(map[string]string{"enable-api-fields": "alpha"}), tenant("ns-config-defaults", map[string]string{"default-timeout-minutes": "30"}))
	if s.Object.Defaults.TimeoutMinutes != 50 || s.Object.Flags.APIFields != "alpha" || s.Object.Defaults.ServiceAccount != "default" {
		t.Errorf("gate closed: %+v %+v", s.Object.Defaults, s.Object.Flags)
	}

	// The gate open, the service account locked from the other section,
	// named without its section as Tekton's lock list names keys.
	open := flags(map[string]string{"per-namespace-configuration": "true", "non-overridable-fields": " default-service-account "})
	s = resolve(defaults, open,
		tenant("ns-config-defaults", map[string]string{"default-timeout-minutes": "30", "default-service-account": "root"}),
		tenant("ns-feature-flags", map[string]string{"enable-api-fields": "alpha"}))
	if s.Object.Defaults.TimeoutMinutes != 30 || s.Object.Defaults.ServiceAccount != "default" || s.Object.Flags.APIFields != "beta" {
		t.Errorf("gate open: %+v %+v", s.Object.Defaults, s.Object.Flags)
	}
	if src, _ := s.Provenance().SourceOf("/config-defaults/default-timeout-minutes"); src.String() != "namespace team/ns-config-defaults" {
		t.Errorf("timeout from %s", src)
	}
	if got := rejected(s); !strings.Contains(got, `key "config-defaults/default-service-account" dropped: locked by the operator`) ||
		!strings.Contains(got, `key "feature-flags/enable-api-fields" dropped: cluster-only key`) {
		t.Errorf("rejected:\n%s", got)
	}

	// Bounds: above the cluster's maximum, and below the constant minimum.
	for _, tc := range []struct{ value, want string }{
		{"121", "above the operator's bound: 121 is not at most 120, cluster key config-defaults/max-timeout-minutes"},
		{"0", "below the operator's bound: 0 is not at least 1, the system's bound"},
		{"ten", `above the operator's bound: "ten" is neither a number nor a duration`},
	} {
		s = resolve(defaults, open, tenant("ns-config-defaults", map[string]string{"default-timeout-minutes": tc.value}))
		if s.Object.Defaults.TimeoutMinutes != 50 || !strings.Contains(rejected(s), tc.want) {
			t.Errorf("timeout %s: got %d, rejected\n%s\nwant %q", tc.value, s.Object.Defaults.TimeoutMinutes, rejected(s), tc.want)
		}
	}
	// With no cluster maximum, the constant applies.
	s = resolve(configMap("pipelines", "config-defaults", nil, nil), open, tenant("ns-config-defaults", map[string]string{"default-timeout-minutes": "1441"}))
	if !strings.Contains(rejected(s), "1441 is not at most 1440, the system's bound") {
		t.Errorf("the system's bound: %s", rejected(s))
	}

	// A constructor's error refuses the layer that caused it, named; the
	// other section's layer stays.
	badFlags := flags(map[string]string{"per-namespace-configuration": "true"})
	r2opts := pipelineOptions()
	r2opts.Tenancy.Overridable = append(r2opts.Tenancy.Overridable, "feature-flags/enable-api-fields")
	r2opts.Tenancy.ClusterOnly = nil
	s, err := newDryRun(t, r2opts).Resolve("team", []runtime.Object{defaults, badFlags,
		tenant("ns-config-defaults", map[string]string{"default-timeout-minutes": "45"}),
		tenant("ns-feature-flags", map[string]string{"enable-api-fields": "gamma"})})
	if err != nil {
		t.Fatal(err)
	}
	if s.Object.Defaults.TimeoutMinutes != 45 || s.Object.Flags.APIFields != "beta" || len(s.Ignored()) != 1 ||
		!strings.Contains(s.Ignored()[0].Error(), `namespace team/ns-feature-flags: ignored: feature-flags: invalid value for feature flag "enable-api-fields": "gamma"`) {
		t.Errorf("a constructor's error: %+v %+v, ignored %v", s.Object.Defaults, s.Object.Flags, s.Ignored())
	}

	// An invalid cluster section is an error naming its ConfigMap.
	if _, err := r.Resolve("team", []runtime.Object{defaults, flags(map[string]string{"enable-api-fields": "gamma"})}); err == nil ||
		!strings.Contains(err.Error(), "cluster ConfigMap pipelines/feature-flags: invalid value") {
		t.Errorf("an invalid cluster section: %v", err)
	}
	// A lock list naming no key of a section.
	if _, err := r.Resolve("team", []runtime.Object{defaults, flags(map[string]string{"non-overridable-fields": "config-defaults/typo"})}); err == nil ||
		!strings.Contains(err.Error(), `key "feature-flags/non-overridable-fields": "config-defaults/typo" is no key of section config-defaults`) {
		t.Errorf("a lock list typo: %v", err)
	}
}

// TestParsedOptions refuses options that cannot work, each named.
func TestParsedOptions(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*Options[*pipelineConfig])
		want   string
	}{
		{func(o *Options[*pipelineConfig]) { o.ClusterConfigMap = "x" }, "leave ClusterConfigMap and NamespaceConfigMaps empty"},
		{func(o *Options[*pipelineConfig]) { o.Parsed.Sections[1].Name = "config-defaults" }, "section config-defaults is declared twice"},
		{func(o *Options[*pipelineConfig]) { o.Tenancy.GateKey = "feature-flags/nope" }, `GateKey: "feature-flags/nope" is no key of section feature-flags`},
		{func(o *Options[*pipelineConfig]) { o.Tenancy.Overridable = []string{"nosection/x"} }, `Overridable: "nosection/x": no section nosection`},
		{func(o *Options[*pipelineConfig]) { o.Tenancy.Bounds[0].AtMost = "lots" }, `Bounds[0]: "lots" is neither a number nor a duration`},
	} {
		o := pipelineOptions()
		tc.mutate(&o)
		if _, err := NewDryRun(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}

// TestParsedStability gates a section's alpha and beta keys by the
// cluster's stability level, as fields marked alpha and beta are gated,
// the level absent read as StabilityDefault.
func TestParsedStability(t *testing.T) {
	type flags map[string]string
	o := Options[*flags]{
		Namespace: "pipelines",
		Labels:    map[string]string{"pipeline-config": "true"},
		Parsed: &Parsed[*flags]{
			New: func() *flags { return &flags{} },
			Sections: []Section[*flags]{{Name: "feature-flags", ClusterConfigMap: "feature-flags", NamespaceConfigMap: "ns-feature-flags",
				Parse: func(data map[string]string, f *flags) error { *f = data; return nil },
				Alpha: []string{"enable-artifacts"}, Beta: []string{"keep-pod-on-cancel"}}},
		},
		Tenancy: tenancy.Policy{GateKey: "feature-flags/per-namespace-configuration", GateOpen: "true", GateClosed: "false",
			StabilityKey: "feature-flags/enable-api-fields", StabilityDefault: "beta",
			Overridable: []string{"feature-flags/enable-artifacts", "feature-flags/keep-pod-on-cancel", "feature-flags/coschedule"}},
	}
	r, err := NewDryRun(o)
	if err != nil {
		t.Fatal(err)
	}
	tenant := configMap("team", "ns-feature-flags", map[string]string{"pipeline-config": "true"},
		map[string]string{"enable-artifacts": "true", "keep-pod-on-cancel": "true", "coschedule": "pipelineruns"})
	for _, tc := range []struct {
		level       string // "" leaves the key out
		alpha, beta string // the refusal of each: "" applied
	}{
		{level: "stable", alpha: tenancy.ReasonAlpha, beta: tenancy.ReasonBeta},
		{level: "beta", alpha: tenancy.ReasonAlpha},
		{level: "alpha"},
		{level: "", alpha: tenancy.ReasonAlpha}, // StabilityDefault: beta
	} {
		cluster := map[string]string{"per-namespace-configuration": "true"}
		if tc.level != "" {
			cluster["enable-api-fields"] = tc.level
		}
		s, err := r.Resolve("team", []runtime.Object{configMap("pipelines", "feature-flags", nil, cluster), tenant})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, d := range s.Rejected() {
			got[d.Key] = d.Reason
		}
		if got["feature-flags/enable-artifacts"] != tc.alpha || got["feature-flags/keep-pod-on-cancel"] != tc.beta || got["feature-flags/coschedule"] != "" {
			t.Errorf("cluster at %q: refused %v, want the alpha key %q, the beta key %q", tc.level, got, tc.alpha, tc.beta)
		}
		if applied := (*s.Object)["enable-artifacts"] == "true"; applied != (tc.alpha == "") {
			t.Errorf("cluster at %q: enable-artifacts applied %v", tc.level, applied)
		}
	}
	// The level in any case, as Tekton reads enable-api-fields.
	s, err := r.Resolve("team", []runtime.Object{configMap("pipelines", "feature-flags", nil,
		map[string]string{"per-namespace-configuration": "true", "enable-api-fields": "Alpha"}), tenant})
	if err != nil || len(s.Rejected()) != 0 {
		t.Errorf("a level in capitals: %v, rejected %v", err, s.Rejected())
	}
	// A level that is none is the cluster's error; when the section's
	// parser refuses it too, both are named, the parser's words first.
	_, err = r.Resolve("team", []runtime.Object{configMap("pipelines", "feature-flags", nil,
		map[string]string{"per-namespace-configuration": "true", "enable-api-fields": "gamma"})})
	if err == nil || !strings.Contains(err.Error(), `key "feature-flags/enable-api-fields": "gamma" is none of stable, beta, alpha`) {
		t.Errorf("a level that is none: %v", err)
	}
	po := pipelineOptions()
	po.Tenancy.StabilityKey = "feature-flags/enable-api-fields"
	pd, err := NewDryRun(po)
	if err != nil {
		t.Fatal(err)
	}
	_, err = pd.Resolve("team", []runtime.Object{configMap("pipelines", "feature-flags", nil, map[string]string{"enable-api-fields": "gamma"})})
	if msg := fmt.Sprint(err); !strings.HasPrefix(msg, `cluster ConfigMap pipelines/feature-flags: invalid value for feature flag "enable-api-fields": "gamma"; `) ||
		!strings.Contains(msg, `key "feature-flags/enable-api-fields": "gamma" is none of stable, beta, alpha`) {
		t.Errorf("refused by the parser and the policy: %v", err)
	}
	for _, tc := range []struct {
		mutate func(*Options[*flags])
		want   string
	}{
		{func(o *Options[*flags]) { o.Tenancy.StabilityDefault = "gamma" }, `StabilityDefault: "gamma"`},
		{func(o *Options[*flags]) { o.Tenancy.StabilityKey = "" }, "StabilityDefault without a StabilityKey"},
		{func(o *Options[*flags]) { o.Parsed.Sections[0].Beta = []string{"enable-artifacts"} }, "enable-artifacts is both alpha and beta"},
	} {
		bad := o
		bad.Parsed = &Parsed[*flags]{New: o.Parsed.New, Sections: slices.Clone(o.Parsed.Sections)}
		tc.mutate(&bad)
		if _, err := NewDryRun(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}

// TestTenantKeys publishes what tenants may set, worked out by the
// policy, and every refusal a tenant reads points to where it is
// published.
func TestTenantKeys(t *testing.T) {
	o := pipelineOptions()
	o.TenantKeysDoc = "pipeline-config keys"
	flags := configMap("pipelines", "feature-flags", nil, map[string]string{"per-namespace-configuration": "true", "non-overridable-fields": "default-service-account"})
	d, err := NewDryRun(o)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := d.TenantKeys([]runtime.Object{flags})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"config-defaults/default-timeout-minutes":   "",
		"config-defaults/default-service-account":   tenancy.ReasonLocked,
		"config-defaults/max-timeout-minutes":       tenancy.ReasonNotOverridable,
		"feature-flags/per-namespace-configuration": tenancy.ReasonPolicyKey,
		"feature-flags/non-overridable-fields":      tenancy.ReasonPolicyKey,
		"feature-flags/enable-api-fields":           tenancy.ReasonClusterOnly,
	}
	got := map[string]string{}
	for k, ref := range keys.Keys {
		got[k] = ref.Reason
	}
	if !keys.Open || !maps.Equal(got, want) {
		t.Errorf("open %v, keys %v; want %v", keys.Open, got, want)
	}
	if _, err := d.TenantKeys([]runtime.Object{configMap("pipelines", "feature-flags", nil, map[string]string{"per-namespace-configuration": "maybe"})}); err == nil {
		t.Error("an invalid cluster ConfigMap: no error")
	}
	if _, err := d.TenantKeys([]runtime.Object{flags, flags.DeepCopy()}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("a cluster ConfigMap given twice: %v", err)
	}

	r, err := NewFromReader(newObjectReader(flags), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	warnings, err := r.CheckConfigMap(context.Background(), configMap("team", "ns-config-defaults", map[string]string{"pipeline-config": "true"},
		map[string]string{"max-timeout-minutes": "9"}))
	if err != nil || len(warnings) != 1 || !strings.HasSuffix(warnings[0], "not an overridable key; what tenants may set: pipeline-config keys") {
		t.Errorf("warnings %q, %v", warnings, err)
	}
}

// TestParsedSelectorLayers rolls a value out to labelled namespaces first
// (a canary) for a Parsed kind: a selector ConfigMap names its section,
// applies to the namespaces it selects above the cluster's values and
// below the namespace's own, ranked as for a Kind, with provenance; one
// naming no section, or one that is not, is ignored where it applies.
func TestParsedSelectorLayers(t *testing.T) {
	o := pipelineOptions()
	o.Selectors = &Selectors{Labels: map[string]string{"pipeline-selector": "true"}}
	d, err := NewDryRun(o)
	if err != nil {
		t.Fatal(err)
	}
	selector := func(name, sel, section string, data map[string]string) *corev1.ConfigMap {
		cm := configMap("pipelines", name, map[string]string{"pipeline-selector": "true"}, data)
		cm.Annotations = map[string]string{"config.strata.dev/namespace-selector": sel}
		if section != "" {
			cm.Annotations["config.strata.dev/section"] = section
		}
		return cm
	}
	ns := func(name string, labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	cluster := []runtime.Object{
		configMap("pipelines", "config-defaults", nil, map[string]string{"default-timeout-minutes": "60"}),
		configMap("pipelines", "feature-flags", nil, map[string]string{"per-namespace-configuration": "true"}),
		selector("canary", "canary=true", "config-defaults", map[string]string{"default-timeout-minutes": "20"}),
		selector("canary-gold", "canary=true,tier=gold", "config-defaults", map[string]string{"default-timeout-minutes": "10"}),
		selector("no-section", "canary=true", "", map[string]string{"default-timeout-minutes": "5"}),
		selector("bad-section", "canary=true", "nope", map[string]string{"default-timeout-minutes": "5"}),
	}
	resolve := func(name string, labels map[string]string, own ...runtime.Object) *Snapshot[*pipelineConfig] {
		t.Helper()
		s, err := d.Resolve(name, append(append(slices.Clip(cluster), ns(name, labels)), own...))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := resolve("plain", nil); s.Object.Defaults.TimeoutMinutes != 60 || len(s.Ignored()) != 0 {
		t.Errorf("a namespace no selector selects: %d, ignored %v", s.Object.Defaults.TimeoutMinutes, s.Ignored())
	}
	s := resolve("early", map[string]string{"canary": "true"})
	src, _ := s.Provenance().SourceOf("/config-defaults/default-timeout-minutes")
	if s.Object.Defaults.TimeoutMinutes != 20 || src.Origin != OriginSelector || src.Name != "pipelines/canary" {
		t.Errorf("a canary: %d from %s", s.Object.Defaults.TimeoutMinutes, src)
	}
	var ignored []string
	for _, err := range s.Ignored() {
		ignored = append(ignored, err.Error())
	}
	if len(ignored) != 2 || !strings.Contains(strings.Join(ignored, "\n"), `selector pipelines/bad-section: ignored: annotation config.strata.dev/section: section "nope" is none of config-defaults, feature-flags`) ||
		!strings.Contains(strings.Join(ignored, "\n"), `selector pipelines/no-section: ignored: annotation config.strata.dev/section: section "" is none of`) {
		t.Errorf("ignored %q", ignored)
	}
	// The more specific selector ranks above; the namespace's own above
	// both.
	if s := resolve("gold", map[string]string{"canary": "true", "tier": "gold"}); s.Object.Defaults.TimeoutMinutes != 10 {
		t.Errorf("two terms over one: %d", s.Object.Defaults.TimeoutMinutes)
	}
	own := configMap("mine", "ns-config-defaults", map[string]string{"pipeline-config": "true"}, map[string]string{"default-timeout-minutes": "30"})
	if s := resolve("mine", map[string]string{"canary": "true"}, own); s.Object.Defaults.TimeoutMinutes != 30 {
		t.Errorf("the namespace's own: %d", s.Object.Defaults.TimeoutMinutes)
	}
	// A selector layer is the operator's: it may set what tenants may not,
	// but not a policy key.
	withGate := append(slices.Clip(cluster), selector("gate", "canary=true", "feature-flags", map[string]string{"per-namespace-configuration": "false"}),
		selector("max", "canary=true", "config-defaults", map[string]string{"max-timeout-minutes": "90"}))
	s, err = d.Resolve("early", append(withGate, ns("early", map[string]string{"canary": "true"})))
	if err != nil {
		t.Fatal(err)
	}
	rejected := map[string]string{}
	for _, r := range s.Rejected() {
		rejected[r.Key] = r.Reason
	}
	if src, _ := s.Provenance().SourceOf("/config-defaults/max-timeout-minutes"); rejected["feature-flags/per-namespace-configuration"] != tenancy.ReasonPolicyKey ||
		src.Name != "pipelines/max" {
		t.Errorf("rejected %v, max-timeout-minutes from %s", rejected, src)
	}

	// Admission: a selector ConfigMap whose values its section's parser
	// refuses is denied, as it would be ignored wherever it applies.
	r, err := NewFromReader(newObjectReader(cluster[0], cluster[1]), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	if _, err := r.CheckConfigMap(context.Background(), selector("bad-value", "canary=true", "config-defaults", map[string]string{"default-timeout-minutes": "abc"})); err == nil ||
		!strings.Contains(err.Error(), `selector pipelines/bad-value: ignored: config-defaults: failed parsing default config "default-timeout-minutes"`) {
		t.Errorf("a selector ConfigMap its parser refuses: %v", err)
	}
	if w, err := r.CheckConfigMap(context.Background(), selector("canary", "canary=true", "config-defaults", map[string]string{"default-timeout-minutes": "20"})); err != nil || len(w) != 0 {
		t.Errorf("a valid selector ConfigMap: %v, %v", w, err)
	}
}

// TestSelectorContests: selector ConfigMaps of one number of terms that
// apply to a namespace and set a key to values other than the winner's
// (by creation time, then name) contest it, in Snapshot.Contested; a more specific layer that decides the key, or a
// namespace only one applies to, has none. With RefuseContests both are
// left out there, as invalid. CheckConfigMap warns of a contest a
// selector ConfigMap would make with one whose selector can meet its own,
// or refuses it.
func TestSelectorContests(t *testing.T) {
	selector := func(name, sel string, minutes string) *corev1.ConfigMap {
		cm := configMap("pipelines", name, map[string]string{"pipeline-selector": "true"}, map[string]string{"default-timeout-minutes": minutes})
		cm.Annotations = map[string]string{"config.strata.dev/namespace-selector": sel, "config.strata.dev/section": "config-defaults"}
		return cm
	}
	ns := func(name string, labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	cluster := []runtime.Object{
		configMap("pipelines", "config-defaults", nil, map[string]string{"default-timeout-minutes": "60"}),
		configMap("pipelines", "feature-flags", nil, map[string]string{"per-namespace-configuration": "true"}),
		selector("by-team", "team=x", "20"),
		selector("by-env", "env=prod", "30"),
		selector("agrees", "region=eu", "30"),
	}
	const key = "/config-defaults/default-timeout-minutes"
	for _, refuse := range []bool{false, true} {
		o := pipelineOptions()
		o.Selectors = &Selectors{Labels: map[string]string{"pipeline-selector": "true"}, RefuseContests: refuse}
		d, err := NewDryRun(o)
		if err != nil {
			t.Fatal(err)
		}
		resolve := func(name string, labels map[string]string, extra ...runtime.Object) *Snapshot[*pipelineConfig] {
			t.Helper()
			s, err := d.Resolve(name, append(append(slices.Clip(cluster), extra...), ns(name, labels)))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		both := resolve("both", map[string]string{"team": "x", "env": "prod", "region": "eu"})
		if !refuse {
			c := both.Contested()
			if len(c) != 1 || c[0].Key != key || c[0].Winner.Source.Name != "pipelines/by-team" || c[0].Winner.Value != `"20"` ||
				len(c[0].Others) != 2 || c[0].Others[0].Source.Name != "pipelines/by-env" || c[0].Others[1].Source.Name != "pipelines/agrees" ||
				both.Object.Defaults.TimeoutMinutes != 20 {
				t.Errorf("contested %+v, timeout %d", c, both.Object.Defaults.TimeoutMinutes)
			}
		} else {
			var ignored []string
			for _, err := range both.Ignored() {
				ignored = append(ignored, err.Error())
			}
			// Every layer in a contest is left out, and the contest is
			// still listed.
			if both.Object.Defaults.TimeoutMinutes != 60 || len(ignored) != 3 || len(both.Contested()) != 1 || !strings.Contains(strings.Join(ignored, "\n"),
				`selector pipelines/by-team: ignored: contests key "config-defaults/default-timeout-minutes": selector pipelines/by-team ("20") wins by creation time, then name, over selector pipelines/by-env ("30"), selector pipelines/agrees ("30"), as specific (contests are refused)`) {
				t.Errorf("refused: timeout %d, ignored %q, contested %v", both.Object.Defaults.TimeoutMinutes, ignored, both.Contested())
			}
			// An invalid selector layer beside the contest stays left out
			// when the contest's layers are.
			bad := selector("bad", "region=eu,tier=a", "abc")
			s := resolve("both", map[string]string{"team": "x", "env": "prod", "region": "eu", "tier": "a"}, bad)
			if s.Object.Defaults.TimeoutMinutes != 60 || len(s.Ignored()) != 4 {
				t.Errorf("an invalid layer beside a refused contest: timeout %d, ignored %q", s.Object.Defaults.TimeoutMinutes, s.Ignored())
			}
		}
		if s := resolve("one", map[string]string{"team": "x"}); len(s.Contested()) != 0 || len(s.Ignored()) != 0 {
			t.Errorf("one selector applies: %v %v", s.Contested(), s.Ignored())
		}
		specific := selector("both-terms", "team=x,env=prod", "40")
		if s := resolve("both", map[string]string{"team": "x", "env": "prod"}, specific); len(s.Contested()) != 0 || s.Object.Defaults.TimeoutMinutes != 40 {
			t.Errorf("a more specific layer decides: %v, %d", s.Contested(), s.Object.Defaults.TimeoutMinutes)
		}

		// Admission of a selector ConfigMap.
		r, err := NewFromReader(newObjectReader(cluster[0], cluster[1], cluster[2]), o)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		w, err := r.CheckConfigMap(context.Background(), selector("by-env", "env=prod", "30"))
		want := `with selector ConfigMap pipelines/by-team (team=x), as specific: key "config-defaults/default-timeout-minutes": selector pipelines/by-env ("30") wins by creation time, then name, over selector pipelines/by-team ("20"), as specific`
		switch {
		case refuse && (err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "contests are refused")):
			t.Errorf("refused: %v", err)
		case !refuse && (err != nil || len(w) != 1 || w[0] != want):
			t.Errorf("a contest: %q, %v", w, err)
		}
		if w, err := r.CheckConfigMap(context.Background(), selector("other-team", "team=y", "30")); err != nil || len(w) != 0 {
			t.Errorf("selectors that cannot meet: %q, %v", w, err)
		}
		r.Stop()
	}
}

// TestMayMeet: selectors meet unless one key's requirements cannot hold
// together.
func TestMayMeet(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"team=x", "env=prod", true},
		{"team=x", "team=y", false},
		{"team=x", "team!=x", false},
		{"team in (x,y)", "team in (y,z)", true},
		{"team in (x,y)", "team notin (x,y)", false},
		{"team", "!team", false},
		{"!team", "team=x", false},
		{"team", "team!=x", true},
		{"", "team=x", true},
	} {
		a, err := labels.Parse(tc.a)
		if err != nil {
			t.Fatal(err)
		}
		b, err := labels.Parse(tc.b)
		if err != nil {
			t.Fatal(err)
		}
		if got := mayMeet(a, b); got != tc.want || mayMeet(b, a) != tc.want {
			t.Errorf("%q and %q: %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestParsedValuesErrorIsBounded: the error about a Parsed kind's tenant
// ConfigMap whose values all fail the alias check lists at most
// text.MaxListed keys and counts the rest, as a Kind's does: it reaches
// the log, Snapshot.Ignored and /statusz.
func TestParsedValuesErrorIsBounded(t *testing.T) {
	m, err := newParsedModel(pipelineOptions().Parsed)
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]string{}
	for i := range 500 {
		data[fmt.Sprintf("key-%03d-%s", i, strings.Repeat("x", 200))] = "&a [*a"
	}
	_, err = m.values("ns-config-defaults", data)
	if err == nil {
		t.Fatal("the values were taken")
	}
	msg := err.Error()
	if n := strings.Count(msg, "key \""); n > text.MaxListed || len(msg) > text.MaxListed*text.MaxMessage+100 {
		t.Errorf("the error lists %d problems in %d bytes; want at most %d listed and the rest counted: %.300s…", n, len(msg), text.MaxListed, msg)
	}
}
