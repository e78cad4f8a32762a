// Package scheme builds the decoder for one configuration kind with several
// versions on top of an apimachinery runtime.Scheme: strict, warn or ignore
// decoding with errors that name the file and the field path, defaulting of
// the source version, conversion to the internal (or hub) version, a version
// lifecycle (removed, deprecated, experimental), multi-document YAML and
// v1 List, size and alias limits for untrusted input, and encoding to any
// registered version.
package scheme

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// DefaultMaxBytes is the size limit of one input when Config.MaxBytes is 0.
const DefaultMaxBytes = 4 << 20

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
	// MaxBytes limits the size of one input; 0 means DefaultMaxBytes.
	MaxBytes int
}

// Codec decodes and encodes one configuration kind. It is safe for
// concurrent use.
type Codec struct {
	cfg      Config
	scheme   *runtime.Scheme
	strict   serializer.CodecFactory
	lenient  serializer.CodecFactory
	hub      schema.GroupVersion
	versions map[string]*Version
	maxBytes int
}

// New builds the scheme and codecs for cfg. It fails when a version is
// declared twice, a non-removed version has no AddToScheme, or the kind is
// not registered in the preferred version.
func New(cfg Config) (*Codec, error) {
	if cfg.Group == "" || cfg.Kind == "" {
		return nil, fmt.Errorf("scheme: Group and Kind are required")
	}
	c := &Codec{cfg: cfg, scheme: runtime.NewScheme(), versions: map[string]*Version{}, maxBytes: cfg.MaxBytes}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxBytes
	}
	c.hub = schema.GroupVersion{Group: cfg.Group, Version: runtime.APIVersionInternal}
	if cfg.Hub != "" {
		c.hub.Version = cfg.Hub
	}
	if cfg.Internal != nil {
		if err := cfg.Internal(c.scheme); err != nil {
			return nil, fmt.Errorf("scheme: registering internal types of %s: %w", cfg.Kind, err)
		}
	}
	var priority []schema.GroupVersion
	for i := range cfg.Versions {
		v := &cfg.Versions[i]
		if _, dup := c.versions[v.Version]; dup {
			return nil, fmt.Errorf("scheme: version %s declared twice", v.Version)
		}
		c.versions[v.Version] = v
		if v.Lifecycle == Removed {
			continue
		}
		if v.AddToScheme == nil {
			return nil, fmt.Errorf("scheme: version %s has no AddToScheme", v.Version)
		}
		if err := v.AddToScheme(c.scheme); err != nil {
			return nil, fmt.Errorf("scheme: registering %s/%s: %w", cfg.Group, v.Version, err)
		}
		priority = append(priority, schema.GroupVersion{Group: cfg.Group, Version: v.Version})
	}
	if len(priority) == 0 {
		return nil, fmt.Errorf("scheme: %s has no version that is not removed", cfg.Kind)
	}
	if err := c.scheme.SetVersionPriority(priority...); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	if !c.scheme.Recognizes(c.Preferred().WithKind(cfg.Kind)) {
		return nil, fmt.Errorf("scheme: kind %s is not registered in %s", cfg.Kind, c.Preferred())
	}
	if !c.scheme.Recognizes(c.hub.WithKind(cfg.Kind)) {
		return nil, fmt.Errorf("scheme: kind %s is not registered in the hub version %s", cfg.Kind, c.hub)
	}
	c.strict = serializer.NewCodecFactory(c.scheme, serializer.EnableStrict)
	c.lenient = serializer.NewCodecFactory(c.scheme)
	return c, nil
}

// Scheme returns the runtime.Scheme. Callers must not register more types.
func (c *Codec) Scheme() *runtime.Scheme { return c.scheme }

// Kind returns the kind name.
func (c *Codec) Kind() string { return c.cfg.Kind }

// Group returns the API group.
func (c *Codec) Group() string { return c.cfg.Group }

// Hub returns the internal or hub group version that Decode converts to.
func (c *Codec) Hub() schema.GroupVersion { return c.hub }

// Preferred returns the preferred external version: the first one declared
// that is neither removed nor experimental, or the first one not removed.
func (c *Codec) Preferred() schema.GroupVersion {
	var fallback string
	for _, v := range c.cfg.Versions {
		if v.Lifecycle == Removed {
			continue
		}
		if fallback == "" {
			fallback = v.Version
		}
		if v.Lifecycle != Experimental {
			return schema.GroupVersion{Group: c.cfg.Group, Version: v.Version}
		}
	}
	return schema.GroupVersion{Group: c.cfg.Group, Version: fallback}
}

// Versions returns the declared versions in order.
func (c *Codec) Versions() []Version { return slices.Clone(c.cfg.Versions) }

// New returns a new empty object of the kind in version gv.
func (c *Codec) New(gv schema.GroupVersion) (runtime.Object, error) {
	return c.scheme.New(gv.WithKind(c.cfg.Kind))
}

// knownVersions lists the versions a user may write, for error messages.
func (c *Codec) knownVersions() string {
	var out []string
	for _, v := range c.cfg.Versions {
		if v.Lifecycle != Removed {
			out = append(out, c.cfg.Group+"/"+v.Version)
		}
	}
	return strings.Join(out, ", ")
}

// MaxBytes returns the size limit of one input.
func (c *Codec) MaxBytes() int { return c.maxBytes }
