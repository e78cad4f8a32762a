package watch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

// ManifestExtensions are the extensions a manifest directory loads.
var ManifestExtensions = []string{".json", ".yaml", ".yml"}

// KindManifest is the provenance kind of an object read from a manifest
// file.
const KindManifest = "manifest"

// ManifestOptions say how a directory of manifests is loaded.
type ManifestOptions struct {
	// Kind decodes every kind of its group; objects are defaulted,
	// converted to its hub version and validated one by one with its
	// validator.
	Kind *scheme.Kind
	// Mode is strict unless set otherwise.
	Mode scheme.Mode
	// References lists the objects obj names, which must be in the set.
	References func(obj runtime.Object) []validation.Reference
	// Rules are the rules of the whole set.
	Rules validation.SetRules
	// ValidateName checks each object's metadata.name, as the API server
	// checks it for the kind; nil means a DNS subdomain (RFC 1123), the
	// rule of most kinds, the admission kinds among them.
	ValidateName apivalidation.ValidateNameFunc
}

// Manifest is one loaded object and where it came from.
type Manifest struct {
	Object runtime.Object
	Kind   string
	Name   string
	// File is the file's path; Document is the 1-based document in a
	// multi-document file (0 if alone); Item the 1-based item of a v1
	// List (0 if not in one).
	File     string
	Document int
	Item     int
}

// Source is the object's provenance, "manifest /etc/policies/a.yaml#2".
func (m *Manifest) Source() merge.Source {
	name := m.File
	if m.Document > 0 {
		name += fmt.Sprintf("#%d", m.Document)
	}
	if m.Item > 0 {
		name += fmt.Sprintf("[%d]", m.Item)
	}
	return merge.Source{Kind: KindManifest, Name: name}
}

// ManifestSet is a loaded, validated set of manifests. It is immutable.
type ManifestSet struct {
	// Objects in file order, then document order.
	Objects []*Manifest
	// Hash is the content hash of the files it was loaded from.
	Hash string
}

// Names returns "Kind/name" of every object.
func (s *ManifestSet) Names() []string {
	out := make([]string, len(s.Objects))
	for i, m := range s.Objects {
		out[i] = m.Kind + "/" + m.Name
	}
	return out
}

// LoadManifests loads the direct-child .yaml, .yml and .json files of a
// directory generation, in sorted order, as one set:
//
//  1. Decode every document of every file (multi-document YAML, v1 List)
//     strictly, default it and convert it to the hub version.
//  2. Validate each object, its name first.
//  3. Validate the set: unique names per kind, the name suffix, references
//     resolved inside the set.
//
// The set loads whole or not at all, so related objects (a policy and its
// binding) are never half applied. The error holds every problem found,
// each naming its file and document.
func LoadManifests(s *Generation, opts ManifestOptions) (*ManifestSet, error) {
	set := &ManifestSet{Hash: s.Hash}
	var errs []error
	// (1)
	for _, f := range s.Files {
		if !isManifest(f.Name) {
			continue
		}
		path := filepath.Join(s.Path, f.Name)
		docs, err := opts.Kind.DecodeAll(f.Data, scheme.DecodeOptions{Source: path, Mode: opts.Mode, AnyKind: true})
		if err != nil {
			if errors.Is(err, scheme.ErrEmpty) {
				continue
			}
			errs = append(errs, err)
			continue
		}
		for _, d := range docs {
			m := &Manifest{Object: d.Object, Kind: d.GVK.Kind, File: path, Document: d.Document, Item: d.Item}
			if acc, err := meta.Accessor(d.Object); err == nil {
				m.Name = acc.GetName()
			}
			set.Objects = append(set.Objects, m)
		}
	}
	// (2)
	validateName := opts.ValidateName
	if validateName == nil {
		validateName = apivalidation.NameIsDNSSubdomain
	}
	members := make([]validation.Member, 0, len(set.Objects))
	for _, m := range set.Objects {
		if m.Name == "" {
			errs = append(errs, &validation.Error{Err: field.Required(field.NewPath("metadata", "name"), ""), Source: m.Source()})
		} else if msgs := validateName(m.Name, false); len(msgs) > 0 {
			errs = append(errs, &validation.Error{Err: field.Invalid(field.NewPath("metadata", "name"), m.Name, strings.Join(msgs, "; ")), Source: m.Source()})
		}
		for _, e := range opts.Kind.Validate(m.Object) {
			errs = append(errs, &validation.Error{Err: e, Key: validation.KeyOf(e.Field), Source: m.Source()})
		}
		member := validation.Member{Kind: m.Kind, Name: m.Name, Source: m.Source()}
		if opts.References != nil {
			member.References = opts.References(m.Object)
		}
		members = append(members, member)
	}
	// (3)
	for _, e := range validation.ValidateSet(members, opts.Rules) {
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid manifests in %s: %w", s.Path, errors.Join(errs...))
	}
	return set, nil
}

func isManifest(name string) bool {
	ext := filepath.Ext(name)
	for _, e := range ManifestExtensions {
		if strings.EqualFold(ext, e) {
			return true
		}
	}
	return false
}

// Manifests returns watcher options that keep dir's manifest set live: the
// caller adds OnReload, Metrics and intervals, then calls New and Start.
// An empty directory is an empty set; a missing one is an error.
func Manifests(dir string, opts ManifestOptions) Options[*ManifestSet] {
	return Options[*ManifestSet]{
		Paths: []string{dir},
		Read:  ReadOptions{Match: isManifest},
		Load: func(_ context.Context, c *Contents) (*ManifestSet, error) {
			return LoadManifests(c.Generations[0], opts)
		},
	}
}

// Composite reads a static manifest set and a dynamic set of objects (for
// example an informer's) as one, static objects first, as kube-apiserver
// combines manifest-based and API-based admission configuration. A dynamic
// object whose name ends in the reserved suffix is refused: only manifests
// may use it.
type Composite struct {
	// Static returns the static set in effect; nil means none.
	Static func() *ManifestSet
	// Dynamic returns the dynamic objects; nil means none.
	Dynamic func() []runtime.Object
	// ReservedSuffix is the static objects' name suffix.
	ReservedSuffix string
}

// List returns every object, static first, and an error for each dynamic
// object refused. It is safe for concurrent use if Static and Dynamic are.
func (c *Composite) List() ([]runtime.Object, []error) {
	var out []runtime.Object
	if c.Static != nil {
		if s := c.Static(); s != nil {
			for _, m := range s.Objects {
				out = append(out, m.Object)
			}
		}
	}
	var refused []error
	if c.Dynamic != nil {
		for _, obj := range c.Dynamic() {
			acc, err := meta.Accessor(obj)
			if err != nil {
				refused = append(refused, fmt.Errorf("dynamic object %T: %w", obj, err))
				continue
			}
			if c.ReservedSuffix != "" && strings.HasSuffix(acc.GetName(), c.ReservedSuffix) {
				kind := obj.GetObjectKind().GroupVersionKind().Kind
				refused = append(refused, fmt.Errorf("dynamic %s %q refused: names ending in %q are reserved for static manifests", kind, acc.GetName(), c.ReservedSuffix))
				continue
			}
			out = append(out, obj)
		}
	}
	return out, refused
}
