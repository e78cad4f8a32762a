package main

import (
	"context"
	"fmt"
	"net"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratacfg/strata/layers/namespaced"
)

// webhookConfiguration is the MutatingWebhookConfiguration that sends the
// creation of batch/v1 Jobs to https://host:port/mutate-batch-v1-job. It
// fails closed, so that no Job is created without its defaults, but never
// for kube-system or the controller's own namespace, so that the cluster
// and the controller can always create Jobs.
func webhookConfiguration(host string, port int, caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	url := "https://" + net.JoinHostPort(host, strconv.Itoa(port)) + WebhookPath
	fail, none, namespaced := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.NamespacedScope
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: WebhookName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "jobdefaults.config.strata.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"}, Scope: &namespaced,
				},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", SystemNamespace},
			}}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          new(int32(10)),
		}},
	}
}

// configMapWebhookConfiguration is the ValidatingWebhookConfiguration that
// sends the layer ConfigMaps (the namespace overrides, and the ConfigMaps
// of the controller's namespace) to https://host:port/validate-configmaps,
// with the selectors the resolver gives, so that no other ConfigMap
// reaches it. It fails open: the resolver refuses an invalid layer at run
// time anyway, and an operator must be able to fix the cluster ConfigMap
// while the controller is down; the webhook is there so that whoever
// writes a layer learns at once what is wrong with it.
func configMapWebhookConfiguration(host string, port int, caBundle []byte, tenant, cluster namespaced.WebhookSelectors) *admissionregistrationv1.ValidatingWebhookConfiguration {
	url := "https://" + net.JoinHostPort(host, strconv.Itoa(port)) + ConfigMapWebhookPath
	ignore, none, scope := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.NamespacedScope
	hook := func(name string, sel namespaced.WebhookSelectors) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name:         name,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}, Scope: &scope},
			}},
			ObjectSelector: sel.ObjectSelector, NamespaceSelector: sel.NamespaceSelector,
			FailurePolicy: &ignore, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: new(int32(5)),
		}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigMapWebhookName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			hook("overrides.jobdefaults.config.strata.dev", tenant),
			hook("cluster.jobdefaults.config.strata.dev", cluster),
		},
	}
}

// registerWebhook creates the webhook configurations, or updates them to
// point at this process.
func registerWebhook(ctx context.Context, reader client.Reader, c client.Client, f *flags, caBundle []byte, tenant, cluster namespaced.WebhookSelectors) error {
	if err := ensure(ctx, reader, c, webhookConfiguration(f.host, f.port, caBundle), &admissionregistrationv1.MutatingWebhookConfiguration{},
		func(cur, want *admissionregistrationv1.MutatingWebhookConfiguration) { cur.Webhooks = want.Webhooks }); err != nil {
		return err
	}
	return ensure(ctx, reader, c, configMapWebhookConfiguration(f.host, f.port, caBundle, tenant, cluster), &admissionregistrationv1.ValidatingWebhookConfiguration{},
		func(cur, want *admissionregistrationv1.ValidatingWebhookConfiguration) { cur.Webhooks = want.Webhooks })
}

// ensure creates want, or updates the object of its name to it.
func ensure[O client.Object](ctx context.Context, reader client.Reader, c client.Client, want, cur O, update func(cur, want O)) error {
	err := reader.Get(ctx, types.NamespacedName{Name: want.GetName()}, cur)
	switch {
	case apierrors.IsNotFound(err):
		return c.Create(ctx, want, client.FieldOwner(FieldManager))
	case err != nil:
		return err
	}
	update(cur, want)
	if err := c.Update(ctx, cur, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("updating %s: %w", want.GetName(), err)
	}
	return nil
}
