package tektonconfig_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/tektoncd/pipeline/pkg/apis/config"
	"go.uber.org/zap"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	_ "knative.dev/pkg/client/injection/kube/client/fake"
	_ "knative.dev/pkg/client/injection/kube/informers/admissionregistration/v1/mutatingwebhookconfiguration/fake"
	"knative.dev/pkg/controller"
	_ "knative.dev/pkg/injection/clients/namespacedkube/informers/core/v1/secret/fake"
	"knative.dev/pkg/logging"
	rtesting "knative.dev/pkg/reconciler/testing"
	"knative.dev/pkg/webhook"
	"knative.dev/pkg/webhook/resourcesemantics/defaulting"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/examples/tekton/tektonconfig"
	"github.com/stratacfg/strata/examples/tekton/tektonwebhook"
	"github.com/stratacfg/strata/integrations/strataknative"
	"github.com/stratacfg/strata/layers/namespaced"
)

// The admission workload: the cluster ConfigMaps of a real installation
// and benchNamespaces namespaces, each with both namespace ConfigMaps.
const benchNamespaces = 10000

var benchClusterDefaults = map[string]string{
	"_example":                         "# the documentation of every key\n" + strings.Repeat("# ...\n", 40),
	"default-timeout-minutes":          "50",
	"default-service-account":          "pipeline-runner",
	"default-managed-by-label-value":   "tekton-pipelines",
	"default-pod-template":             "securityContext:\n  runAsNonRoot: true\n  runAsUser: 1001\nnodeSelector:\n  kubernetes.io/os: linux\n",
	"default-imagepullbackoff-timeout": "5m",
	"default-container-resource-requirements": "default:\n  requests:\n    memory: 64Mi\n    cpu: 250m\n  limits:\n    memory: 128Mi\n" +
		"prefix-scripts:\n  requests:\n    memory: 32Mi\n",
	"default-forbidden-env":              "TEKTON_SECRET, HOME",
	"default-maximum-resolution-timeout": "2m",
}

var benchClusterFlags = map[string]string{
	"per-namespace-configuration": "true",
	"non-overridable-fields":      "keep-pod-on-cancel",
	"enable-api-fields":           "beta",
	"coschedule":                  "workspaces",
	"max-result-size":             "4096",
	"enable-step-actions":         "true",
	"disable-inline-spec":         "",
}

var benchNamespaceDefaults = map[string]string{
	"default-timeout-minutes": "30",
	"default-service-account": "team-sa",
	"default-pod-template":    "nodeSelector:\n  pool: builds\n",
}

var benchNamespaceFlags = map[string]string{
	"coschedule":      "disabled",
	"max-result-size": "8192",
}

func benchName(i int) string { return "team-" + strconv.Itoa(i) }

func benchObjects() []runtime.Object {
	objs := []runtime.Object{
		cm(tektonconfig.SystemNamespace, tektonconfig.DefaultsSection, nil, benchClusterDefaults),
		cm(tektonconfig.SystemNamespace, tektonconfig.FeatureFlagsSection, nil, benchClusterFlags),
	}
	for i := range benchNamespaces {
		objs = append(objs, tenantDefaults(benchName(i), maps.Clone(benchNamespaceDefaults)), tenantFlags(benchName(i), maps.Clone(benchNamespaceFlags)))
	}
	return objs
}

// prStyle is the per-namespace configuration of Tekton's PR #9517,
// written here for the workload: the cluster configuration is kept
// parsed; for every TaskRun or PipelineRun admission it
//
//  1. decodes the admission body a second time to learn the namespace
//     (the webhook's context is built before the body is decoded);
//  2. looks the namespace's two ConfigMaps up in the informer's lister;
//  3. writes each parsed cluster section back into a string map;
//  4. sets over it the namespace keys that are overridable and not locked,
//     skipping _example;
//  5. parses each merged map with Tekton's own constructor, keeping the
//     cluster section when it fails.
type prStyle struct {
	cluster             *tektonconfig.Config
	overridable, locked map[string]bool
	lister              map[string]*corev1.ConfigMap // "ns/name"
}

func newPRStyle(tb testing.TB) *prStyle {
	d, err := config.NewDefaultsFromMap(benchClusterDefaults)
	if err != nil {
		tb.Fatal(err)
	}
	f, err := config.NewFeatureFlagsFromMap(benchClusterFlags)
	if err != nil {
		tb.Fatal(err)
	}
	p := &prStyle{cluster: &tektonconfig.Config{Defaults: d, FeatureFlags: f},
		overridable: map[string]bool{}, locked: map[string]bool{}, lister: map[string]*corev1.ConfigMap{}}
	for _, k := range tektonconfig.Overridable {
		_, key, _ := strings.Cut(k, "/")
		p.overridable[key] = true
	}
	for _, k := range strings.Split(benchClusterFlags["non-overridable-fields"], ",") {
		if k = strings.TrimSpace(k); k != "" {
			p.locked[k] = true
		}
	}
	for i := range benchNamespaces {
		ns := benchName(i)
		p.lister[ns+"/"+tektonconfig.NamespaceDefaultsConfigMap] = tenantDefaults(ns, benchNamespaceDefaults)
		p.lister[ns+"/"+tektonconfig.NamespaceFeatureFlagsConfig] = tenantFlags(ns, benchNamespaceFlags)
	}
	return p
}

// forAdmission is the configuration of the admission whose body is body.
func (p *prStyle) forAdmission(body []byte) (*tektonconfig.Config, error) {
	var review admissionv1.AdmissionReview // (1)
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		return nil, fmt.Errorf("decoding the admission body: %v", err)
	}
	return p.forNamespace(review.Request.Namespace), nil
}

// forNamespace is steps (2) to (5), for namespace ns.
func (p *prStyle) forNamespace(ns string) *tektonconfig.Config {
	out := *p.cluster
	if nd := p.lister[ns+"/"+tektonconfig.NamespaceDefaultsConfigMap]; nd != nil { // (2)
		merged := p.merge(defaultsToMap(p.cluster.Defaults), nd.Data) // (3), (4)
		if d, err := config.NewDefaultsFromMap(merged); err == nil {  // (5)
			out.Defaults = d
		}
	}
	if nf := p.lister[ns+"/"+tektonconfig.NamespaceFeatureFlagsConfig]; nf != nil {
		merged := p.merge(featureFlagsToMap(p.cluster.FeatureFlags), nf.Data)
		if f, err := config.NewFeatureFlagsFromMap(merged); err == nil {
			out.FeatureFlags = f
		}
	}
	return &out
}

func (p *prStyle) merge(cluster, ns map[string]string) map[string]string {
	for k, v := range ns {
		if k == "_example" || p.locked[k] || !p.overridable[k] {
			continue
		}
		cluster[k] = v
	}
	return cluster
}

// defaultsToMap writes parsed defaults back into ConfigMap data.
func defaultsToMap(d *config.Defaults) map[string]string {
	m := map[string]string{
		"default-timeout-minutes":                strconv.Itoa(d.DefaultTimeoutMinutes),
		"default-service-account":                d.DefaultServiceAccount,
		"default-managed-by-label-value":         d.DefaultManagedByLabelValue,
		"default-cloud-events-sink":              d.DefaultCloudEventsSink,
		"default-task-run-workspace-binding":     d.DefaultTaskRunWorkspaceBinding,
		"default-max-matrix-combinations-count":  strconv.Itoa(d.DefaultMaxMatrixCombinationsCount),
		"default-resolver-type":                  d.DefaultResolverType,
		"default-imagepullbackoff-timeout":       d.DefaultImagePullBackOffTimeout.String(),
		"default-create-container-error-timeout": d.DefaultCreateContainerErrorTimeout.String(),
		"default-maximum-resolution-timeout":     d.DefaultMaximumResolutionTimeout.String(),
		"default-sidecar-log-polling-interval":   d.DefaultSidecarLogPollingInterval.String(),
		config.DefaultStepRefConcurrencyLimitKey: strconv.Itoa(d.DefaultStepRefConcurrencyLimit),
	}
	if len(d.DefaultForbiddenEnv) > 0 {
		m["default-forbidden-env"] = strings.Join(d.DefaultForbiddenEnv, ",")
	}
	for key, v := range map[string]any{"default-pod-template": d.DefaultPodTemplate, "default-affinity-assistant-pod-template": d.DefaultAAPodTemplate,
		"default-container-resource-requirements": d.DefaultContainerResourceRequirements} {
		if b, err := yaml.Marshal(v); err == nil && string(b) != "null\n" && string(b) != "{}\n" {
			m[key] = string(b)
		}
	}
	return m
}

// featureFlagsToMap writes parsed feature flags back into ConfigMap data.
func featureFlagsToMap(f *config.FeatureFlags) map[string]string {
	b := strconv.FormatBool
	return map[string]string{
		"disable-creds-init": b(f.DisableCredsInit), "running-in-environment-with-injected-sidecars": b(f.RunningInEnvWithInjectedSidecars),
		"await-sidecar-readiness": b(f.AwaitSidecarReadiness), "require-git-ssh-secret-known-hosts": b(f.RequireGitSSHSecretKnownHosts),
		"enable-api-fields": f.EnableAPIFields, "send-cloudevents-for-runs": b(f.SendCloudEventsForRuns),
		"enforce-nonfalsifiability": f.EnforceNonfalsifiability, "trusted-resources-verification-no-match-policy": f.VerificationNoMatchPolicy,
		"enable-provenance-in-status": b(f.EnableProvenanceInStatus), "results-from": f.ResultExtractionMethod,
		"max-result-size": strconv.Itoa(f.MaxResultSize), "set-security-context": b(f.SetSecurityContext),
		"set-security-context-read-only-root-filesystem": b(f.SetSecurityContextReadOnlyRootFilesystem), "coschedule": f.Coschedule,
		config.KeepPodOnCancel: b(f.EnableKeepPodOnCancel), config.EnableCELInWhenExpression: b(f.EnableCELInWhenExpression),
		config.EnableStepActions: b(f.EnableStepActions), config.EnableParamEnum: b(f.EnableParamEnum), config.EnableArtifacts: b(f.EnableArtifacts),
		config.DisableInlineSpec: f.DisableInlineSpec, config.EnableConciseResolverSyntax: b(f.EnableConciseResolverSyntax),
		config.EnableKubernetesSidecar: b(f.EnableKubernetesSidecar), config.EnableWaitExponentialBackoff: b(f.EnableWaitExponentialBackoff),
		config.EnableTerminationMessageCompression: b(f.EnableTerminationMessageCompression),
	}
}

// admissionBody is the AdmissionReview of a TaskRun created in ns.
func admissionBody(tb testing.TB, ns string) []byte {
	taskRun := `{"apiVersion":"tekton.dev/v1","kind":"TaskRun","metadata":{"generateName":"build-","namespace":"` + ns + `"},` +
		`"spec":{"taskRef":{"name":"build"},"params":[{"name":"revision","value":"main"},{"name":"url","value":"https://example.com/repo.git"}],` +
		`"workspaces":[{"name":"source","emptyDir":{}}],"timeout":"1h0m0s"}}`
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "1", Namespace: ns, Operation: admissionv1.Create,
			Kind:   metav1.GroupVersionKind{Group: "tekton.dev", Version: "v1", Kind: "TaskRun"},
			Object: runtime.RawExtension{Raw: []byte(taskRun)}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// startedResolver is strata's resolver over the workload in Informer
// mode, caching cacheSize namespaces, every namespace visited once.
func startedResolver(tb testing.TB, cacheSize int) *namespaced.Resolver[*tektonconfig.Config] {
	tb.Helper()
	o := tektonconfig.Options(tektonconfig.SystemNamespace)
	o.Recorder = nil
	o.CacheSize = cacheSize
	r, err := namespaced.NewInformer(fake.NewClientset(benchObjects()...), o)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	if err := r.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.Stop)
	for i := range benchNamespaces {
		if _, err := r.ForNamespace(ctx, benchName(i)); err != nil {
			tb.Fatal(err)
		}
	}
	return r
}

// TestAdmissionWorkloadAgrees checks that the two sides of case 9 arrive
// at the same configuration, so that the benchmark compares like with
// like.
func TestAdmissionWorkloadAgrees(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 10,000 snapshots")
	}
	r := startedResolver(t, benchNamespaces)
	p := newPRStyle(t)
	for _, i := range []int{0, 1, benchNamespaces - 1} {
		ns := benchName(i)
		s, err := r.ForNamespace(context.Background(), ns)
		if err != nil {
			t.Fatal(err)
		}
		want, err := p.forAdmission(admissionBody(t, ns))
		if err != nil {
			t.Fatal(err)
		}
		if !s.Object.Defaults.Equals(want.Defaults) || *s.Object.FeatureFlags != *want.FeatureFlags {
			t.Errorf("%s: strata\n%+v\n%+v\nPR-style\n%+v\n%+v", ns, s.Object.Defaults, s.Object.FeatureFlags, want.Defaults, want.FeatureFlags)
		}
		if s.Object.Defaults.DefaultTimeoutMinutes != 30 || s.Object.FeatureFlags.MaxResultSize != 8192 || len(s.Object.Defaults.DefaultContainerResourceRequirements) != 2 {
			t.Errorf("%s: the overrides or the cluster's values are missing: %+v %+v", ns, s.Object.Defaults, s.Object.FeatureFlags)
		}
	}
}

// BenchmarkCase9Admission is the configuration a TaskRun admission reads,
// with 10,000 namespaces that each override both sections, visited in
// turn. strata: the namespace's snapshot, both sections of one version,
// read from the request's namespace (the webhook decoded the request
// once); "strata-miss" caches 1,000 namespaces of the 10,000, so that
// every read builds the snapshot (Informer mode: from the listers).
// PR-style: the body decoded a second time, then merge and parse
// per request with Tekton's own constructors; "pr-style-merge" is the
// merge and parse alone.
func BenchmarkCase9Admission(b *testing.B) {
	bodies := make([][]byte, 1000)
	for i := range bodies {
		bodies[i] = admissionBody(b, benchName(i*(benchNamespaces/len(bodies))))
	}
	names := make([]string, benchNamespaces)
	for i := range names {
		names[i] = benchName(i)
	}
	for _, bc := range []struct {
		name      string
		cacheSize int
	}{{"strata", benchNamespaces}, {"strata-miss", benchNamespaces / 10}} {
		b.Run(bc.name, func(b *testing.B) {
			r := startedResolver(b, bc.cacheSize)
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s, err := r.ForNamespace(ctx, names[i%len(names)])
				if err != nil || s.Object.Defaults.DefaultTimeoutMinutes != 30 {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	b.Run("pr-style", func(b *testing.B) {
		p := newPRStyle(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			c, err := p.forAdmission(bodies[i%len(bodies)])
			if err != nil || c.Defaults.DefaultTimeoutMinutes != 30 {
				b.Fatal(err)
			}
			i++
		}
	})
	// The webhook path: knative's defaulting controller over Tekton's
	// types admits the TaskRun (decode, Tekton's SetDefaults, the JSON
	// patch), its configuration given through the entry call, against the
	// same controller behind PR #9517's second decode and per-request
	// merge and parse.
	b.Run("strata-webhook", func(b *testing.B) {
		r := startedResolver(b, benchNamespaces)
		ctx, admit := defaultingController(b, func(inner controller.Reconciler) controller.Reconciler { return strataknative.Admission(r, inner) },
			strataknative.WrapContext(nil, tektonconfig.ToContext))
		benchAdmissions(b, ctx, admit)
	})
	b.Run("pr-style-webhook", func(b *testing.B) {
		p := newPRStyle(b)
		ctx, admit := defaultingController(b, func(inner controller.Reconciler) controller.Reconciler { return &prStyleAdmission{inner, p} }, nil)
		benchAdmissions(b, ctx, admit)
	})
	b.Run("pr-style-merge", func(b *testing.B) {
		p := newPRStyle(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			// A section whose merge does not parse would keep the
			// cluster's values: both overrides must be there.
			if c := p.forNamespace(benchName(i % benchNamespaces)); c.Defaults.DefaultTimeoutMinutes != 30 || c.FeatureFlags.MaxResultSize != 8192 {
				b.Fatalf("%+v %+v", c.Defaults, c.FeatureFlags)
			}
			i++
		}
	})
}

// defaultingController builds knative's defaulting admission controller
// over Tekton's types with wc, wraps its reconciler with wrap, and
// returns its Admit.
func defaultingController(b *testing.B, wrap func(controller.Reconciler) controller.Reconciler, wc func(context.Context) context.Context) (context.Context, func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) {
	b.Setenv("SYSTEM_NAMESPACE", tektonconfig.SystemNamespace)
	ctx, _ := rtesting.SetupFakeContext(b)
	ctx = logging.WithLogger(ctx, zap.NewNop().Sugar()) // as quiet as a webhook at warning level: no line per admission
	ctx = webhook.WithOptions(ctx, webhook.Options{SecretName: "webhook-certs", ServiceName: "tekton-pipelines-webhook"})
	impl := defaulting.NewAdmissionController(ctx, "webhook.pipeline.tekton.dev", "/defaulting", tektonwebhook.Types, wc, true)
	return ctx, wrap(impl.Reconciler).(webhook.AdmissionController).Admit
}

// benchAdmissions admits TaskRuns of the namespaces in turn, each of which
// must get its namespace's timeout.
func benchAdmissions(b *testing.B, ctx context.Context, admit func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) {
	reqs := make([]*admissionv1.AdmissionRequest, 1000)
	for i := range reqs {
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(admissionBody(b, benchName(i*(benchNamespaces/len(reqs)))), &review); err != nil {
			b.Fatal(err)
		}
		review.Request.Object.Raw = []byte(strings.Replace(string(review.Request.Object.Raw), `,"timeout":"1h0m0s"`, "", 1))
		reqs[i] = review.Request
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		resp := admit(ctx, reqs[i%len(reqs)])
		if !resp.Allowed || !strings.Contains(string(resp.Patch), `"30m0s"`) {
			b.Fatalf("%+v %s", resp.Result, resp.Patch)
		}
		i++
	}
}

// prStyleAdmission is PR #9517's webhook entry: the object decoded a
// second time to learn its namespace (here at its cheapest, its metadata
// alone), then the merge and parse, the result put in Tekton's context.
type prStyleAdmission struct {
	controller.Reconciler
	p *prStyle
}

func (a *prStyleAdmission) Path() string { return a.Reconciler.(webhook.AdmissionController).Path() }

func (a *prStyleAdmission) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	var obj metav1.PartialObjectMetadata
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return webhook.MakeErrorStatus("decoding the object: %v", err)
	}
	c := a.p.forNamespace(obj.Namespace)
	cfg := *config.FromContextOrDefaults(ctx)
	cfg.Defaults, cfg.FeatureFlags = c.Defaults, c.FeatureFlags
	return a.Reconciler.(webhook.AdmissionController).Admit(config.ToContext(ctx, &cfg), req)
}
