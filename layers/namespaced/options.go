package namespaced

import (
	"cmp"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	legacy "k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/stratacfg/strata/layers/namespaced/tenancy"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
)

// defaultCacheSize is the number of namespaces a Resolver caches unless
// Options.CacheSize says.
const defaultCacheSize = 1000

// defaultMaxConfigMapBytes and defaultMaxConfigMapKeys bound the data of
// one ConfigMap a Resolver reads when the options do not: a configuration
// has tens of keys and a few kilobytes, while the API server accepts a
// ConfigMap of 1 MiB with as many keys as fit.
const (
	defaultMaxConfigMapBytes = 256 << 10
	defaultMaxConfigMapKeys  = 512
)

// DefaultSelectorAnnotation holds a selector ConfigMap's namespace selector.
const DefaultSelectorAnnotation = "config.strata.dev/namespace-selector"

// Options configure a Resolver. T is the configuration: the hub type of
// Kind (a pointer such as *config.JobDefaults), or what Parsed parses
// into.
type Options[T any] struct {
	// Name names the component in Events and logs.
	Name string
	// Kind is a configuration kind of Go types: ConfigMap keys are the
	// top-level members of its merge version, and its hub type is T.
	// Set Kind or Parsed.
	Kind *scheme.Kind
	// Parsed is a configuration kind read by parsers that already exist
	// for it, in sections that each have a cluster ConfigMap and a
	// namespace ConfigMap of their own; as those parsers do, it reads a
	// ConfigMap's Data, never its binaryData. Set Kind or Parsed.
	Parsed *Parsed[T]
	// Namespace is the component's own namespace: it holds the cluster
	// and selector ConfigMaps, and gets no namespace layer.
	Namespace string
	// ClusterConfigMap is the name of the cluster ConfigMap, with Kind.
	ClusterConfigMap string
	// NamespaceConfigMaps are the names of the ConfigMaps a namespace may
	// own, applied in this order, with Kind.
	NamespaceConfigMaps []string
	// Labels must all be present on a namespace ConfigMap; one that
	// lacks any is ignored.
	Labels map[string]string
	// CacheSize bounds the namespaces cached; 1,000 when 0.
	CacheSize int
	// MaxConfigMapBytes bounds the data (keys and values) of one
	// ConfigMap, MaxConfigMapKeys its keys; 256 KiB and 512 keys when 0. A ConfigMap over either is refused
	// as an invalid one is, with a Warning Event naming the limit.
	MaxConfigMapBytes int
	MaxConfigMapKeys  int
	// KeepGzip reads every value as it is stored. By default a value
	// that starts with gzip's magic bytes (1F 8B), in data or in
	// binaryData, where prow's updateconfig puts what it compresses, is
	// decompressed, within MaxConfigMapBytes; other binaryData is
	// refused either way.
	KeepGzip bool
	// Tenancy is the operator's say over what tenants may set.
	Tenancy tenancy.Policy
	// TenantKeysDoc says where tenants read what they may set (a URL, or
	// a command that prints TenantKeys): every warning and Event about a
	// refused key points there.
	TenantKeysDoc string
	// Selectors, when set, enables selector layers.
	Selectors *Selectors
	// Cluster, when set, is where a resolver built with NewLazy or
	// NewInformer reads the cluster ConfigMaps, instead of watching them
	// itself: a knative controller's configmap.Watcher, which has them
	// already (integrations/strataknative). The caller tells the resolver
	// of their changes with Invalidate. The other constructors refuse it:
	// a Reader serves them already, and Direct reads on every call.
	Cluster Reader
	// Flags, when set, is the top layer: command-line values above every
	// ConfigMap.
	Flags *merge.Layer
	// StartOnDefaults starts on defaults when the cluster ConfigMap is
	// invalid at start-up, instead of failing Start.
	StartOnDefaults bool

	// EventRecorder (events.k8s.io/v1) or Recorder (core/v1, the legacy
	// recorder) records Warning Events on invalid ConfigMaps, whichever
	// the caller has. With neither, a resolver that has a client records
	// through the events.k8s.io/v1 API itself; one built on a Reader
	// records none.
	EventRecorder events.EventRecorder
	Recorder      legacy.EventRecorder
	// NoEvents records no Event at all, as a read-only command must not.
	NoEvents bool
	// Metrics count what the resolver does; unregistered ones when nil.
	// Register them with Metrics.Register.
	Metrics *Metrics
	// Logger is where the resolver logs; klog's, named
	// "strata-resolver", when nil. integrations/stratacr passes the
	// manager's.
	Logger *klog.Logger
}

// Selectors configures selector layers: ConfigMaps in the component's
// namespace carrying Labels, whose Annotation holds a namespace label
// selector ("team=payments,tier in (gold)"). They apply to every namespace
// the selector matches, above the cluster layer and below the namespace's
// own ConfigMaps, fewest selector terms first, then oldest, then by name.
// For a Parsed kind, a selector ConfigMap holds the keys of one section,
// which its SectionAnnotation names.
type Selectors struct {
	Labels map[string]string
	// Annotation is DefaultSelectorAnnotation when empty.
	Annotation string
	// SectionAnnotation is "config.strata.dev/section" when empty.
	SectionAnnotation string
	// RefuseContests makes a contest an error: where selector layers as
	// specific as each other (one number of terms) set a key to
	// different values, each of them is left out as invalid in the
	// namespaces they meet in, and CheckConfigMap refuses a selector
	// ConfigMap that would make a contest. By default a contest is
	// reported (Snapshot.Contested, a ContestedKeys Event, an admission
	// warning) and the newest layer, then the last by name, wins.
	RefuseContests bool
}

// core is what every part of a resolver reads and none changes: the
// options, checked and defaulted, and what is derived from them once.
type core[T any] struct {
	o           Options[T]
	model       model[T]
	display     func(key string) string // model.display, made once: a method value allocates
	clusterCMs  []string                // the cluster ConfigMaps' names, in order
	ownCMs      []string                // the names a namespace's ConfigMaps may have, in order
	nsLabels    labels.Selector         // the required labels of namespace ConfigMaps
	selectorCMs labels.Selector         // the labels of selector ConfigMaps; nil without selector layers
	m           *Metrics
	log         klog.Logger
	clock       clock.WithTicker // times the pauses; tests step a fake one (export_test.go)
}

// newCore checks o and derives what a resolver needs from it.
func newCore[T any](o Options[T]) (*core[T], error) {
	var errs []string
	var m model[T]
	switch {
	case (o.Kind == nil) == (o.Parsed == nil):
		errs = append(errs, "set one of Kind and Parsed")
	case o.Kind != nil:
		if o.ClusterConfigMap == "" {
			errs = append(errs, "ClusterConfigMap is required")
		}
		if len(o.NamespaceConfigMaps) == 0 {
			errs = append(errs, "NamespaceConfigMaps must name at least one ConfigMap")
		}
		km, err := newKindModel[T](o.Kind, o.ClusterConfigMap, o.NamespaceConfigMaps)
		if err != nil {
			errs = append(errs, err.Error())
		}
		m = km
	default:
		if o.ClusterConfigMap != "" || len(o.NamespaceConfigMaps) > 0 {
			errs = append(errs, "with Parsed, the sections name the ConfigMaps: leave ClusterConfigMap and NamespaceConfigMaps empty")
		}
		pm, err := newParsedModel(o.Parsed)
		if err != nil {
			errs = append(errs, err.Error())
		}
		m = pm
	}
	if o.Namespace == "" {
		errs = append(errs, "Namespace is required")
	}
	if len(o.Labels) == 0 {
		errs = append(errs, "Labels must name at least one label: namespace ConfigMaps are found by them")
	}
	if o.Selectors != nil && len(o.Selectors.Labels) == 0 {
		errs = append(errs, "Selectors.Labels must name at least one label")
	}
	if (o.EventRecorder != nil) && (o.Recorder != nil) || o.NoEvents && (o.EventRecorder != nil || o.Recorder != nil) {
		errs = append(errs, "set at most one of EventRecorder, Recorder and NoEvents")
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("namespaced: resolver options: %s", strings.Join(errs, "; "))
	}
	if o.CacheSize <= 0 {
		o.CacheSize = defaultCacheSize
	}
	if o.MaxConfigMapBytes <= 0 {
		o.MaxConfigMapBytes = defaultMaxConfigMapBytes
	}
	if o.MaxConfigMapKeys <= 0 {
		o.MaxConfigMapKeys = defaultMaxConfigMapKeys
	}
	if o.Selectors != nil {
		s := *o.Selectors
		s.Annotation = cmp.Or(s.Annotation, DefaultSelectorAnnotation)
		s.SectionAnnotation = cmp.Or(s.SectionAnnotation, "config.strata.dev/section")
		o.Selectors = &s
	}
	c := &core[T]{
		o:          o,
		model:      m,
		display:    m.display,
		clusterCMs: m.clusterNames(),
		ownCMs:     m.namespaceNames(),
		nsLabels:   labels.SelectorFromSet(o.Labels),
		m:          o.Metrics,
		clock:      clock.RealClock{},
	}
	if err := checkPolicy(&o.Tenancy, m); err != nil {
		return nil, fmt.Errorf("namespaced: resolver options: Tenancy: %w", err)
	}
	if o.Selectors != nil {
		c.selectorCMs = labels.SelectorFromSet(o.Selectors.Labels)
	}
	if c.m == nil {
		c.m = NewMetrics("strata_unregistered")
	}
	if o.Logger != nil {
		c.log = *o.Logger
	} else {
		c.log = klog.Background().WithName("strata-resolver")
	}
	return c, nil
}

// system reports whether namespace ns never gets namespace layers.
func (c *core[T]) system(ns string) bool { return system(&c.o.Tenancy, ns, c.o.Namespace) }

// eventController is the reporting controller of the Events a resolver
// records itself.
func (c *core[T]) eventController() string {
	if c.o.Name != "" {
		return c.o.Name
	}
	return "strata-resolver"
}
