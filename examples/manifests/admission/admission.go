// Package admission loads kube-apiserver's manifest-based admission
// configuration (KEP-5793) through strata: for each admission plugin, the
// kinds that plugin takes from its static manifest directory, decoded,
// defaulted and validated by kube-apiserver's own scheme and validation
// (k8s.io/kubernetes v1.37.2), with the rules kube-apiserver adds for
// static manifests. Its decisions are kube-apiserver's; the differential
// test in ../differential checks them against kube-apiserver's loaders.
package admission

import (
	"errors"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	admissioninstall "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	admissionvalidation "k8s.io/kubernetes/pkg/apis/admissionregistration/validation"

	"github.com/stratacfg/strata/manifests"
	"github.com/stratacfg/strata/watch"
)

// StaticSuffix ends the name of every object of a static manifest
// directory, so that none can be confused with, or created through, the
// API.
const StaticSuffix = ".static.k8s.io"

// The admission plugins that read a static manifest directory.
const (
	ValidatingAdmissionPolicy  = "ValidatingAdmissionPolicy"
	MutatingAdmissionPolicy    = "MutatingAdmissionPolicy"
	ValidatingAdmissionWebhook = "ValidatingAdmissionWebhook"
	MutatingAdmissionWebhook   = "MutatingAdmissionWebhook"
)

// Plugins lists them.
var Plugins = []string{ValidatingAdmissionPolicy, MutatingAdmissionPolicy, ValidatingAdmissionWebhook, MutatingAdmissionWebhook}

// scheme holds every version of admissionregistration.k8s.io, internal
// included, and List and Status as unversioned kinds, as kube-apiserver's
// manifest loaders' scheme does: a document decodes into the version it
// names, and only v1 is then taken.
var scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	admissioninstall.Install(s)
	s.AddUnversionedTypes(metav1.SchemeGroupVersion, &metav1.List{}, &metav1.Status{})
	return s
}

// Options returns the manifest options of plugin: its kinds, with
// kube-apiserver's defaulting, validation and static-manifest rules.
func Options(plugin string) (manifests.Options, error) {
	o := manifests.Options{
		Decoder:    serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer(),
		NameSuffix: StaticSuffix,
	}
	switch plugin {
	case ValidatingAdmissionPolicy:
		o.Accept = acceptValidatingPolicies
		o.References = func(obj runtime.Object) []manifests.Reference {
			if b, ok := obj.(*admissionv1.ValidatingAdmissionPolicyBinding); ok {
				return policyReference(ValidatingAdmissionPolicy, b.Spec.PolicyName)
			}
			return nil
		}
	case MutatingAdmissionPolicy:
		o.Accept = acceptMutatingPolicies
		o.References = func(obj runtime.Object) []manifests.Reference {
			if b, ok := obj.(*admissionv1.MutatingAdmissionPolicyBinding); ok {
				return policyReference(MutatingAdmissionPolicy, b.Spec.PolicyName)
			}
			return nil
		}
	case ValidatingAdmissionWebhook:
		o.Accept = acceptValidatingWebhooks
	case MutatingAdmissionWebhook:
		o.Accept = acceptMutatingWebhooks
	default:
		return o, fmt.Errorf("unknown admission plugin %q; want one of %s", plugin, strings.Join(Plugins, ", "))
	}
	return o, nil
}

func policyReference(kind, name string) []manifests.Reference {
	return []manifests.Reference{{Field: field.NewPath("spec", "policyName"), Kind: kind, Name: name}}
}

// Load reads dir as one generation and loads it for plugin, as the
// watcher of examples/manifests does on every change.
func Load(dir, plugin string) (*manifests.Set, error) {
	opts, err := Options(plugin)
	if err != nil {
		return nil, err
	}
	w := manifests.Watch(dir, opts)
	g, err := watch.Read(dir, w.Read)
	if err != nil {
		return nil, err
	}
	return manifests.Load(g, opts)
}

func unsupported(obj runtime.Object) error {
	return fmt.Errorf("%w %T", manifests.ErrUnsupportedType, obj)
}

func acceptValidatingPolicies(obj runtime.Object) ([]runtime.Object, error) {
	switch o := obj.(type) {
	case *admissionv1.ValidatingAdmissionPolicy:
		return each(o, nil, checkValidatingPolicy)
	case *admissionv1.ValidatingAdmissionPolicyList:
		return each(nil, itemsOf(o.Items), checkValidatingPolicy)
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		return each(o, nil, checkValidatingBinding)
	case *admissionv1.ValidatingAdmissionPolicyBindingList:
		return each(nil, itemsOf(o.Items), checkValidatingBinding)
	}
	return nil, unsupported(obj)
}

func acceptMutatingPolicies(obj runtime.Object) ([]runtime.Object, error) {
	switch o := obj.(type) {
	case *admissionv1.MutatingAdmissionPolicy:
		return each(o, nil, checkMutatingPolicy)
	case *admissionv1.MutatingAdmissionPolicyList:
		return each(nil, itemsOf(o.Items), checkMutatingPolicy)
	case *admissionv1.MutatingAdmissionPolicyBinding:
		return each(o, nil, checkMutatingBinding)
	case *admissionv1.MutatingAdmissionPolicyBindingList:
		return each(nil, itemsOf(o.Items), checkMutatingBinding)
	}
	return nil, unsupported(obj)
}

func acceptValidatingWebhooks(obj runtime.Object) ([]runtime.Object, error) {
	switch o := obj.(type) {
	case *admissionv1.ValidatingWebhookConfiguration:
		return each(o, nil, checkValidatingWebhooks)
	case *admissionv1.ValidatingWebhookConfigurationList:
		return each(nil, itemsOf(o.Items), checkValidatingWebhooks)
	}
	return nil, unsupported(obj)
}

func acceptMutatingWebhooks(obj runtime.Object) ([]runtime.Object, error) {
	switch o := obj.(type) {
	case *admissionv1.MutatingWebhookConfiguration:
		return each(o, nil, checkMutatingWebhooks)
	case *admissionv1.MutatingWebhookConfigurationList:
		return each(nil, itemsOf(o.Items), checkMutatingWebhooks)
	}
	return nil, unsupported(obj)
}

// itemsOf returns pointers to the items of a typed list.
func itemsOf[T any, P interface {
	*T
	runtime.Object
}](items []T) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = P(&items[i])
	}
	return out
}

// each checks one object, or every item of a list, and returns what the
// checks made of them.
func each(one runtime.Object, items []runtime.Object, check func(runtime.Object) (runtime.Object, error)) ([]runtime.Object, error) {
	if one != nil {
		items = []runtime.Object{one}
	}
	out := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		o, err := check(item)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// apiValidated defaults v1 object obj, converts it to the internal type,
// validates it as the API server validates a create, and converts it back:
// the object kube-apiserver puts in effect.
func apiValidated[I runtime.Object](obj runtime.Object, internal I, validate func(I) field.ErrorList) (runtime.Object, error) {
	kind, name := kindName(obj)
	scheme.Default(obj)
	if err := scheme.Convert(obj, internal, nil); err != nil {
		return nil, fmt.Errorf("%s %q: converting to the internal version: %w", kind, name, err)
	}
	if errs := validate(internal); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("%s %q: %s", kind, name, strings.Join(msgs, "; "))
	}
	out, err := scheme.New(admissionv1.SchemeGroupVersion.WithKind(kind))
	if err != nil {
		return nil, err
	}
	if err := scheme.Convert(internal, out, nil); err != nil {
		return nil, fmt.Errorf("%s %q: converting back to v1: %w", kind, name, err)
	}
	return out, nil
}

func kindName(obj runtime.Object) (string, string) {
	kinds, _, err := scheme.ObjectKinds(obj)
	kind := fmt.Sprintf("%T", obj)
	if err == nil && len(kinds) > 0 {
		kind = kinds[0].Kind
	}
	name := ""
	if m, ok := obj.(metav1.Object); ok {
		name = m.GetName()
	}
	return kind, name
}

func checkValidatingPolicy(obj runtime.Object) (runtime.Object, error) {
	out, err := apiValidated(obj, &admissionregistration.ValidatingAdmissionPolicy{}, admissionvalidation.ValidateValidatingAdmissionPolicy)
	if err != nil {
		return nil, err
	}
	if p := out.(*admissionv1.ValidatingAdmissionPolicy); p.Spec.ParamKind != nil {
		return nil, fmt.Errorf("ValidatingAdmissionPolicy %q: spec.paramKind: a static manifest cannot take parameters", p.Name)
	}
	return out, nil
}

func checkMutatingPolicy(obj runtime.Object) (runtime.Object, error) {
	out, err := apiValidated(obj, &admissionregistration.MutatingAdmissionPolicy{}, admissionvalidation.ValidateMutatingAdmissionPolicy)
	if err != nil {
		return nil, err
	}
	if p := out.(*admissionv1.MutatingAdmissionPolicy); p.Spec.ParamKind != nil {
		return nil, fmt.Errorf("MutatingAdmissionPolicy %q: spec.paramKind: a static manifest cannot take parameters", p.Name)
	}
	return out, nil
}

func checkValidatingBinding(obj runtime.Object) (runtime.Object, error) {
	out, err := apiValidated(obj, &admissionregistration.ValidatingAdmissionPolicyBinding{}, admissionvalidation.ValidateValidatingAdmissionPolicyBinding)
	if err != nil {
		return nil, err
	}
	b := out.(*admissionv1.ValidatingAdmissionPolicyBinding)
	return out, checkBinding("ValidatingAdmissionPolicyBinding", b.Name, b.Spec.PolicyName, b.Spec.ParamRef != nil)
}

func checkMutatingBinding(obj runtime.Object) (runtime.Object, error) {
	out, err := apiValidated(obj, &admissionregistration.MutatingAdmissionPolicyBinding{}, admissionvalidation.ValidateMutatingAdmissionPolicyBinding)
	if err != nil {
		return nil, err
	}
	b := out.(*admissionv1.MutatingAdmissionPolicyBinding)
	return out, checkBinding("MutatingAdmissionPolicyBinding", b.Name, b.Spec.PolicyName, b.Spec.ParamRef != nil)
}

// checkBinding applies the rules of a static binding: it names a static
// policy (of the same set: References checks that) and takes no
// parameters.
func checkBinding(kind, name, policy string, paramRef bool) error {
	var errs []error
	if policy == "" {
		errs = append(errs, fmt.Errorf("%s %q: spec.policyName: required", kind, name))
	} else if !strings.HasSuffix(policy, StaticSuffix) {
		errs = append(errs, fmt.Errorf("%s %q: spec.policyName %q: a static binding names a static policy, whose name ends in %q", kind, name, policy, StaticSuffix))
	}
	if paramRef {
		errs = append(errs, fmt.Errorf("%s %q: spec.paramRef: a static manifest cannot take parameters", kind, name))
	}
	return errors.Join(errs...)
}

func checkValidatingWebhooks(obj runtime.Object) (runtime.Object, error) {
	out, err := apiValidated(obj, &admissionregistration.ValidatingWebhookConfiguration{}, admissionvalidation.ValidateValidatingWebhookConfiguration)
	if err != nil {
		return nil, err
	}
	c := out.(*admissionv1.ValidatingWebhookConfiguration)
	var errs []error
	for i, w := range c.Webhooks {
		errs = append(errs, checkClientConfig("ValidatingWebhookConfiguration", c.Name, i, w.Name, w.ClientConfig))
	}
	return out, errors.Join(errs...)
}

func checkMutatingWebhooks(obj runtime.Object) (runtime.Object, error) {
	out, err := apiValidated(obj, &admissionregistration.MutatingWebhookConfiguration{}, admissionvalidation.ValidateMutatingWebhookConfiguration)
	if err != nil {
		return nil, err
	}
	c := out.(*admissionv1.MutatingWebhookConfiguration)
	var errs []error
	for i, w := range c.Webhooks {
		errs = append(errs, checkClientConfig("MutatingWebhookConfiguration", c.Name, i, w.Name, w.ClientConfig))
	}
	return out, errors.Join(errs...)
}

// checkClientConfig applies the rule of a static webhook: it is called by
// URL, since a static configuration serves before any Service resolves.
func checkClientConfig(kind, name string, i int, webhook string, cc admissionv1.WebhookClientConfig) error {
	at := fmt.Sprintf("%s %q: webhooks[%d] (%s): clientConfig", kind, name, i, webhook)
	switch {
	case cc.Service != nil:
		return fmt.Errorf("%s.service: a static webhook is called by clientConfig.url, not through a Service", at)
	case cc.URL == nil || *cc.URL == "":
		return fmt.Errorf("%s.url: required for a static webhook", at)
	}
	return nil
}
