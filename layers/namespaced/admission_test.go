package namespaced

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
		{"a parser's error", tenant("ns-feature-flags", map[string]string{"per-namespace-configuration": "yes"}), []string{
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

// TestAdmissionHandler sends AdmissionReviews to the handler, as the API
// server does.
func TestAdmissionHandler(t *testing.T) {
	flags := configMap("pipelines", "feature-flags", nil, map[string]string{"per-namespace-configuration": "false"})
	r, err := NewFromReader(newObjectReader(flags), pipelineOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	srv := httptest.NewServer(r.AdmissionHandler())
	defer srv.Close()
	send := func(op admissionv1.Operation, cm *corev1.ConfigMap) *admissionv1.AdmissionResponse {
		t.Helper()
		ns := cm.Namespace
		cm = cm.DeepCopy()
		cm.Namespace = "" // a create's object may not say; the request does
		raw, _ := json.Marshal(cm)
		review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: "u1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
				Operation: op, Namespace: ns, Object: runtime.RawExtension{Raw: raw}}}
		body, _ := json.Marshal(review)
		resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
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
	tenant := configMap("team", "ns-config-defaults", map[string]string{"pipeline-config": "true"}, map[string]string{"default-service-account": "x", "nope": "y"})
	if resp := send(admissionv1.Create, tenant); !resp.Allowed || len(resp.Warnings) != 2 ||
		resp.Warnings[0] != "namespace team/ns-config-defaults: namespace overrides are closed by the operator: it is not applied until they open" ||
		resp.Warnings[1] != `namespace team/ns-config-defaults: key "config-defaults/nope" not applied: not an overridable key` {
		t.Errorf("a tenant ConfigMap with the gate closed: %+v", resp)
	}
	bad := configMap("pipelines", "feature-flags", nil, map[string]string{"per-namespace-configuration": "maybe"})
	if resp := send(admissionv1.Update, bad); resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, `"maybe" is neither "false" nor "true"`) || resp.Result.Code != 422 {
		t.Errorf("an invalid cluster ConfigMap: %+v", resp)
	}
	if resp := send(admissionv1.Delete, bad); !resp.Allowed {
		t.Errorf("a delete is not checked: %+v", resp)
	}

}

// TestConfigMapWebhook builds the registration of the ConfigMap webhook
// from the options alone: two webhooks that fail open, one for the
// tenants' labelled ConfigMaps outside the system namespaces and the
// component's, one for the component's namespace.
func TestConfigMapWebhook(t *testing.T) {
	url := "https://127.0.0.1:9443/validate-configmaps"
	ca := []byte("PEM")
	vwc, err := ConfigMapWebhook(pipelineOptions(), "configmaps.pipelines.example.dev", admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca})
	if err != nil {
		t.Fatal(err)
	}
	ca[0] = 'X' // the configuration keeps its own copy
	if vwc.Name != "configmaps.pipelines.example.dev" || len(vwc.Webhooks) != 2 {
		t.Fatalf("%+v", vwc)
	}
	tenant, cluster := vwc.Webhooks[0], vwc.Webhooks[1]
	if tenant.Name != "tenant.configmaps.pipelines.example.dev" || tenant.ObjectSelector.MatchLabels["pipeline-config"] != "true" ||
		!slices.Equal(tenant.NamespaceSelector.MatchExpressions[0].Values, []string{"pipelines", "kube-system", "kube-public", "kube-node-lease"}) ||
		tenant.NamespaceSelector.MatchExpressions[0].Operator != metav1.LabelSelectorOpNotIn {
		t.Errorf("tenant webhook %+v", tenant)
	}
	if cluster.Name != "cluster.configmaps.pipelines.example.dev" || cluster.ObjectSelector != nil ||
		cluster.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "pipelines" {
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
	if _, err := ConfigMapWebhook(pipelineOptions(), "configmaps", admissionregistrationv1.WebhookClientConfig{URL: &url}); err == nil || !strings.Contains(err.Error(), "fully qualified") {
		t.Errorf("a name of one segment: %v", err)
	}
	bad := pipelineOptions()
	bad.Labels = nil
	if _, err := ConfigMapWebhook(bad, "configmaps.pipelines.example.dev", admissionregistrationv1.WebhookClientConfig{URL: &url}); err == nil {
		t.Error("options without labels: no error")
	}
}
