package namespaced

import (
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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stratacfg/strata/internal/admissionreview"
	"github.com/stratacfg/strata/internal/text"
)

// CheckConfigMap says whether cm may be written as it is: a cluster
// ConfigMap that makes the cluster configuration invalid, a selector
// ConfigMap that does not parse, and a namespace ConfigMap that would be
// ignored as a whole are each an error listing the problems; a namespace
// ConfigMap whose keys the tenant policy refuses is accepted, with one
// warning per refused key (so `kubectl apply` shows the tenant why), and
// so is one that namespace overrides are closed to. A ConfigMap that is no
// layer gets neither. It checks against the cluster configuration in
// effect, read through the resolver's cache (a Direct resolver reads it
// with its client); it changes nothing.
func (r *Resolver[T]) CheckConfigMap(ctx context.Context, cm *corev1.ConfigMap) (warnings []string, err error) {
	return r.c.check(ctx, r.st.view, cm)
}

// check is CheckConfigMap against the cluster configuration view returns.
func (c *core[T]) check(ctx context.Context, view func(context.Context) (clusterView[T], error), cm *corev1.ConfigMap) (warnings []string, err error) {
	switch {
	case c.isCluster(cm):
		v, err := view(ctx)
		if err != nil {
			return nil, err
		}
		// With the other cluster ConfigMaps as stored, then, when they
		// are refused, as they were last valid: a write that fixes what
		// is stored, or that is valid beside what was, is admitted.
		bases := []map[string]*corev1.ConfigMap{v.cl.cms}
		if v.invalid != nil {
			bases = []map[string]*corev1.ConfigMap{v.stored, v.cl.cms}
		}
		var first error
		for i, base := range bases {
			next := maps.Clone(base)
			if next == nil {
				next = map[string]*corev1.ConfigMap{}
			}
			next[cm.Name] = cm
			_, err := c.parseCluster(next)
			switch {
			case err == nil && i == len(bases)-1 && v.invalid != nil:
				return storedInvalid(v.invalid), nil
			case err == nil:
				return nil, nil
			case first == nil:
				first = err
			}
		}
		return nil, first
	case c.isSelector(cm):
		if sl := c.readSelectors([]*corev1.ConfigMap{cm})[0]; sl.err != nil {
			return nil, sl.err
		}
		return nil, nil
	case !slices.Contains(c.ownCMs, cm.Name) || c.system(cm.Namespace):
		return nil, nil
	case !c.nsLabels.Matches(labels.Set(cm.Labels)):
		return []string{fmt.Sprintf("%s is named as a namespace layer but lacks the labels %s: it is not applied", ConfigMapSource(cm, OriginNamespace), c.nsLabels)}, nil
	}
	v, err := view(ctx)
	if err != nil {
		return nil, err
	}
	cl := v.cl
	warnings = storedInvalid(v.invalid)
	src := ConfigMapSource(cm, OriginNamespace)
	if !cl.policy.open {
		warnings = append(warnings, fmt.Sprintf("%s: namespace overrides are closed by the operator: it is not applied until they open", src))
		// Checked all the same, as if they were open.
	}
	open := *cl.policy
	open.open = true
	in := inputs[T]{cluster: &clusterState[T]{cms: cl.cms, layers: cl.layers, policy: &open, stack: cl.stack, base: cl.base}, cms: []*corev1.ConfigMap{cm}}
	s, ignored, err := c.build(in)
	if err != nil {
		return nil, err
	}
	for _, ig := range ignored {
		if ig.cm == cm {
			return nil, ig.err
		}
	}
	for _, d := range s.Rejected() {
		if d.Source.Name != src.Name {
			continue
		}
		w := fmt.Sprintf("%s: key %q not applied: %s", src, d.Key, d.Why())
		if d.Field != "" {
			w += " (field " + d.Field + " under it)"
		}
		warnings = append(warnings, w)
	}
	return warnings, nil
}

// AdmissionHandler returns an admission.k8s.io/v1 webhook handler that
// checks ConfigMaps with CheckConfigMap on CREATE and UPDATE: an invalid
// layer is denied with its problems, refused keys come back as admission
// warnings. Register it as ConfigMapWebhook builds the registration, so
// that no other ConfigMap reaches it.
func (r *Resolver[T]) AdmissionHandler() http.Handler { return r.c.admissionHandler(r.st.view) }

// admissionHandler is AdmissionHandler checking against what view
// returns.
func (c *core[T]) admissionHandler(view func(context.Context) (clusterView[T], error)) http.Handler {
	return admissionreview.Handler(func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return c.review(ctx, view, req)
	})
}

// review answers one admission request.
func (c *core[T]) review(ctx context.Context, view func(context.Context) (clusterView[T], error), req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Kind.Group != "" || req.Kind.Kind != "ConfigMap" || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return resp
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(req.Object.Raw, &cm); err != nil {
		return admissionreview.Denied(http.StatusBadRequest, metav1.StatusReasonBadRequest, "not a ConfigMap: "+err.Error())
	}
	if cm.Namespace == "" {
		cm.Namespace = req.Namespace
	}
	warnings, err := c.check(ctx, view, &cm)
	if err != nil {
		code := int32(http.StatusUnprocessableEntity)
		if errors.Is(err, errNotStarted) {
			code = http.StatusServiceUnavailable
		}
		return admissionreview.Denied(code, metav1.StatusReasonInvalid, text.Cut(err.Error(), maxNote*4))
	}
	for _, w := range warnings {
		resp.Warnings = append(resp.Warnings, text.Cut(w, 512))
	}
	return resp
}

// ConfigMapWebhook returns the ValidatingWebhookConfiguration named name
// that sends the layer ConfigMaps of a resolver built with o to client,
// and no other ConfigMap. It needs no resolver: an installer, a chart's
// generator or a test builds it from the options alone. name is a fully
// qualified domain name (three segments at least, as webhook names must
// be); its two webhooks are named after it:
//
//   - tenant.NAME sees the namespace layers: the ConfigMaps that carry
//     o.Labels, outside the system namespaces and o.Namespace;
//   - cluster.NAME sees the ConfigMaps of o.Namespace, its cluster and
//     selector ConfigMaps.
//
// Both check CREATE and UPDATE of v1 ConfigMaps, have no side effects,
// speak AdmissionReview v1, time out after 5 s and fail open: the
// resolver refuses a bad layer at run time in any case, and an operator
// must be able to fix the cluster ConfigMap while the webhook is down.
// Serve AdmissionHandler (or stratacr's ConfigMapWebhook) at client.
func ConfigMapWebhook[T any](o Options[T], name string, client admissionregistrationv1.WebhookClientConfig) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	if errs := validation.IsDNS1123Subdomain("cluster." + name); len(errs) > 0 || strings.Count(name, ".") < 2 {
		return nil, fmt.Errorf("namespaced: webhook name %q: a fully qualified domain name is needed, of three segments at least", name)
	}
	c, err := newCore(o)
	if err != nil {
		return nil, err
	}
	const nameLabel = "kubernetes.io/metadata.name" // set on every namespace since Kubernetes 1.22
	excluded := []string{c.o.Namespace}
	if c.o.Tenancy.SystemNamespaces == nil {
		excluded = append(excluded, defaultSystemNamespaces...)
	} else {
		excluded = append(excluded, c.o.Tenancy.SystemNamespaces...)
	}
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
			hook("tenant", &metav1.LabelSelector{MatchLabels: maps.Clone(c.o.Labels)},
				&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: nameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: excluded}}}),
			hook("cluster", nil, &metav1.LabelSelector{MatchLabels: map[string]string{nameLabel: c.o.Namespace}}),
		},
	}, nil
}

// storedInvalid is the warning of a ConfigMap judged against the last
// valid cluster configuration, or the defaults, because the cluster
// ConfigMaps as stored are invalid: never a denial, so that no stored
// mistake refuses every write, its fix included.
func storedInvalid(invalid error) []string {
	if invalid == nil {
		return nil
	}
	return []string{"judged against the last valid cluster configuration (or the defaults): the cluster ConfigMaps as stored are refused: " + text.Cut(invalid.Error(), text.MaxMessage)}
}
