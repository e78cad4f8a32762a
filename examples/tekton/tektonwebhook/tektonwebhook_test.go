package tektonwebhook_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch"
	"github.com/tektoncd/pipeline/pkg/apis/pipeline/pod"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"knative.dev/pkg/apis"
	fakekubeclient "knative.dev/pkg/client/injection/kube/client/fake"
	_ "knative.dev/pkg/client/injection/kube/informers/admissionregistration/v1/mutatingwebhookconfiguration/fake"
	"knative.dev/pkg/configmap/informer"
	_ "knative.dev/pkg/injection/clients/namespacedkube/informers/core/v1/secret/fake"
	rtesting "knative.dev/pkg/reconciler/testing"
	"knative.dev/pkg/webhook"

	"github.com/stratacfg/strata/examples/tekton/tektonconfig"
	"github.com/stratacfg/strata/examples/tekton/tektonwebhook"
	"github.com/stratacfg/strata/integrations/strataknative"
	"github.com/stratacfg/strata/internal/watchtest"
)

// The cluster: Tekton's ConfigMaps in tekton-pipelines, the gate open,
// team-a overriding defaults and enabling two flags, team-b nothing.
func configMaps() []runtime.Object {
	cm := func(ns, name string, labels, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: data}
	}
	out := []runtime.Object{
		cm(tektonconfig.SystemNamespace, "config-defaults", nil, map[string]string{"default-timeout-minutes": "60"}),
		cm(tektonconfig.SystemNamespace, "feature-flags", nil, map[string]string{tektonconfig.GateKey: "true", "enable-api-fields": "alpha"}),
		cm("team-a", tektonconfig.NamespaceDefaultsConfigMap, tektonconfig.Labels, map[string]string{
			"default-timeout-minutes": "30", "default-service-account": "builder",
			"default-pod-template": "nodeSelector:\n  pool: team-a\n"}),
		cm("team-a", tektonconfig.NamespaceFeatureFlagsConfig, tektonconfig.Labels, map[string]string{
			"enable-param-enum": "true", "enable-cel-in-whenexpression": "true"}),
	}
	// The rest of what Tekton's store watches, as Tekton installs it.
	for _, name := range []string{"config-observability", "config-spire", "config-events", "config-tracing", "config-wait-exponential-backoff"} {
		out = append(out, cm(tektonconfig.SystemNamespace, name, nil, nil))
	}
	return out
}

// resolver starts a strataknative resolver over kc as a knative controller
// does, with the watcher of Tekton's namespace.
func resolver(t *testing.T, ctx context.Context, kc kubernetes.Interface) *strataknative.Resolver[*tektonconfig.Config] {
	t.Helper()
	cmw := informer.NewInformedWatcher(kc, tektonconfig.SystemNamespace)
	r, err := strataknative.New(kc, cmw, tektonconfig.Options(tektonconfig.SystemNamespace))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- r.Start(ctx) }()
	if err := cmw.Start(ctx.Done()); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// TestTektonReadersSeeTheNamespace runs Tekton's own TaskRun and
// PipelineRun SetDefaults and Validate, unmodified, in the context one
// strataknative.IntoContext call gives at a reconciler's entry: each
// namespace gets its own defaults (timeout, service account, pod template)
// and its own feature flags decide what validates.
func TestTektonReadersSeeTheNamespace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := resolver(t, ctx, fake.NewSimpleClientset(configMaps()...))
	for _, tc := range []struct {
		ns            string
		timeout       time.Duration
		sa, pool      string
		enum, celWhen bool
	}{
		{ns: "team-a", timeout: 30 * time.Minute, sa: "builder", pool: "team-a", enum: true, celWhen: true},
		{ns: "team-b", timeout: 60 * time.Minute, sa: "default"},
	} {
		t.Run(tc.ns, func(t *testing.T) {
			nsCtx, err := strataknative.IntoContext(ctx, r, tc.ns, tektonconfig.ToContext) // the one call
			if err != nil {
				t.Fatal(err)
			}
			create := apis.WithinCreate(nsCtx)

			tr := &v1.TaskRun{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: "build"}, Spec: v1.TaskRunSpec{TaskRef: &v1.TaskRef{Name: "build"}}}
			tr.SetDefaults(create)
			if tr.Spec.Timeout.Duration != tc.timeout || tr.Spec.ServiceAccountName != tc.sa || podPool(tr.Spec.PodTemplate) != tc.pool ||
				tr.Labels["app.kubernetes.io/managed-by"] != "tekton-pipelines" {
				t.Errorf("TaskRun defaulted to timeout %v, service account %q, pool %q, labels %v; want %v, %q, %q",
					tr.Spec.Timeout.Duration, tr.Spec.ServiceAccountName, podPool(tr.Spec.PodTemplate), tr.Labels, tc.timeout, tc.sa, tc.pool)
			}
			pr := &v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: "ship"}, Spec: v1.PipelineRunSpec{PipelineRef: &v1.PipelineRef{Name: "ship"}}}
			pr.SetDefaults(create)
			if pr.Spec.Timeouts.Pipeline.Duration != tc.timeout || pr.Spec.TaskRunTemplate.ServiceAccountName != tc.sa || podPool(pr.Spec.TaskRunTemplate.PodTemplate) != tc.pool {
				t.Errorf("PipelineRun defaulted to timeout %v, service account %q, pool %q", pr.Spec.Timeouts.Pipeline.Duration,
					pr.Spec.TaskRunTemplate.ServiceAccountName, podPool(pr.Spec.TaskRunTemplate.PodTemplate))
			}

			// enable-param-enum decides whether a TaskRun's embedded Task
			// may declare an enum.
			enum := &v1.TaskRun{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: "enum"}, Spec: v1.TaskRunSpec{TaskSpec: &v1.TaskSpec{
				Params: v1.ParamSpecs{{Name: "mode", Type: v1.ParamTypeString, Enum: []string{"fast", "safe"}}},
				Steps:  []v1.Step{{Name: "s", Image: "busybox", Script: "echo $(params.mode)"}},
			}, Params: v1.Params{{Name: "mode", Value: *v1.NewStructuredValues("fast")}}}}
			enum.SetDefaults(create)
			checkValid(t, "a TaskRun with an enum", enum.Validate(create), tc.enum, "enable-param-enum")

			// enable-cel-in-whenexpression decides whether a when
			// expression may be CEL.
			cel := &v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: "cel"}, Spec: v1.PipelineRunSpec{PipelineSpec: &v1.PipelineSpec{
				Tasks: []v1.PipelineTask{{Name: "t", TaskRef: &v1.TaskRef{Name: "t"}, When: v1.WhenExpressions{{CEL: "'a' == 'a'"}}}},
			}}}
			cel.SetDefaults(create)
			checkValid(t, "a PipelineRun with a CEL when", cel.Validate(create), tc.celWhen, "enable-cel-in-whenexpression")
		})
	}
}

// podPool is the pool node selector of a pod template, "" for none.
func podPool(p *pod.PodTemplate) string {
	if p == nil {
		return ""
	}
	return p.NodeSelector["pool"]
}

func checkValid(t *testing.T, what string, err *apis.FieldError, valid bool, flag string) {
	t.Helper()
	switch {
	case valid && err != nil:
		t.Errorf("%s: %v, want valid", what, err)
	case !valid && (err == nil || !strings.Contains(err.Error(), flag)):
		t.Errorf("%s: %v, want an error naming %s", what, err, flag)
	}
}

// TestDefaultingWebhook builds Tekton's defaulting admission controller
// as Tekton's webhook builds it (knative's resourcesemantics/defaulting
// over Tekton's types), with strataknative's lines, and admits TaskRuns
// of two namespaces: each gets its namespace's defaults. A request before
// the resolver can read is refused, saying why.
func TestDefaultingWebhook(t *testing.T) {
	t.Setenv("SYSTEM_NAMESPACE", tektonconfig.SystemNamespace)
	ctx, _ := rtesting.SetupFakeContext(t)
	ctx = webhook.WithOptions(ctx, webhook.Options{SecretName: "webhook-certs", ServiceName: "tekton-pipelines-webhook"})
	kc := fakekubeclient.Get(ctx)
	for _, o := range configMaps() {
		cm := o.(*corev1.ConfigMap)
		if _, err := kc.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cmw := informer.NewInformedWatcher(kc, tektonconfig.SystemNamespace)
	impl := tektonwebhook.NewDefaultingAdmissionController("webhook.pipeline.tekton.dev")(ctx, cmw)
	ac := impl.Reconciler.(webhook.AdmissionController)
	if ac.Path() != "/defaulting" {
		t.Errorf("path %s", ac.Path())
	}
	admit := func(ns string) (*v1.TaskRun, *admissionv1.AdmissionResponse) {
		t.Helper()
		raw, _ := json.Marshal(&v1.TaskRun{TypeMeta: metav1.TypeMeta{APIVersion: "tekton.dev/v1", Kind: "TaskRun"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "build"}, Spec: v1.TaskRunSpec{TaskRef: &v1.TaskRef{Name: "build"}}})
		resp := ac.Admit(ctx, &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Create, Namespace: ns,
			Kind: metav1.GroupVersionKind{Group: "tekton.dev", Version: "v1", Kind: "TaskRun"}, Object: runtime.RawExtension{Raw: raw}})
		if !resp.Allowed {
			return nil, resp
		}
		patch, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatal(err)
		}
		out, err := patch.Apply(raw)
		if err != nil {
			t.Fatal(err)
		}
		var tr v1.TaskRun
		if err := json.Unmarshal(out, &tr); err != nil {
			t.Fatal(err)
		}
		return &tr, resp
	}
	if _, resp := admit("team-a"); resp.Allowed || !strings.Contains(resp.Result.Message, "the configuration of namespace team-a cannot be read") {
		t.Errorf("before the watcher started: %+v", resp.Result)
	}
	if err := cmw.Start(ctx.Done()); err != nil {
		t.Fatal(err)
	}
	// The resolver starts in a goroutine of the constructor's, with
	// nothing to wait on: ask until team-a's TaskRun is admitted.
	var tr *v1.TaskRun
	watchtest.Eventually(t, 10*time.Second, func() string {
		var resp *admissionv1.AdmissionResponse
		if tr, resp = admit("team-a"); tr == nil {
			return "team-a's TaskRun refused: " + resp.Result.Message
		}
		return ""
	})
	if tr.Spec.Timeout.Duration != 30*time.Minute || tr.Spec.ServiceAccountName != "builder" || podPool(tr.Spec.PodTemplate) != "team-a" {
		t.Errorf("team-a's TaskRun: timeout %v, service account %q, pool %q", tr.Spec.Timeout.Duration, tr.Spec.ServiceAccountName, podPool(tr.Spec.PodTemplate))
	}
	if tr, resp := admit("team-b"); tr == nil || tr.Spec.Timeout.Duration != 60*time.Minute || tr.Spec.ServiceAccountName != "default" || tr.Spec.PodTemplate != nil {
		t.Errorf("team-b's TaskRun: %+v, %+v", tr, resp.Result)
	}
}
