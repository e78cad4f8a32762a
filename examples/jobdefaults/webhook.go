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

	"github.com/stratacfg/strata/examples/controller/apis/defaults/v1alpha1"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/webhook"
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

// registerWebhook creates the webhook configurations, or updates them to
// point at this process: the Job webhook, and the layer ConfigMaps'
// (webhook.Configuration: only the ConfigMaps the resolver reads,
// failing open, so that an operator can fix the cluster ConfigMap while
// the controller is down).
func registerWebhook(ctx context.Context, reader client.Reader, c client.Client, f *flags, caBundle []byte, o namespaced.Options[*v1alpha1.JobDefaults]) error {
	if err := ensure(ctx, reader, c, webhookConfiguration(f.host, f.port, caBundle), &admissionregistrationv1.MutatingWebhookConfiguration{},
		func(cur, want *admissionregistrationv1.MutatingWebhookConfiguration) { cur.Webhooks = want.Webhooks }); err != nil {
		return err
	}
	url := "https://" + net.JoinHostPort(f.host, strconv.Itoa(f.port)) + ConfigMapWebhookPath
	cms, err := webhook.Configuration(o, ConfigMapWebhookName, admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle})
	if err != nil {
		return err
	}
	return ensure(ctx, reader, c, cms, &admissionregistrationv1.ValidatingWebhookConfiguration{},
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
