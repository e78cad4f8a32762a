package namespaced

import (
	"context"
	"encoding/json"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/layers/namespaced/tenancy"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

// nestedConfig has overridable keys whose values are objects and maps with
// fields under them that tenants may not set.
type nestedConfig struct {
	metav1.TypeMeta `json:",inline"`
	Tenancy         string `json:"tenancy,omitempty" strata:"not-path"`
	Locked          string `json:"locked,omitempty" strata:"not-path"`
	Stability       string `json:"stability,omitempty" strata:"not-path"`
	// Server is overridable, but holds a path.
	Server *nestedServer `json:"server,omitempty" strata:"overridable"`
	// Limits is overridable, but holds a cluster-only field.
	Limits *nestedLimits `json:"limits,omitempty" strata:"overridable"`
	// Features is overridable, but holds an alpha and a beta field.
	Features *nestedFeatures `json:"features,omitempty" strata:"overridable"`
	// Volumes maps names to paths.
	Volumes map[string]string `json:"volumes,omitempty" strata:"overridable"`
	// Backends maps names to objects that hold a path.
	Backends map[string]nestedBackend `json:"backends,omitempty" strata:"overridable"`
	// Tuning holds nothing restricted: a tenant may set it whole.
	Tuning *nestedTuning `json:"tuning,omitempty" strata:"overridable"`
	// Deep holds a path two levels down.
	Deep *nestedDeep `json:"deep,omitempty" strata:"overridable"`
	// Annotations maps names to strings that are no paths.
	Annotations map[string]string `json:"annotations,omitempty" strata:"overridable"`
}

type nestedServer struct {
	Port     int32  `json:"port,omitempty"`
	CertFile string `json:"certFile,omitempty" strata:"path"`
}

type nestedLimits struct {
	Quota *int64 `json:"quota,omitempty" strata:"cluster-only"`
	Burst int32  `json:"burst,omitempty"`
}

type nestedFeatures struct {
	Preview *bool `json:"preview,omitempty" strata:"alpha"`
	Gated   *bool `json:"gated,omitempty" strata:"beta"`
	Plain   *bool `json:"plain,omitempty"`
}

type nestedBackend struct {
	URL    string `json:"url,omitempty" strata:"not-path"`
	CAFile string `json:"caFile,omitempty" strata:"path"`
}

type nestedTuning struct {
	Workers int32 `json:"workers,omitempty"`
	Verbose *bool `json:"verbose,omitempty"`
}

type nestedDeep struct {
	Inner struct {
		Dir string `json:"dir,omitempty" strata:"path"`
	} `json:"inner,omitempty"`
}

// DeepCopyObject copies through JSON: every field of the type has a JSON
// member, and the test needs no speed.
func (in *nestedConfig) DeepCopyObject() runtime.Object {
	raw, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	out := &nestedConfig{}
	if err := json.Unmarshal(raw, out); err != nil {
		panic(err)
	}
	return out
}

var nestedGV = schema.GroupVersion{Group: "nested.test.strata.dev", Version: "v1"}

func newNestedResolver(t testing.TB, mutate ...func(*tenancy.Policy)) *DryRun[*nestedConfig] {
	t.Helper()
	kind, err := scheme.New(scheme.Config{
		Group: nestedGV.Group, Kind: "nestedConfig", Hub: "v1",
		Versions: []scheme.Version{{Version: "v1", AddToScheme: func(s *runtime.Scheme) error {
			s.AddKnownTypes(nestedGV, &nestedConfig{})
			return nil
		}, Markers: map[string]validation.Marker{"/volumes/*": validation.Path, "/annotations/*": validation.NotPath}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	policy := tenancy.Policy{GateKey: "tenancy", GateOpen: "on", GateClosed: "off", LockKey: "locked", StabilityKey: "stability"}
	for _, m := range mutate {
		m(&policy)
	}
	return newDryRun(t, Options[*nestedConfig]{
		Namespace: "ops", ClusterConfigMap: "config", NamespaceConfigMaps: []string{"overrides"},
		Labels:  map[string]string{"config": "tenant"},
		Tenancy: policy,
		Kind:    kind,
	})
}

// TestTenantCannotReachNestedFields sets overridable keys whose values are
// objects or maps that hold fields tenants may not set: a path, a
// cluster-only field, an alpha or beta field, or a map of paths. Setting
// such a key replaces everything under it, so the key is refused as a
// whole, and the refusal names the field under it.
func TestTenantCannotReachNestedFields(t *testing.T) {
	r := newNestedResolver(t)
	cluster := configMap("ops", "config", nil, map[string]string{
		"tenancy": "on",
		"server":  "{port: 443, certFile: /etc/tls/cert.pem}",
		"limits":  "{quota: 5}",
		"volumes": "{data: /var/data}",
	})
	for _, tc := range []struct {
		name, key, value, stability string
		reason, field               string
	}{
		{name: "path in an object", key: "server", value: "{certFile: /etc/shadow}", reason: tenancy.ReasonPath, field: "/server/certFile"},
		{name: "object that leaves the path unset", key: "server", value: "{port: 8443}", reason: tenancy.ReasonPath, field: "/server/certFile"},
		{name: "cluster-only in an object", key: "limits", value: "{quota: 1000000}", reason: tenancy.ReasonClusterOnly, field: "/limits/quota"},
		{name: "object that leaves the cluster-only field unset", key: "limits", value: "{burst: 9}", reason: tenancy.ReasonClusterOnly, field: "/limits/quota"},
		{name: "alpha in an object", key: "features", value: "{gated: true}", stability: "beta", reason: tenancy.ReasonAlpha, field: "/features/preview"},
		{name: "beta in an object", key: "features", value: "{plain: true}", reason: tenancy.ReasonAlpha, field: "/features/preview"},
		{name: "map of paths", key: "volumes", value: "{data: /etc}", reason: tenancy.ReasonPath, field: "/volumes/*"},
		{name: "map of objects that hold a path", key: "backends", value: "{a: {caFile: /root/ca.pem}}", reason: tenancy.ReasonPath, field: "/backends/*/caFile"},
		{name: "path two levels down", key: "deep", value: "{inner: {dir: /}}", reason: tenancy.ReasonPath, field: "/deep/inner/dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := cluster.DeepCopy()
			if tc.stability != "" {
				cl.Data["stability"] = tc.stability
			}
			s, err := r.Resolve("team", []runtime.Object{cl, tenantCM("team", map[string]string{tc.key: tc.value})})
			if err != nil {
				t.Fatal(err)
			}
			rejected := s.Rejected()
			if len(rejected) != 1 || rejected[0].Key != tc.key || rejected[0].Reason != tc.reason || rejected[0].Field != tc.field {
				t.Fatalf("rejected %+v, want key %s refused for %q at %s", rejected, tc.key, tc.reason, tc.field)
			}
			if msg := rejected[0].String(); !strings.Contains(msg, "team/overrides") || !strings.Contains(msg, tc.field) {
				t.Errorf("the refusal %q names neither the ConfigMap nor the field", msg)
			}
			if s.Object.Server == nil || s.Object.Server.CertFile != "/etc/tls/cert.pem" || *s.Object.Limits.Quota != 5 || s.Object.Features != nil {
				t.Errorf("server: %+v, want the cluster's", s.Object.Server)
			}
			if s.Object.Volumes["data"] != "/var/data" || len(s.Object.Volumes) != 1 || s.Object.Backends != nil || s.Object.Deep != nil {
				t.Errorf("volumes %v backends %v deep %v, want the cluster's", s.Object.Volumes, s.Object.Backends, s.Object.Deep)
			}
		})
	}
	t.Run("an object with nothing restricted under it", func(t *testing.T) {
		s, err := r.Resolve("team", []runtime.Object{cluster, tenantCM("team", map[string]string{"tuning": "{workers: 4, verbose: false}"})})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Rejected()) != 0 || s.Object.Tuning == nil || s.Object.Tuning.Workers != 4 || s.Object.Tuning.Verbose == nil || *s.Object.Tuning.Verbose {
			t.Errorf("rejected %v, tuning %+v", s.Rejected(), s.Object.Tuning)
		}
	})
	t.Run("alpha allowed", func(t *testing.T) {
		cl := cluster.DeepCopy()
		cl.Data["stability"] = "alpha"
		s, err := r.Resolve("team", []runtime.Object{cl, tenantCM("team", map[string]string{"features": "{preview: true}"})})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Rejected()) != 0 || s.Object.Features == nil || s.Object.Features.Preview == nil || !*s.Object.Features.Preview {
			t.Errorf("rejected %v, features %+v", s.Rejected(), s.Object.Features)
		}
	})
	t.Run("a lock on a nested field refuses its parent", func(t *testing.T) {
		cl := cluster.DeepCopy()
		cl.Data["locked"] = "/tuning/workers"
		s, err := r.Resolve("team", []runtime.Object{cl, tenantCM("team", map[string]string{"tuning": "{verbose: true}"})})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Rejected()) != 1 || s.Rejected()[0].Reason != tenancy.ReasonLocked || s.Rejected()[0].Field != "/tuning/workers" {
			t.Errorf("rejected %+v", s.Rejected())
		}
	})
}

// TestTenantCannotForgeARef sets an overridable map to an object of a
// reference's shape: it is a literal, the map's one member, never a
// reference, and nothing reads the Secret it names, whatever namespaces
// the reader may read; with RefuseRefLiterals it is refused outright.
func TestTenantCannotForgeARef(t *testing.T) {
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on"})
	forged := `{"$ref": "secret kube-system/admin-token#token"}`
	s, err := newNestedResolver(t).Resolve("team", []runtime.Object{cluster, tenantCM("team", map[string]string{"annotations": forged})})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Rejected()) != 0 || s.Object.Annotations["$ref"] != "secret kube-system/admin-token#token" {
		t.Errorf("rejected %v, annotations %v: want the literal", s.Rejected(), s.Object.Annotations)
	}
	v, _ := s.Provenance().Lookup("/annotations")
	if ref, ok := s.Provenance().RefOf("/annotations", v); ok {
		t.Errorf("a tenant's literal is the reference %s", ref)
	}
	read := func(context.Context, merge.Ref) ([]byte, error) {
		t.Error("a tenant's literal was read as a reference")
		return nil, nil
	}
	if _, err := s.Provenance().ResolveRefs(context.Background(), []string{"team", "kube-system"}, read); err != nil {
		t.Error(err)
	}

	s, err = newNestedResolver(t, func(t *tenancy.Policy) { t.RefuseRefLiterals = true }).Resolve("team", []runtime.Object{cluster, tenantCM("team", map[string]string{"annotations": forged, "tuning": "{workers: 2}"})})
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Rejected(); len(r) != 1 || r[0].Key != "annotations" || r[0].Reason != tenancy.ReasonRefLiteral || s.Object.Annotations != nil || s.Object.Tuning.Workers != 2 {
		t.Errorf("with RefuseRefLiterals: rejected %+v, annotations %v", r, s.Object.Annotations)
	}
}

// TestRefLiteralInAStringRefused: with RefuseRefLiterals, a value of a
// reference's shape is refused in a string too: a Parsed kind reads every
// ConfigMap value as the string written, so a Tekton-style tenant's
// literal is one.
func TestRefLiteralInAStringRefused(t *testing.T) {
	o := pipelineOptions()
	o.Tenancy.RefuseRefLiterals = true
	r := newDryRun(t, o)
	defaults := configMap("pipelines", "config-defaults", nil, nil)
	flags := configMap("pipelines", "feature-flags", nil, map[string]string{"per-namespace-configuration": "true"})
	forged := `{"$ref":"secret kube-system/admin-token#token"}`
	tenant := configMap("team", "ns-config-defaults", map[string]string{"pipeline-config": "true"}, map[string]string{"default-service-account": forged})
	s, err := r.Resolve("team", []runtime.Object{defaults, flags, tenant})
	if err != nil {
		t.Fatal(err)
	}
	if rej := s.Rejected(); len(rej) != 1 || rej[0].Reason != tenancy.ReasonRefLiteral || s.Object.Defaults.ServiceAccount == forged {
		t.Errorf("a string of a reference's shape with RefuseRefLiterals: rejected %+v, service account %q", rej, s.Object.Defaults.ServiceAccount)
	}
}

// TestBoundsHoldUnderAKeySetWhole: a bound on a field under an
// overridable key (/tuning/workers) holds when a tenant sets the key
// whole, since its value replaces the field: a value past it is refused,
// naming the bounded field, and one within it is kept.
func TestBoundsHoldUnderAKeySetWhole(t *testing.T) {
	r := newNestedResolver(t, func(p *tenancy.Policy) {
		p.Bounds = []tenancy.Bound{{Key: "/tuning/workers", AtMost: "8"}}
	})
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "tuning": "{workers: 2}"})
	s, err := r.Resolve("team", []runtime.Object{cluster, tenantCM("team", map[string]string{"tuning": "{workers: 100000, verbose: true}"})})
	if err != nil {
		t.Fatal(err)
	}
	rej := s.Rejected()
	if len(rej) != 1 || rej[0].Key != "tuning" || rej[0].Reason != tenancy.ReasonAboveBound || rej[0].Field != "/tuning/workers" || s.Object.Tuning.Workers != 2 {
		t.Errorf("tuning.workers past its bound: workers %d, rejected %+v", s.Object.Tuning.Workers, rej)
	}
	s, err = r.Resolve("team", []runtime.Object{cluster, tenantCM("team", map[string]string{"tuning": "{workers: 8}"})})
	if err != nil || len(s.Rejected()) != 0 || s.Object.Tuning.Workers != 8 {
		t.Errorf("tuning.workers at its bound: %v, rejected %+v, %v", s.Object.Tuning, s.Rejected(), err)
	}
}

// TestBoundsCompareExactly: values compare as the numbers they are, not
// as float64s, which cannot tell integers apart above 2^53; durations
// compare to the nanosecond.
func TestBoundsCompareExactly(t *testing.T) {
	for _, c := range []struct {
		value string
		want  bool // refused
	}{{"9007199254740993", true}, {"9007199254740992", false}} {
		o := testOptions(t)
		o.Tenancy.Bounds = []tenancy.Bound{{Key: "timeout", AtMost: "9007199254740992"}}
		cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on"})
		s, err := newDryRun(t, o).Resolve("team", []runtime.Object{cluster, tenantCM("team", map[string]string{"timeout": c.value})})
		if err != nil {
			t.Fatal(err)
		}
		if refused := len(s.Rejected()) == 1 && s.Rejected()[0].Reason == tenancy.ReasonAboveBound; refused != c.want {
			t.Errorf("%s at most 9007199254740992: rejected %+v, want refused %t", c.value, s.Rejected(), c.want)
		}
	}
	for _, c := range [][2]string{
		{`9007199254740993`, `"9007199254740992"`},
		{`1e3`, `999`},
		{`"1000.5"`, `1000.4`},
		{`"2562047h47m16.854775807s"`, `"2562047h47m16.854775806s"`},
	} {
		if got, err := compareValues(c[0], c[1]); err != nil || got != 1 {
			t.Errorf("%s against %s: %d, %v; want 1", c[0], c[1], got, err)
		}
	}
}

// listConfig has an overridable list whose elements hold a path and a
// cluster-only field.
type listConfig struct {
	metav1.TypeMeta `json:",inline"`
	Tenancy         string      `json:"tenancy,omitempty" strata:"not-path"`
	Mounts          []listMount `json:"mounts,omitempty" strata:"overridable"`
	Names           []string    `json:"names,omitempty" strata:"overridable,not-path"`
}

type listMount struct {
	Name     string `json:"name,omitempty" strata:"not-path"`
	HostPath string `json:"hostPath,omitempty" strata:"path"`
	Quota    *int64 `json:"quota,omitempty" strata:"cluster-only"`
}

func (in *listConfig) DeepCopyObject() runtime.Object {
	out := *in
	out.Mounts, out.Names = slices.Clone(in.Mounts), slices.Clone(in.Names)
	return &out
}

// TestTenantCannotReachFieldsInListElements: a list a tenant may set
// whole holds, in its elements, a path and a cluster-only field; setting
// it sets them, so it is refused, naming the field, as an object holding
// one is. A list of plain strings stays a tenant's.
func TestTenantCannotReachFieldsInListElements(t *testing.T) {
	gv := schema.GroupVersion{Group: "list.test.strata.dev", Version: "v1"}
	kind, err := scheme.New(scheme.Config{
		Group: gv.Group, Kind: "listConfig", Hub: "v1",
		Versions: []scheme.Version{{Version: "v1", AddToScheme: func(s *runtime.Scheme) error {
			s.AddKnownTypes(gv, &listConfig{})
			return nil
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := newDryRun(t, Options[*listConfig]{
		Namespace: "ops", ClusterConfigMap: "config", NamespaceConfigMaps: []string{"overrides"},
		Labels:  map[string]string{"config": "tenant"},
		Tenancy: tenancy.Policy{GateKey: "tenancy", GateOpen: "on", GateClosed: "off"},
		Kind:    kind,
	})
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "mounts": "[{name: data, hostPath: /var/data, quota: 5}]"})
	s, err := r.Resolve("team", []runtime.Object{cluster, tenantCM("team", map[string]string{"mounts": "[{name: data, hostPath: /etc, quota: 1000000}]", "names": "[a, b]"})})
	if err != nil {
		t.Fatal(err)
	}
	rej := s.Rejected()
	if len(rej) != 1 || rej[0].Key != "mounts" || (rej[0].Reason != tenancy.ReasonPath && rej[0].Reason != tenancy.ReasonClusterOnly) || !strings.HasPrefix(rej[0].Field, "/mounts/*/") {
		t.Errorf("a list holding a path and a cluster-only field set by a tenant: rejected %+v", rej)
	}
	if len(s.Object.Mounts) != 1 || s.Object.Mounts[0].HostPath != "/var/data" || *s.Object.Mounts[0].Quota != 5 || len(s.Object.Names) != 2 {
		t.Errorf("mounts %+v, names %v: want the cluster's mounts and the tenant's names", s.Object.Mounts, s.Object.Names)
	}
}

// FuzzTenantNestedValues feeds arbitrary tenant ConfigMap data, nested
// YAML values above all, through the resolver and checks that no field a
// tenant may not set differs from what the cluster layer alone gives: a
// path, a cluster-only field, an alpha field (the cluster allows beta), a
// tenant policy key, wherever it lies in the document.
func FuzzTenantNestedValues(f *testing.F) {
	r := newNestedResolver(f)
	cluster := configMap("ops", "config", nil, map[string]string{
		"tenancy": "on", "stability": "beta",
		"server": "{port: 443, certFile: /etc/tls/cert.pem}", "limits": "{quota: 5}",
		"volumes": "{data: /var/data}", "backends": "{a: {url: https://a, caFile: ca.pem}}",
	})
	base, err := r.Resolve("team", []runtime.Object{cluster})
	if err != nil {
		f.Fatal(err)
	}
	want := flatObject(f, base.Object)
	for _, seed := range [][4]string{
		{"server", "{certFile: /etc/shadow}", "tuning", "{workers: 2}"},
		{"limits", "{quota: 99}", "volumes", "{x: /}"},
		{"backends", "{b: {caFile: /root}}", "deep", "{inner: {dir: /}}"},
		{"features", "{preview: true, gated: true}", "tenancy", "off"},
		{"tuning", "{workers: 1, verbose: false}", "features", "{gated: true}"},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	fields := r.c.model.(*kindModel[*nestedConfig]).fields
	restricted := func(key string) bool {
		if m := fields.Markers(key); m&(validation.Path|validation.ClusterOnly|validation.Alpha) != 0 {
			return true
		}
		return key == "/tenancy" || key == "/locked" || key == "/stability"
	}
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		s, err := r.Resolve("team", []runtime.Object{cluster, tenantCM("team", map[string]string{k1: v1, k2: v2})})
		if err != nil {
			t.Fatalf("tenant input failed a resolve: %v", err)
		}
		got := flatObject(t, s.Object)
		for _, m := range []map[string]string{want, got} {
			for k := range m {
				if restricted(k) && got[k] != want[k] {
					t.Fatalf("a tenant changed %s from %q to %q; rejected %v", k, want[k], got[k], s.Rejected())
				}
			}
		}
	})
}

func flatObject(t testing.TB, obj any) map[string]string {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	flat, err := merge.Flatten(raw)
	if err != nil {
		t.Fatal(err)
	}
	return flat
}

// TestBoundsCostLittle: a tenant's value a bound reads costs what
// parsing a float costs, however many digits or how large an exponent it
// writes (big.Rat spends seconds on 1e-999999, and grows with the square
// of the digits; BenchmarkBoundsHostile): one past float64 is neither a
// number nor a duration, as it was, and a long one or one with an
// exponent is read as a float64.
func TestBoundsCostLittle(t *testing.T) {
	long := strings.Repeat("9", 250_000)
	if _, err := compareValues(`"1e999999"`, `"3600"`); err == nil || !strings.Contains(err.Error(), "neither a number nor a duration") {
		t.Errorf("1e999999: %v", err)
	}
	for _, v := range []string{`"0.` + long + `"`, `"-1e-999999"`} {
		if c, err := compareValues(v, `"3600"`); err != nil || c != -1 {
			t.Errorf("%.12s… against 3600: %d, %v", v, c, err)
		}
	}
}

func BenchmarkBoundsHostile(b *testing.B) {
	long := strings.Repeat("9", 250_000)
	for name, v := range map[string]string{"exponent": `"-1e-999999"`, "digits": `"0.` + long + `"`} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				compareValues(v, `"3600"`)
			}
		})
	}
}

// TestTurningOffIsFalseOnly: a field of a stability the cluster does not
// allow may be set to false, its feature turned off, and to nothing else:
// not a string field to the text "false". A Parsed kind's key may be set
// to what knative's and Tekton's parsers (strconv.ParseBool) read as
// false.
func TestTurningOffIsFalseOnly(t *testing.T) {
	p := &tenantPolicy{keys: fieldKeys{}}
	if !p.turnsOff("false") || p.turnsOff(`"false"`) || p.turnsOff("0") {
		t.Error("a Go type's field: only false turns a feature off")
	}
	p = &tenantPolicy{keys: parsedKeys[*pipelineConfig]{}}
	for v, off := range map[string]bool{`"false"`: true, `"False"`: true, `"0"`: true, `"f"`: true, `"no"`: false, `"fAlSe"`: false, `"true"`: false} {
		if p.turnsOff(v) != off {
			t.Errorf("a Parsed kind's key set to %s turns a feature off: %t; want %t, as strconv.ParseBool reads it", v, !off, off)
		}
	}
}

// TestTenantAliasBombIgnored: a tenant's list value of 214 KB, under the
// size limit, whose YAML aliases one 64 KiB scalar 30,000 times (2 GB
// written out, which
// go-yaml's ratio guard lets through) is refused as an alias bomb before
// anything expands: the layer is ignored naming the key, and refusing it
// costs megabytes, not the controller.
func TestTenantAliasBombIgnored(t *testing.T) {
	r := newTestResolver(t, nil)
	bomb := "- &a " + strings.Repeat("x", 64<<10) + "\n" + strings.Repeat("- *a\n", 30_000)
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on"})
	var s *Snapshot[*tenantConfig]
	var err error
	alloc := allocated(func() {
		s, err = r.Resolve("team", []runtime.Object{cluster, tenantCM("team", map[string]string{"hosts": bomb})})
	})
	if err != nil {
		t.Fatal(err)
	}
	if ig := s.Ignored(); len(ig) != 1 || !strings.Contains(ig[0].Error(), `key "hosts"`) || !strings.Contains(ig[0].Error(), "YAML aliasing") {
		t.Errorf("ignored %v, want the layer, naming hosts and its aliases", ig)
	}
	if alloc > 64<<20 {
		t.Errorf("refusing it allocated %d MiB", alloc>>20)
	}
}

// TestParsedAliasBombIgnored: a Parsed kind's parser may read a value as
// YAML (Tekton's pod templates): a tenant's value that is an alias bomb
// is refused before the parser sees it, the layer ignored naming the key.
func TestParsedAliasBombIgnored(t *testing.T) {
	type cfg struct{ Template []string }
	r := newDryRun(t, Options[*cfg]{
		Namespace: "ops", Labels: map[string]string{"layer": "tenant"},
		Tenancy: tenancy.Policy{Overridable: []string{"s/template"}, GateKey: "s/gate", GateOpen: "on", GateClosed: "off"},
		Parsed: &Parsed[*cfg]{New: func() *cfg { return &cfg{} }, Sections: []Section[*cfg]{{
			Name: "s", ClusterConfigMap: "s", NamespaceConfigMap: "s", Keys: []string{"template", "gate"},
			Parse: FromMap(func(data map[string]string) (out []string, err error) {
				if v, ok := data["template"]; ok {
					err = yaml.Unmarshal([]byte(v), &out) // as Tekton's parsers read a template
				}
				return out, err
			}, func(c *cfg, v []string) { c.Template = v }),
		}}},
	})
	bomb := "- &a " + strings.Repeat("x", 64<<10) + "\n" + strings.Repeat("- *a\n", 30_000)
	cluster := configMap("ops", "s", nil, map[string]string{"gate": "on"})
	tenant := configMap("team", "s", map[string]string{"layer": "tenant"}, map[string]string{"template": bomb})
	var s *Snapshot[*cfg]
	var err error
	alloc := allocated(func() { s, err = r.Resolve("team", []runtime.Object{cluster, tenant}) })
	if err != nil {
		t.Fatal(err)
	}
	if ig := s.Ignored(); len(ig) != 1 || !strings.Contains(ig[0].Error(), `key "template"`) || !strings.Contains(ig[0].Error(), "YAML aliasing") {
		t.Errorf("ignored %v, want the layer, naming the key and its aliases", ig)
	}
	if alloc > 64<<20 {
		t.Errorf("refusing it allocated %d MiB", alloc>>20)
	}
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	fn()
	goruntime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
