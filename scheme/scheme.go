// Package scheme describes one configuration kind with several versions:
// New builds a Kind from a Config, once, and everything that reads the kind
// takes it (layers.Component, the namespaced resolver, file sources,
// manifest sets).
//
// A Kind is built on an apimachinery runtime.Scheme. It decodes strictly,
// warns or ignores, with errors that name the file and the field path;
// defaults in the source version; converts to the internal (or hub)
// version; keeps a version lifecycle (removed, deprecated, experimental);
// reads multi-document YAML and v1 List; limits the size and aliases of
// untrusted input; and encodes to any registered version. It also holds
// the field markers of every version (validation.Fields), the version
// layers are merged in, and the validator of the hub type.
package scheme

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/internal/files"
	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/validation"
)

// defaultMaxBytes is the size limit of one input when Config.MaxBytes is
// 0 (4 MiB): the limit of one file a watch reads too, one limit wherever
// strata reads.
const defaultMaxBytes = files.DefaultMaxBytes

// Lifecycle is where a version stands.
type Lifecycle int

const (
	// Supported versions decode without comment.
	Supported Lifecycle = iota
	// Deprecated versions decode with a warning that names the replacement.
	Deprecated
	// Experimental versions are refused unless the caller opts in.
	Experimental
	// Removed versions are refused with an error that names the
	// replacement and how to migrate. Their types need not be registered.
	Removed
)

func (l Lifecycle) String() string {
	switch l {
	case Supported:
		return "supported"
	case Deprecated:
		return "deprecated"
	case Experimental:
		return "experimental"
	case Removed:
		return "removed"
	}
	return fmt.Sprintf("Lifecycle(%d)", int(l))
}

// Version is one external version of the kind.
type Version struct {
	// Version is the version name, "v1beta1".
	Version string
	// AddToScheme registers the version's types, defaulters and
	// conversions. Nil only for a Removed version.
	AddToScheme func(*runtime.Scheme) error
	Lifecycle   Lifecycle
	// Replacement is the version to use instead, for Deprecated and
	// Removed versions; the preferred version when empty.
	Replacement string
	// Release names the release that deprecated or removed the version.
	Release string
	// Migrate tells the user how to move a file to the replacement,
	// for example "mycomp config migrate --old-config FILE".
	Migrate string
	// Markers declares field markers of this version's type beyond its
	// struct tags, keyed by JSON pointer patterns ("*" matches one
	// segment): the fields of types the author does not own. apiVersion,
	// kind and the structs of k8s.io/component-base come ready-made
	// (validation.FieldsFor).
	Markers map[string]validation.Marker
	// OS declares the operating system of fields of types the author does
	// not own, as `strata:"os=linux"` does of tagged fields: key → GOOS
	// (kubelet's singleProcessOOMKill and userNamespaces are linux's).
	OS map[string]string
	// Lists declares the lists that merge per element among fields of
	// types the author does not own, as `strata:"list-map-key=NAME"` and
	// `strata:"list-type=set|append"` do of tagged fields: key pattern →
	// key member, merge.ListSet or merge.ListAppend (kubelet's
	// preloadedImagesVerificationAllowlist is a +listType=set).
	Lists merge.Lists
	// Fields declares steps in the lifecycle of the version's fields:
	// those deprecated, still read with a warning, and those removed or
	// renamed, refused with a tombstone that says what became of them.
	Fields []Field
}

// Field is a step in the lifecycle of one field of a version.
type Field struct {
	// Key is the field's JSON pointer in the version, "/profiling".
	Key string
	// Lifecycle is Deprecated or Removed. A document that sets a
	// deprecated field decodes with a warning. A removed field is no
	// field of the version: a document that sets it fails with the
	// tombstone (Strict) or decodes with it as a warning (Warn), instead
	// of "unknown field". A removed name is never a field of its version
	// again: New refuses a version whose type has it.
	Lifecycle Lifecycle
	// RenamedTo, for a removed field, is the key that took its place.
	RenamedTo string
	// Release names the release that deprecated or removed the field.
	Release string
	// Message says what to do instead.
	Message string
}

// String is what a user is told of f: `field "profiling" was renamed to
// "enableProfiling" in 0.3: MESSAGE`.
func (f *Field) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "field %q ", dotted(f.Key))
	switch {
	case f.Lifecycle == Deprecated:
		b.WriteString("is deprecated")
		if f.Release != "" {
			b.WriteString(" since " + f.Release)
		}
	case f.RenamedTo != "":
		fmt.Fprintf(&b, "was renamed to %q", dotted(f.RenamedTo))
	default:
		b.WriteString("was removed")
	}
	if f.Lifecycle != Deprecated && f.Release != "" {
		b.WriteString(" in " + f.Release)
	}
	if f.Message != "" {
		b.WriteString(": " + f.Message)
	}
	return b.String()
}

// checkFields checks the field lifecycle declared for v, whose type is t.
func checkFields(v *Version, t *typed.Type) error {
	var errs []string
	seen := map[string]bool{}
	for _, f := range v.Fields {
		_, isField := t.At(f.Key)
		switch {
		case !strings.HasPrefix(f.Key, "/") || strings.Contains(f.Key, "*"):
			errs = append(errs, fmt.Sprintf("field %q: the key must be a JSON pointer without \"*\"", f.Key))
		case seen[f.Key]:
			errs = append(errs, fmt.Sprintf("field %s is declared twice", f.Key))
		case f.Lifecycle == Deprecated && !isField:
			errs = append(errs, fmt.Sprintf("deprecated field %s is no field of the type", f.Key))
		case f.Lifecycle == Removed && isField:
			errs = append(errs, fmt.Sprintf("field %s was removed, and a removed name is never used again: it is a field of the type", f.Key))
		case f.Lifecycle != Deprecated && f.Lifecycle != Removed:
			errs = append(errs, fmt.Sprintf("field %s: a field is deprecated or removed, not %s", f.Key, f.Lifecycle))
		case f.RenamedTo != "" && f.Lifecycle != Removed:
			errs = append(errs, fmt.Sprintf("field %s: only a removed field is renamed", f.Key))
		}
		if f.RenamedTo != "" {
			if _, ok := t.At(f.RenamedTo); !ok {
				errs = append(errs, fmt.Sprintf("field %s was renamed to %s, which is no field of the type", f.Key, f.RenamedTo))
			}
		}
		seen[f.Key] = true
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Config describes a configuration kind.
type Config struct {
	// Group is the API group, "component.example.strata.dev".
	Group string
	// Kind is the kind name, "ComponentConfiguration".
	Kind string
	// Internal registers the internal (or hub) types and everything
	// shared. Nil when a hub version among Versions is named by Hub.
	Internal func(*runtime.Scheme) error
	// Hub names an external version that serves as the conversion hub in
	// place of an internal version. Empty means runtime.APIVersionInternal.
	Hub string
	// Versions lists the external versions, preferred first.
	Versions []Version
	// MaxBytes limits the size of one input; 0 means 4 MiB.
	MaxBytes int
	// MergeVersion is the version whose keys layers are expressed in,
	// flags are bound to and ConfigMap keys name; the preferred version
	// when empty.
	MergeVersion string
	// Validate validates the hub object, all errors at once; nil means
	// no validation. Validator adapts a function of the hub type. It,
	// Check and the versions' defaulting functions must depend on the
	// object alone (not on time, files or other state): a per-namespace
	// resolver builds one configuration for every namespace whose keys
	// are the same, and validates it once.
	Validate func(hub runtime.Object) field.ErrorList
	// Check validates the hub object too, for validators that return a
	// plain error (kubelet's ValidateKubeletConfiguration) rather than a
	// field.ErrorList. Each error of an aggregate becomes one validation
	// error, placed at the first field of the merge version its message
	// names, so that it is attributed to the layer that set that field.
	// CheckFunc adapts a function of the hub type.
	Check func(hub runtime.Object) error
	// Scheme, when set, is an existing scheme that already holds the
	// kind's versions (a component's own, kubelet's): it is used as it
	// is, and Internal and each Version's AddToScheme may be nil. A
	// version's AddToScheme that is set is still called.
	Scheme *runtime.Scheme
}

// Kind is everything strata knows of one configuration kind, built once
// and handed to everything that reads the kind (a component, a resolver,
// a file source, a manifest set): its scheme and codecs, its versions and
// their lifecycle, the field markers of each version, the merge version
// and the validator. It is immutable and safe for concurrent use.
type Kind struct {
	cfg      Config
	scheme   *runtime.Scheme
	strict   serializer.CodecFactory
	lenient  serializer.CodecFactory
	hub      schema.GroupVersion
	merge    schema.GroupVersion
	versions map[string]*Version
	fields   map[string]*validation.Fields // by version
	maxBytes int
}

// New builds the kind described by cfg. It fails when a version is
// declared twice, a non-removed version has no AddToScheme, the kind is
// not registered in the preferred, hub or merge version, or a version's
// markers do not fit its type.
func New(cfg Config) (*Kind, error) {
	if cfg.Group == "" || cfg.Kind == "" {
		return nil, fmt.Errorf("scheme: Group and Kind are required")
	}
	k := &Kind{cfg: cfg, scheme: cfg.Scheme, versions: map[string]*Version{}, maxBytes: cfg.MaxBytes}
	if k.scheme == nil {
		k.scheme = runtime.NewScheme()
	}
	if k.maxBytes <= 0 {
		k.maxBytes = defaultMaxBytes
	}
	k.hub = schema.GroupVersion{Group: cfg.Group, Version: runtime.APIVersionInternal}
	if cfg.Hub != "" {
		k.hub.Version = cfg.Hub
	}
	if cfg.Internal != nil {
		if err := cfg.Internal(k.scheme); err != nil {
			return nil, fmt.Errorf("scheme: registering internal types of %s: %w", cfg.Kind, err)
		}
	}
	var priority []schema.GroupVersion
	for i := range cfg.Versions {
		v := &cfg.Versions[i]
		if _, dup := k.versions[v.Version]; dup {
			return nil, fmt.Errorf("scheme: version %s declared twice", v.Version)
		}
		k.versions[v.Version] = v
		if v.Lifecycle == Removed {
			continue
		}
		switch {
		case v.AddToScheme == nil && cfg.Scheme == nil:
			return nil, fmt.Errorf("scheme: version %s has no AddToScheme", v.Version)
		case v.AddToScheme != nil:
			if err := v.AddToScheme(k.scheme); err != nil {
				return nil, fmt.Errorf("scheme: registering %s/%s: %w", cfg.Group, v.Version, err)
			}
		}
		priority = append(priority, schema.GroupVersion{Group: cfg.Group, Version: v.Version})
	}
	if len(priority) == 0 {
		return nil, fmt.Errorf("scheme: %s has no version that is not removed", cfg.Kind)
	}
	if err := k.scheme.SetVersionPriority(priority...); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	if !k.scheme.Recognizes(k.Preferred().WithKind(cfg.Kind)) {
		return nil, fmt.Errorf("scheme: kind %s is not registered in %s", cfg.Kind, k.Preferred())
	}
	if !k.scheme.Recognizes(k.hub.WithKind(cfg.Kind)) {
		return nil, fmt.Errorf("scheme: kind %s is not registered in the hub version %s", cfg.Kind, k.hub)
	}
	k.merge = k.Preferred()
	if cfg.MergeVersion != "" {
		k.merge.Version = cfg.MergeVersion
		if !k.scheme.Recognizes(k.merge.WithKind(cfg.Kind)) {
			return nil, fmt.Errorf("scheme: kind %s is not registered in the merge version %s", cfg.Kind, k.merge)
		}
	}
	k.fields = map[string]*validation.Fields{}
	for _, gv := range priority {
		obj, err := k.scheme.New(gv.WithKind(cfg.Kind))
		if err != nil {
			continue // a version that holds other kinds of the group
		}
		if err := typed.Declare(reflect.TypeOf(obj), k.versions[gv.Version].Lists); err != nil {
			return nil, fmt.Errorf("scheme: %s: %w", gv, err)
		}
		f, err := validation.FieldsFor(reflect.TypeOf(obj), k.versions[gv.Version].Markers, k.versions[gv.Version].OS)
		if err != nil {
			return nil, fmt.Errorf("scheme: markers of %s: %w", gv, err)
		}
		if err := checkFields(k.versions[gv.Version], typed.For(f.Type())); err != nil {
			return nil, fmt.Errorf("scheme: fields of %s: %w", gv, err)
		}
		k.fields[gv.Version] = f
	}
	k.strict = serializer.NewCodecFactory(k.scheme, serializer.EnableStrict)
	k.lenient = serializer.NewCodecFactory(k.scheme)
	return k, nil
}

// MergeVersion returns the version whose keys layers are expressed in.
func (k *Kind) MergeVersion() schema.GroupVersion { return k.merge }

// Fields returns the field markers of the kind's type in version gv, or
// nil when the kind is not registered there.
func (k *Kind) Fields(gv schema.GroupVersion) *validation.Fields {
	if gv.Group != k.cfg.Group {
		return nil
	}
	return k.fields[gv.Version]
}

// Removed returns the tombstone of key, a field removed from version gv,
// or nil.
func (k *Kind) Removed(gv schema.GroupVersion, key string) *Field {
	if gv.Group != k.cfg.Group || k.versions[gv.Version] == nil {
		return nil
	}
	for i, f := range k.versions[gv.Version].Fields {
		if f.Lifecycle == Removed && f.Key == key {
			return &k.versions[gv.Version].Fields[i]
		}
	}
	return nil
}

// MergeFields returns the field markers of the merge version.
func (k *Kind) MergeFields() *validation.Fields { return k.fields[k.merge.Version] }

// Validate validates hub, an object of the hub version: with the
// declarative validation registered for its type (validation-gen's
// RegisterValidations, when the hub is a versioned type), then
// Config.Validate and Config.Check; nil when there is no validator. A
// validator that panics is an internal error, not a crash.
func (k *Kind) Validate(hub runtime.Object) (errs field.ErrorList) {
	defer func() {
		if r := recover(); r != nil {
			errs = append(errs, field.InternalError(nil, fmt.Errorf("the validator of %s panicked: %v", k.cfg.Kind, r)))
		}
	}()
	errs = k.Declared(hub)
	if k.cfg.Validate != nil {
		errs = append(errs, k.cfg.Validate(hub)...)
	}
	if k.cfg.Check != nil {
		errs = append(errs, k.checkErrors(k.cfg.Check(hub))...)
	}
	return errs
}

// Declared validates obj, an object of any of the kind's versions, with the
// declarative validation registered for its type: the +k8s: tags of its
// fields that validation-gen turned into RegisterValidations, which the
// version's AddToScheme registers. It is nil when none is registered. A
// configuration file is validated as an object being created.
func (k *Kind) Declared(obj runtime.Object) (errs field.ErrorList) {
	defer func() {
		if r := recover(); r != nil {
			errs = field.ErrorList{field.InternalError(nil, fmt.Errorf("the declarative validation of %s panicked: %v", k.cfg.Kind, r))}
		}
	}()
	return k.scheme.Validate(context.Background(), nil, obj)
}

// checkErrors turns the error of a Check into validation errors, one per
// error of an aggregate, each placed at the first field of the merge
// version its message names (kubelet's read "invalid configuration:
// imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be
// between 0 and 100").
func (k *Kind) checkErrors(err error) field.ErrorList {
	if err == nil {
		return nil
	}
	var each []error
	var agg interface{ Errors() []error }
	if errors.As(err, &agg) {
		each = agg.Errors()
	} else {
		each = []error{err}
	}
	fields := k.MergeFields()
	out := make(field.ErrorList, 0, len(each))
	for _, e := range each {
		msg := e.Error()
		var path *field.Path
		for _, word := range strings.FieldsFunc(msg, func(r rune) bool {
			return !(r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) {
			if p, ok := fieldPath(fields, strings.Trim(word, ".")); ok {
				path = p
				break
			}
		}
		out = append(out, field.Invalid(path, field.OmitValueType{}, msg))
	}
	return out
}

// fieldPath returns the path of name, a dotted field path, when it is a
// field of fields' type.
func fieldPath(fields *validation.Fields, name string) (*field.Path, bool) {
	if name == "" || fields == nil {
		return nil, false
	}
	segs := strings.Split(name, ".")
	key := ""
	for _, s := range segs {
		if s == "" {
			return nil, false
		}
		key += "/" + s
	}
	if _, ok := typed.For(fields.Type()).At(key); !ok {
		return nil, false
	}
	return field.NewPath(segs[0], segs[1:]...), true
}

// CheckFunc adapts fn, a validation function of the hub type T that
// returns a plain error, to Config.Check.
func CheckFunc[T runtime.Object](fn func(T) error) func(runtime.Object) error {
	return func(obj runtime.Object) error {
		t, ok := obj.(T)
		if !ok {
			return fmt.Errorf("validating a %T as a %s", obj, reflect.TypeFor[T]())
		}
		return fn(t)
	}
}

// Validator adapts fn, a validation function of the hub type T, to
// Config.Validate. An object of another type is an internal error.
func Validator[T runtime.Object](fn func(T) field.ErrorList) func(runtime.Object) field.ErrorList {
	return func(obj runtime.Object) field.ErrorList {
		t, ok := obj.(T)
		if !ok {
			return field.ErrorList{field.InternalError(nil, fmt.Errorf("validating a %T as a %s", obj, reflect.TypeFor[T]()))}
		}
		return fn(t)
	}
}

// HubAs checks that the hub type of k is T, for the typed readers of a
// kind (a component, a resolver).
func HubAs[T runtime.Object](k *Kind) error {
	obj, err := k.New(k.hub)
	if err != nil {
		return err
	}
	if _, ok := obj.(T); !ok {
		return fmt.Errorf("the hub type of %s is %T, not %s", k.cfg.Kind, obj, reflect.TypeFor[T]())
	}
	return nil
}

// Scheme returns the runtime.Scheme. Callers must not register more types.
func (k *Kind) Scheme() *runtime.Scheme { return k.scheme }

// GroupKind returns the kind's group and name.
func (k *Kind) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: k.cfg.Group, Kind: k.cfg.Kind}
}

// Hub returns the internal or hub group version that Decode converts to.
func (k *Kind) Hub() schema.GroupVersion { return k.hub }

// Preferred returns the preferred external version: the first one declared
// that is neither removed nor experimental, or the first one not removed.
func (k *Kind) Preferred() schema.GroupVersion {
	var fallback string
	for _, v := range k.cfg.Versions {
		if v.Lifecycle == Removed {
			continue
		}
		if fallback == "" {
			fallback = v.Version
		}
		if v.Lifecycle != Experimental {
			return schema.GroupVersion{Group: k.cfg.Group, Version: v.Version}
		}
	}
	return schema.GroupVersion{Group: k.cfg.Group, Version: fallback}
}

// Versions returns the declared versions in order.
func (k *Kind) Versions() []Version { return slices.Clone(k.cfg.Versions) }

// New returns a new empty object of the kind in version gv.
func (k *Kind) New(gv schema.GroupVersion) (runtime.Object, error) {
	return k.scheme.New(gv.WithKind(k.cfg.Kind))
}

// knownVersions lists the versions a user may write, for error messages.
func (k *Kind) knownVersions() string {
	var out []string
	for _, v := range k.cfg.Versions {
		if v.Lifecycle != Removed {
			out = append(out, k.cfg.Group+"/"+v.Version)
		}
	}
	return strings.Join(out, ", ")
}

// MaxBytes returns the size limit of one input.
func (k *Kind) MaxBytes() int { return k.maxBytes }
