// Package webhook admits the layer ConfigMaps of a namespaced resolver
// when they are written: Handler serves a resolver's CheckConfigMap as an
// admission.k8s.io/v1 validating webhook, and Configuration builds the
// ValidatingWebhookConfiguration that sends it those ConfigMaps and no
// other, from the resolver's options alone (an installer or a chart's
// generator needs no running resolver).
//
// An invalid cluster or selector ConfigMap, and a tenant ConfigMap that
// would be ignored as a whole, are denied with their problems; a tenant
// ConfigMap whose keys the tenant policy refuses is admitted with one
// warning per refused key, which `kubectl apply` shows. The webhook fails
// open: the resolver refuses a bad layer when it reads it in any case, and
// an operator must be able to fix the cluster ConfigMap while the webhook
// is down or not yet started.
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stratacfg/strata/internal/admissionreview"
	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
)

// Checker checks a ConfigMap as a resolver would read it:
// namespaced.Resolver and namespaced.Direct are Checkers.
type Checker interface {
	CheckConfigMap(ctx context.Context, cm *corev1.ConfigMap) (warnings []string, err error)
}

// maxMessage bounds a denial's message, maxWarning each warning: the API
// server passes both on to the client whole.
const maxMessage, maxWarning = 4096, 512

// Handler serves c's check on CREATE and UPDATE of ConfigMaps: a ConfigMap
// c refuses is denied with its problems (422), and c's warnings come back
// as admission warnings. Until c has started (namespaced.ErrNotStarted) a
// ConfigMap is admitted unchecked with a warning that says so, as a
// webhook that is down would admit it. An update that changes nothing a
// resolver reads is admitted unchecked, and so is any other request.
func Handler(c Checker) http.Handler {
	return admissionreview.Handler(func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		resp := &admissionv1.AdmissionResponse{Allowed: true}
		if req.Kind.Group != "" || req.Kind.Kind != "ConfigMap" || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
			return resp
		}
		var cm corev1.ConfigMap
		if err := json.Unmarshal(req.Object.Raw, &cm); err != nil {
			return admissionreview.Denied(http.StatusBadRequest, metav1.StatusReasonBadRequest, "not a ConfigMap: "+text.Cut(err.Error(), maxWarning))
		}
		if cm.Namespace == "" {
			cm.Namespace = req.Namespace
		}
		var old corev1.ConfigMap
		if req.Operation == admissionv1.Update && json.Unmarshal(req.OldObject.Raw, &old) == nil && sameRead(&old, &cm) {
			return resp // a finalizer or an owner changed: what is stored stays as it was judged
		}
		warnings, err := c.CheckConfigMap(ctx, &cm)
		switch {
		case errors.Is(err, namespaced.ErrNotStarted):
			warnings = []string{"not checked: the configuration resolver has not started yet"}
		case err != nil:
			return admissionreview.Denied(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, text.Cut(err.Error(), maxMessage))
		}
		for _, w := range warnings {
			resp.Warnings = append(resp.Warnings, text.Cut(w, maxWarning))
		}
		return resp
	})
}

// sameRead reports whether two versions of a ConfigMap hold the same of
// what a resolver reads: its data, binary data, labels and annotations.
// An update that changes none of them (a finalizer taken off, as the last
// step of a deletion) is admitted unchecked: denying it because what is
// stored is invalid would keep the ConfigMap from ever being deleted.
func sameRead(a, b *corev1.ConfigMap) bool {
	return maps.Equal(a.Data, b.Data) && maps.EqualFunc(a.BinaryData, b.BinaryData, bytes.Equal) &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations)
}

// Configuration returns the ValidatingWebhookConfiguration named name that
// sends the layer ConfigMaps of a resolver built with o to client, and no
// other ConfigMap. name is a fully qualified domain name (three segments
// at least, as webhook names must be); its two webhooks are named after
// it:
//
//   - tenant.NAME sees the namespace layers: the ConfigMaps that carry
//     o.Labels, outside the system namespaces and o.Namespace;
//   - cluster.NAME sees the ConfigMaps of o.Namespace, its cluster and
//     selector ConfigMaps.
//
// Both check CREATE and UPDATE of v1 ConfigMaps, have no side effects,
// speak AdmissionReview v1, time out after 5 s and fail open. Serve
// Handler at client.
func Configuration[T any](o namespaced.Options[T], name string, client admissionregistrationv1.WebhookClientConfig) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	if errs := validation.IsDNS1123Subdomain("cluster." + name); len(errs) > 0 || strings.Count(name, ".") < 2 {
		return nil, fmt.Errorf("webhook: name %q: a fully qualified domain name is needed, of three segments at least", name)
	}
	if _, err := namespaced.NewDryRun(o); err != nil { // checks o
		return nil, err
	}
	const nameLabel = "kubernetes.io/metadata.name" // set on every namespace since Kubernetes 1.22
	system := o.Tenancy.SystemNamespaces
	if system == nil {
		system = tenancy.DefaultSystemNamespaces()
	}
	excluded := append([]string{o.Namespace}, system...)
	ignore, none, scope := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.NamespacedScope
	hook := func(prefix string, objects, namespaces *metav1.LabelSelector) admissionregistrationv1.ValidatingWebhook {
		cc := client
		cc.CABundle = slices.Clone(client.CABundle)
		return admissionregistrationv1.ValidatingWebhook{
			Name:         prefix + "." + name,
			ClientConfig: cc,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}, Scope: &scope},
			}},
			ObjectSelector: objects, NamespaceSelector: namespaces,
			FailurePolicy: &ignore, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: new(int32(5)),
		}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			hook("tenant", &metav1.LabelSelector{MatchLabels: maps.Clone(o.Labels)},
				&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: nameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: excluded}}}),
			hook("cluster", nil, &metav1.LabelSelector{MatchLabels: map[string]string{nameLabel: o.Namespace}}),
		},
	}, nil
}
