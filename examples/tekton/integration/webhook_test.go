package integration

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	tektonclient "github.com/tektoncd/pipeline/pkg/client/clientset/versioned"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	kubeclient "knative.dev/pkg/client/injection/kube/client"
	"knative.dev/pkg/configmap/informer"
	"knative.dev/pkg/injection"
	"knative.dev/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/examples/tekton/tektonconfig"
	"github.com/stratacfg/strata/examples/tekton/tektonwebhook"
	"github.com/stratacfg/strata/internal/admissionreview"
	"github.com/stratacfg/strata/internal/watchtest"
)

// tektonModule is the directory of Tekton's module as this module
// requires it: its CRDs and its ConfigMaps are what Tekton installs.
func tektonModule(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/tektoncd/pipeline").Output()
	if err != nil {
		t.Fatalf("finding Tekton's module: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// installCRDs creates Tekton's TaskRun and PipelineRun CRDs from Tekton's
// module, their conversion webhook (a Service this cluster has not) left
// out: the test reads and writes v1 only, the storage version.
func installCRDs(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(server.Config).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	for _, f := range []string{"300-taskrun.yaml", "300-pipelinerun.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, "config", "300-crds", f))
		if err != nil {
			t.Fatal(err)
		}
		var crd unstructured.Unstructured
		if err := yaml.Unmarshal(b, &crd.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		unstructured.RemoveNestedField(crd.Object, "spec", "conversion")
		if _, err := dyn.Create(ctx, &crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: %v", f, err)
		}
		watchtest.Eventually(t, 30*time.Second, func() string {
			got, err := dyn.Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
					return ""
				}
			}
			return crd.GetName() + " not established"
		})
	}
}

// apply creates obj's ConfigMap, or replaces what is there.
func apply(t *testing.T, client kubernetes.Interface, cm *corev1.ConfigMap) {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cm.Namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	_, err := client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestDefaultingWebhook runs Tekton's defaulting webhook as
// tektonwebhook builds it (knative's defaulting controller over Tekton's
// types, Tekton's own store, strataknative's lines) behind the real
// kube-apiserver with Tekton's CRDs: a TaskRun created in webhook-a gets
// webhook-a's defaults, one in webhook-b the cluster's, and a tenant's
// edit applies to the next TaskRun within a second.
func TestDefaultingWebhook(t *testing.T) {
	client := server.Client(t)
	dir := tektonModule(t)
	installCRDs(t, dir)

	// Tekton's ConfigMaps as Tekton installs them, the gate open.
	for _, f := range []string{"config-defaults.yaml", "config-feature-flags.yaml", "config-observability.yaml", "config-spire.yaml",
		"config-events.yaml", "config-tracing.yaml", "config-wait-exponential-backoff.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, "config", f))
		if err != nil {
			t.Fatal(err)
		}
		var cm corev1.ConfigMap
		if err := yaml.UnmarshalStrict(b, &cm); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if cm.Name == tektonconfig.FeatureFlagsSection {
			cm.Data[tektonconfig.GateKey] = "true"
		}
		apply(t, client, &cm)
	}
	tenant := func(timeout string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "webhook-a", Name: tektonconfig.NamespaceDefaultsConfigMap, Labels: tektonconfig.Labels},
			Data: map[string]string{"default-timeout-minutes": timeout, "default-service-account": "builder", "default-pod-template": "nodeSelector:\n  pool: a\n"}}
	}
	apply(t, client, tenant("30"))
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "webhook-b"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	// The webhook process: knative's injection over this cluster, the
	// watcher of Tekton's namespace, the controller sharedmain would
	// construct, served on loopback.
	t.Setenv("SYSTEM_NAMESPACE", tektonconfig.SystemNamespace)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx, _ = injection.Default.SetupInformers(ctx, server.Config)
	ctx = webhook.WithOptions(ctx, webhook.Options{SecretName: "webhook-certs", ServiceName: "tekton-pipelines-webhook"})
	cmw := informer.NewInformedWatcher(kubeclient.Get(ctx), tektonconfig.SystemNamespace)
	impl := tektonwebhook.NewDefaultingAdmissionController("webhook.pipeline.tekton.dev")(ctx, cmw)
	if err := cmw.Start(ctx.Done()); err != nil {
		t.Fatal(err)
	}
	ac := impl.Reconciler.(webhook.AdmissionController)
	srv := httptest.NewUnstartedServer(admissionreview.Handler(ac.Admit))
	srv.StartTLS()
	defer srv.Close()

	url := srv.URL + ac.Path()
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "webhook.pipeline.tekton.dev"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "webhook.pipeline.tekton.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"tekton.dev"}, APIVersions: []string{"v1"}, Resources: []string{"taskruns", "pipelineruns"}},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name",
				Operator: metav1.LabelSelectorOpIn, Values: []string{"webhook-a", "webhook-b"}}}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}}}
	if _, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(context.Background(), mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	tekton := tektonclient.NewForConfigOrDie(server.Config)
	create := func(ns string) (*v1.TaskRun, error) {
		return tekton.TektonV1().TaskRuns(ns).Create(context.Background(), &v1.TaskRun{ObjectMeta: metav1.ObjectMeta{GenerateName: "build-"},
			Spec: v1.TaskRunSpec{TaskRef: &v1.TaskRef{Name: "build"}}}, metav1.CreateOptions{})
	}
	describe := func(tr *v1.TaskRun) string {
		pool := ""
		if tr.Spec.PodTemplate != nil {
			pool = tr.Spec.PodTemplate.NodeSelector["pool"]
		}
		timeout := "none"
		if tr.Spec.Timeout != nil {
			timeout = tr.Spec.Timeout.Duration.String()
		}
		return fmt.Sprintf("timeout %s, service account %q, pool %q", timeout, tr.Spec.ServiceAccountName, pool)
	}
	// The API server calls the webhook once its own informer has the
	// configuration, and the resolver answers once it has started.
	watchtest.Eventually(t, 30*time.Second, func() string {
		tr, err := create("webhook-b")
		switch {
		case err != nil:
			return err.Error()
		case tr.Spec.Timeout == nil:
			return "not defaulted yet"
		}
		return ""
	})
	for ns, want := range map[string]string{
		"webhook-a": `timeout 30m0s, service account "builder", pool "a"`,
		"webhook-b": `timeout 1h0m0s, service account "default", pool ""`,
	} {
		tr, err := create(ns)
		if err != nil {
			t.Fatal(err)
		}
		if got := describe(tr); got != want {
			t.Errorf("%s: %s, want %s", ns, got, want)
		}
	}

	// The tenant changes its timeout: the next TaskRun created gets it.
	apply(t, client, tenant("45"))
	edited := time.Now()
	var last string
	if !watchtest.Until(time.Second, func() bool {
		tr, err := create("webhook-a")
		if err != nil {
			last = err.Error()
			return false
		}
		last = describe(tr)
		return tr.Spec.Timeout != nil && tr.Spec.Timeout.Duration == 45*time.Minute
	}) {
		t.Fatalf("a second after the tenant's edit, a TaskRun still gets %s", last)
	}
	t.Logf("the tenant's edit reached a TaskRun's admission %v after the write returned", time.Since(edited).Round(time.Millisecond))
}
