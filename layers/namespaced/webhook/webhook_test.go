package webhook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stratacfg/strata/internal/testkind"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/namespacedtest"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
	"github.com/stratacfg/strata/layers/namespaced/webhook"
)

func options(t *testing.T) namespaced.Options[*testkind.Defaults] {
	t.Helper()
	kind, err := testkind.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	return namespaced.Options[*testkind.Defaults]{
		Kind: kind, Namespace: "strata-system", ClusterConfigMap: "strata-defaults",
		NamespaceConfigMaps: []string{"strata-overrides"}, Labels: map[string]string{"config.strata.dev/type": "namespace"},
		Tenancy: tenancy.Policy{GateKey: "enforced-config-level", GateOpen: "namespace", GateClosed: "cluster",
			LockKey: "non-overridable-fields"},
	}
}

// review sends cm to the handler at url in an AdmissionReview, as the API
// server does, and returns the response.
func review(t *testing.T, url string, op admissionv1.Operation, cm *corev1.ConfigMap) *admissionv1.AdmissionResponse {
	t.Helper()
	return reviewUpdate(t, url, op, cm, nil)
}

// reviewUpdate is review with old as the request's oldObject (none when
// nil), as the API server sends it on an update.
func reviewUpdate(t *testing.T, url string, op admissionv1.Operation, cm, old *corev1.ConfigMap) *admissionv1.AdmissionResponse {
	t.Helper()
	ns := cm.Namespace
	cm = cm.DeepCopy()
	cm.Namespace = "" // a create's object may not say; the request does
	raw, _ := json.Marshal(cm)
	in := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			Operation: op, Namespace: ns, Object: runtime.RawExtension{Raw: raw}}}
	if old != nil {
		in.Request.OldObject.Raw, _ = json.Marshal(old)
	}
	body, _ := json.Marshal(in)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil || out.Response.UID != "u1" {
		t.Fatalf("response: %v, %+v", err, out)
	}
	return out.Response
}

// TestHandler serves a resolver's check: refused keys come back as
// warnings, an invalid cluster ConfigMap is denied with its problem, and
// a delete or another kind is not checked.
func TestHandler(t *testing.T) {
	o := options(t)
	r, err := namespacedtest.New(o, namespacedtest.ClusterConfigMap(o, map[string]string{"enforced-config-level": "cluster"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	srv := httptest.NewServer(webhook.Handler(r))
	defer srv.Close()

	tenant := namespacedtest.NamespaceConfigMap(o, "team", "strata-overrides", map[string]string{"default-service-account": "x", "max-timeout-seconds": "5"})
	if resp := review(t, srv.URL, admissionv1.Create, tenant); !resp.Allowed || len(resp.Warnings) != 2 ||
		resp.Warnings[0] != "namespace team/strata-overrides: namespace overrides are closed by the operator: it is not applied until they open" ||
		resp.Warnings[1] != `namespace team/strata-overrides: key "max-timeout-seconds" not applied: cluster-only key` {
		t.Errorf("a tenant ConfigMap with the gate closed: %+v", resp)
	}
	bad := namespacedtest.ClusterConfigMap(o, map[string]string{"max-timeout-seconds": "-1"})
	if resp := review(t, srv.URL, admissionv1.Update, bad); resp.Allowed || resp.Result == nil || resp.Result.Code != 422 ||
		!strings.Contains(resp.Result.Message, "max-timeout-seconds") || !strings.Contains(resp.Result.Message, "must be positive") {
		t.Errorf("an invalid cluster ConfigMap: %+v", resp)
	}
	if resp := review(t, srv.URL, admissionv1.Delete, bad); !resp.Allowed || resp.Warnings != nil {
		t.Errorf("a delete is not checked: %+v", resp)
	}
}

// TestHandlerBeforeStart admits unchecked, with a warning, as a webhook
// that is down would: it fails open.
func TestHandlerBeforeStart(t *testing.T) {
	o := options(t)
	r, err := namespaced.NewFromReader(namespaced.ListerReader(nil, nil), o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(webhook.Handler(r))
	defer srv.Close()
	bad := namespacedtest.ClusterConfigMap(o, map[string]string{"max-timeout-seconds": "-1"})
	if resp := review(t, srv.URL, admissionv1.Create, bad); !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "not checked") {
		t.Errorf("before start: %+v", resp)
	}
}

// TestConfiguration builds the registration from the options alone: two
// webhooks that fail open, one for the tenants' labelled ConfigMaps
// outside the system namespaces and the component's, one for the
// component's namespace.
func TestConfiguration(t *testing.T) {
	url := "https://127.0.0.1:9443/validate-configmaps"
	ca := []byte("PEM")
	o := options(t)
	vwc, err := webhook.Configuration(o, "configmaps.strata.example.dev", admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca})
	if err != nil {
		t.Fatal(err)
	}
	ca[0] = 'X' // the configuration keeps its own copy
	if vwc.Name != "configmaps.strata.example.dev" || len(vwc.Webhooks) != 2 {
		t.Fatalf("%+v", vwc)
	}
	tenant, cluster := vwc.Webhooks[0], vwc.Webhooks[1]
	if tenant.Name != "tenant.configmaps.strata.example.dev" || tenant.ObjectSelector.MatchLabels["config.strata.dev/type"] != "namespace" ||
		!slices.Equal(tenant.NamespaceSelector.MatchExpressions[0].Values, []string{"strata-system", "kube-system", "kube-public", "kube-node-lease"}) ||
		tenant.NamespaceSelector.MatchExpressions[0].Operator != metav1.LabelSelectorOpNotIn {
		t.Errorf("tenant webhook %+v", tenant)
	}
	if cluster.Name != "cluster.configmaps.strata.example.dev" || cluster.ObjectSelector != nil ||
		cluster.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "strata-system" {
		t.Errorf("cluster webhook %+v", cluster)
	}
	for _, h := range vwc.Webhooks {
		if *h.FailurePolicy != admissionregistrationv1.Ignore || *h.SideEffects != admissionregistrationv1.SideEffectClassNone ||
			*h.ClientConfig.URL != url || string(h.ClientConfig.CABundle) != "PEM" ||
			!slices.Equal(h.Rules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}) ||
			!slices.Equal(h.Rules[0].Resources, []string{"configmaps"}) {
			t.Errorf("webhook %s: %+v", h.Name, h)
		}
	}
	o.Tenancy.SystemNamespaces = []string{"infra"}
	if vwc, err := webhook.Configuration(o, "configmaps.strata.example.dev", admissionregistrationv1.WebhookClientConfig{URL: &url}); err != nil ||
		!slices.Equal(vwc.Webhooks[0].NamespaceSelector.MatchExpressions[0].Values, []string{"strata-system", "infra"}) {
		t.Errorf("system namespaces of the options: %v, %+v", err, vwc)
	}
	if _, err := webhook.Configuration(o, "configmaps", admissionregistrationv1.WebhookClientConfig{URL: &url}); err == nil || !strings.Contains(err.Error(), "fully qualified") {
		t.Errorf("a name of one segment: %v", err)
	}
	o.Labels = nil
	if _, err := webhook.Configuration(o, "configmaps.strata.example.dev", admissionregistrationv1.WebhookClientConfig{URL: &url}); err == nil {
		t.Error("options without labels: no error")
	}
}

// TestDenialNamesTheConfigMapKey: a tenant ConfigMap denied for one of
// its keys names that key as the ConfigMap holds it, as the warnings do
// (issue 23, item 9: "one spelling everywhere a user sees a key"), not
// as a JSON pointer.
func TestDenialNamesTheConfigMapKey(t *testing.T) {
	o := options(t)
	r, err := namespacedtest.New(o, namespacedtest.ClusterConfigMap(o, map[string]string{"enforced-config-level": "namespace"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	srv := httptest.NewServer(webhook.Handler(r))
	defer srv.Close()
	for key, value := range map[string]string{"default-timeout-seconds": "abc", "no-such-key": "1"} {
		tenant := namespacedtest.NamespaceConfigMap(o, "team", "strata-overrides", map[string]string{key: value})
		resp := review(t, srv.URL, admissionv1.Create, tenant)
		if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, "team/strata-overrides") ||
			!strings.Contains(resp.Result.Message, `key "`+key+`"`) {
			t.Errorf("%s: %q: want the ConfigMap and key %q named as the ConfigMap holds it: %+v", key, value, key, resp.Result)
		}
	}
}

// TestHandlerFailsOpenWhenTheClusterCannotBeRead: a Direct resolver that
// cannot read the cluster ConfigMap (the API server busy, RBAC missing)
// has not judged the ConfigMap; the webhook fails open, as the package
// doc says ("an operator must be able to fix the cluster ConfigMap while
// the webhook is down"), instead of denying every layer, the operator's
// fix included, as invalid (422).
func TestHandlerFailsOpenWhenTheClusterCannotBeRead(t *testing.T) {
	o := options(t)
	o.NoEvents = true
	c := fake.NewClientset()
	c.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "strata-defaults", errors.New("RBAC: not allowed"))
	})
	d, err := namespaced.NewDirect(c, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	srv := httptest.NewServer(webhook.Handler(d))
	defer srv.Close()
	fix := namespacedtest.ClusterConfigMap(o, map[string]string{"max-timeout-seconds": "600"})
	tenant := namespacedtest.NamespaceConfigMap(o, "team", "strata-overrides", map[string]string{"default-timeout-seconds": "5"})
	for name, cm := range map[string]*corev1.ConfigMap{"the cluster ConfigMap": fix, "a tenant ConfigMap": tenant} {
		if resp := review(t, srv.URL, admissionv1.Update, cm); !resp.Allowed || !strings.Contains(strings.Join(resp.Warnings, "\n"), "not checked") {
			t.Errorf("%s, with the cluster unreadable: allowed %v (%+v), warnings %q; want it admitted with a warning that it was not checked", name, resp.Allowed, resp.Result, resp.Warnings)
		}
	}
}

// TestHandlerLetsADeletionFinish: an update of a layer ConfigMap that is
// being deleted (the garbage collector taking off the foregroundDeletion
// or orphan finalizer of `kubectl delete --cascade=foreground|orphan`)
// changes nothing a resolver reads; denying it because the data are
// invalid keeps the ConfigMap terminating for ever.
func TestHandlerLetsADeletionFinish(t *testing.T) {
	o := options(t)
	o.StartOnDefaults = true
	// Both stored invalid: written while the fail-open webhook was down.
	now := metav1.Now()
	cluster := namespacedtest.ClusterConfigMap(o, map[string]string{"enforced-config-level": "namespace", "max-timeout-seconds": "-1"})
	tenant := namespacedtest.NamespaceConfigMap(o, "team", "strata-overrides", map[string]string{"default-timeout-seconds": "abc"})
	r, err := namespacedtest.New(o, cluster, tenant)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	srv := httptest.NewServer(webhook.Handler(r))
	defer srv.Close()
	for name, cm := range map[string]*corev1.ConfigMap{"tenant": tenant, "cluster": cluster} {
		old := cm.DeepCopy()
		old.DeletionTimestamp, old.Finalizers = &now, []string{metav1.FinalizerOrphanDependents}
		cm = cm.DeepCopy()
		cm.DeletionTimestamp = &now // deleted; the update takes its last finalizer off
		if resp := reviewUpdate(t, srv.URL, admissionv1.Update, cm, old); !resp.Allowed {
			t.Errorf("%s ConfigMap being deleted, its finalizer removed: denied: %+v", name, resp.Result)
		}
		// An update of what the resolver reads is checked, deleted or not.
		cm.Data = maps.Clone(cm.Data)
		cm.Data["default-timeout-seconds"] = "xyz"
		if resp := reviewUpdate(t, srv.URL, admissionv1.Update, cm, old); resp.Allowed {
			t.Errorf("%s ConfigMap being deleted, its data changed to invalid: admitted", name)
		}
	}
}
