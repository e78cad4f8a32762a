package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
	"github.com/stratacfg/strata/internal/admissionreview"
	"github.com/stratacfg/strata/merge"
)

// The validating webhook.
const (
	webhookName = "strata-plugins.greenhouse.sap"
	webhookPath = "/validate"
)

// validator refuses what the example cannot compute a Plugin's values
// from: an option given twice in one list, a preset with two overrides
// for one cluster, an override naming an option its definition does not
// have; each refusal names the object, the fields and their positions.
//
// A PluginOverride that would contest an option of a Plugin with another
// override as specific is admitted with a warning per contest, or, when
// contests are errors, refused.
type validator struct {
	objs     greenhouse.Objects
	log      klog.Logger
	settings greenhouse.Settings
	// objects reads the objects of a namespace, for the contests an
	// override would make (nil: none are looked for).
	objects func(namespace string) (*greenhouse.Set, error)
}

// handler serves the validator's reviews.
func (v *validator) handler() http.Handler {
	return admissionreview.Handler(func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if err := v.validate(req.Kind.Kind, req.Namespace, req.Object.Raw); err != nil {
			return admissionreview.Denied(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, err.Error())
		}
		resp := &admissionv1.AdmissionResponse{Allowed: true}
		if req.Kind.Kind != greenhouse.KindPluginOverride || v.objects == nil {
			return resp
		}
		// Within the API server's timeout, leaving it time to answer.
		ctx, cancel := context.WithTimeout(ctx, contestsTimeout)
		defer cancel()
		lines := v.contests(ctx, req.Namespace, req.Object.Raw)
		if len(lines) > 0 && v.settings.ContestsAreErrors {
			return admissionreview.Denied(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
				strings.Join(lines, "\n")+"\n(contests are errors here: give one of the overrides a more specific selector, or make them agree)")
		}
		for _, l := range lines {
			resp.Warnings = append(resp.Warnings, admissionWarning(l))
		}
		return resp
	})
}

// contestsTimeout bounds the search for contests in one admission: the
// API server waits 10 s for the webhook.
const contestsTimeout = 5 * time.Second

// contests returns the contests the override raw, written to namespace,
// would take part in (greenhouse.ContestsWith), at most ten.
func (v *validator) contests(ctx context.Context, namespace string, raw []byte) []string {
	set := greenhouse.NewSet()
	if _, err := set.Add(greenhouse.KindPluginOverride, raw); err != nil {
		return nil
	}
	objs, err := v.objects(namespace)
	if err != nil {
		v.log.Info("Cannot read the objects to look for contests", "err", err)
		return nil
	}
	for _, o := range set.Overrides {
		if o.Namespace == "" {
			o.Namespace = namespace
		}
		lines := greenhouse.ContestsWith(ctx, objs, o, v.settings)
		if len(lines) > 10 {
			lines = append(lines[:10], fmt.Sprintf("and %d more", len(lines)-10))
		}
		return lines
	}
	return nil
}

// validate checks one object of kind.
func (v *validator) validate(kind, namespace string, raw []byte) error {
	set := greenhouse.NewSet()
	if _, err := set.Add(kind, raw); err != nil {
		return err
	}
	switch kind {
	case greenhouse.KindPluginPreset:
		for _, p := range set.Presets {
			return v.preset(p)
		}
	case greenhouse.KindPlugin:
		for _, p := range set.Plugins {
			return prefixed("Plugin "+name(p.ObjectMeta), greenhouse.Duplicates(p.Spec.OptionValues, "spec.optionValues"))
		}
	case greenhouse.KindPluginOverride:
		for _, o := range set.Overrides {
			return v.override(namespace, o)
		}
	}
	return nil
}

func (v *validator) preset(p *greenhouse.PluginPreset) error {
	def, err := v.objs.Definition(p.Namespace, p.Spec.Plugin.PluginDefinitionRef)
	if err != nil {
		return err
	}
	errs := []error{greenhouse.CheckPresetValues(p.Spec.Plugin.OptionValues, def, "spec.plugin.optionValues", p.Namespace)}
	seen := map[string]int{}
	for i, o := range p.Spec.ClusterOptionOverrides {
		field := fmt.Sprintf("spec.clusterOptionOverrides[%d]", i)
		if j, dup := seen[o.ClusterName]; dup {
			errs = append(errs, fmt.Errorf("%s and spec.clusterOptionOverrides[%d] both override cluster %s: give a cluster one entry", field, j, o.ClusterName))
		}
		seen[o.ClusterName] = i
		errs = append(errs, greenhouse.CheckPresetValues(o.Overrides, def, field+".overrides", p.Namespace))
	}
	return prefixed("PluginPreset "+name(p.ObjectMeta), errors.Join(errs...))
}

func (v *validator) override(namespace string, o *greenhouse.PluginOverride) error {
	_, _, err := greenhouse.OverrideLayer(merge.Source{}, o.Spec.Overrides, nil, "spec.overrides", namespace)
	errs := []error{err}
	if len(o.Spec.PluginDefinitionNames) == 0 {
		// For every plugin: checked against the definitions of the
		// namespace's Plugins, each value whose option one has.
		errs = append(errs, v.everyPlugin(namespace, o))
	}
	for _, d := range o.Spec.PluginDefinitionNames {
		def, err := v.objs.Definition(namespace, greenhouse.PluginDefinitionReference{Name: d, Kind: greenhouse.KindPluginDefinition})
		if err == nil && def == nil {
			def, err = v.objs.Definition(namespace, greenhouse.PluginDefinitionReference{Name: d, Kind: greenhouse.KindClusterPluginDefinition})
		}
		if err != nil {
			return err
		}
		if def == nil {
			continue // not there yet: its options are checked when it is used
		}
		if _, _, err := greenhouse.OverrideLayer(merge.Source{}, o.Spec.Overrides, def, "spec.overrides", namespace); err != nil {
			errs = append(errs, err)
		}
	}
	return prefixed("PluginOverride "+name(o.ObjectMeta), dedupe(errs))
}

// everyPlugin checks the values of o, an override for every plugin,
// against the definition of each Plugin of namespace, those of its
// options the definition has: a value one of them does not take is
// ignored for its Plugins, which the operator should hear of now.
func (v *validator) everyPlugin(namespace string, o *greenhouse.PluginOverride) error {
	plugins, err := v.objs.ListPlugins(namespace)
	if err != nil {
		return err
	}
	var errs []error
	seen := map[greenhouse.PluginDefinitionReference]bool{}
	for _, p := range plugins {
		ref := p.Spec.PluginDefinitionRef
		if seen[ref] {
			continue
		}
		seen[ref] = true
		def, err := v.objs.Definition(namespace, ref)
		if err != nil {
			return err
		}
		if def == nil {
			continue
		}
		for i, ov := range o.Spec.Overrides {
			if def.Option(ov.Name) == nil {
				continue
			}
			if err := greenhouse.OverrideValueFits(ov, i, def, "spec.overrides", namespace); err != nil {
				errs = append(errs, fmt.Errorf("for the Plugins of %s %s: %w", def.Kind, name(def.ObjectMeta), err))
			}
		}
	}
	return errors.Join(errs...)
}

// dedupe joins errs, each message once.
func dedupe(errs []error) error {
	seen := map[string]bool{}
	var out []error
	for _, err := range errs {
		if err == nil {
			continue
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !seen[line] {
				seen[line] = true
				out = append(out, errors.New(line))
			}
		}
	}
	return errors.Join(out...)
}

func prefixed(what string, err error) error { return greenhouse.Prefix(what, err) }

func name(m metav1.ObjectMeta) string { return m.Namespace + "/" + m.Name }

// registerWebhooks creates or updates the ValidatingWebhookConfiguration
// that sends PluginPresets, Plugins and PluginOverrides to host:port, and
// the MutatingWebhookConfiguration that sends it Plugins. The mutating
// webhook is called again when a later one (Greenhouse's, which merges
// the definition's defaults) changes the Plugin, and a Plugin is not
// written while it cannot be called: a write that passed without the
// overrides would undo them until the next one.
func registerWebhooks(ctx context.Context, kube kubernetes.Interface, host string, port int, caBundle []byte) error {
	base := "https://" + net.JoinHostPort(host, strconv.Itoa(port))
	validate, mutate := base+webhookPath, base+mutatePath
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	rule := func(resources ...string) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{greenhouse.Group.Group}, APIVersions: []string{greenhouse.Group.Version},
				Resources: resources,
			},
		}}
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhookName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    webhookName,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &validate, CABundle: caBundle},
			Rules:                   rule("pluginpresets", "plugins", "pluginoverrides"),
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhookName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    webhookName,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &mutate, CABundle: caBundle},
			Rules:                   rule("plugins"),
			FailurePolicy:           &fail,
			SideEffects:             &none,
			ReinvocationPolicy:      &ifNeeded,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	vapi := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if err := ensure(ctx, validating, vapi.Get, vapi.Create, vapi.Update, func(cur, want *admissionregistrationv1.ValidatingWebhookConfiguration) {
		cur.Webhooks = want.Webhooks
	}); err != nil {
		return err
	}
	mapi := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	return ensure(ctx, mutating, mapi.Get, mapi.Create, mapi.Update, func(cur, want *admissionregistrationv1.MutatingWebhookConfiguration) {
		cur.Webhooks = want.Webhooks
	})
}

// ensure creates want, or updates the object of its name to it.
func ensure[T interface{ GetName() string }](ctx context.Context, want T,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error),
	set func(cur, want T)) error {
	cur, err := get(ctx, want.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = create(ctx, want, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	set(cur, want)
	_, err = update(ctx, cur, metav1.UpdateOptions{})
	return err
}
