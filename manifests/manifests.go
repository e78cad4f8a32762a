// Package manifests loads a directory of Kubernetes-style manifests as one
// validated set, choosing, splitting and decoding the files as
// kube-apiserver loads manifest-based admission configuration (KEP-5793),
// and keeps the set live through package watch: a set loads whole or not
// at all, and every problem names its file and document.
package manifests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/internal/yamljson"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/watch"
)

// extensions are those of the files a manifest directory loads, compared
// in any case.
var extensions = []string{".json", ".yaml", ".yml"}

// Origin is the provenance origin (merge.Source.Origin) of an object
// read from a manifest file.
const Origin = "manifest"

// ErrUnsupportedType is what Options.Accept wraps for an object of
// a type the set does not take.
var ErrUnsupportedType = errors.New("unsupported type")

// Options say how a directory of manifests is loaded: they work
// for the kinds of any scheme. kube-apiserver's admission configuration
// (KEP-5793) is one use; examples/manifests wires it.
type Options struct {
	// Decoder decodes one document, YAML or JSON, into a typed object of
	// the version it names, without conversion: for the strictness of
	// kube-apiserver, the universal deserializer of a codec factory built
	// with serializer.EnableStrict, so that an unknown or duplicate field
	// is an error. A document that decodes to a metav1.List (registered
	// in the scheme as an unversioned type) is expanded item by item, the
	// items decoded again. A document that begins with '{' must be decoded
	// as JSON, as the universal deserializer does: its YAML aliases are
	// not reckoned.
	Decoder runtime.Decoder
	// Accept turns one decoded object into the manifests it holds: it
	// checks the type (wrapping ErrUnsupportedType for one the set does
	// not take), expands a typed list into its items, and defaults and
	// validates each. Any error refuses the whole set.
	Accept func(obj runtime.Object) ([]runtime.Object, error)
	// ValidateName checks each object's metadata.name, as the API server
	// checks it for the kind; nil means a DNS subdomain (RFC 1123), the
	// rule of most kinds, the admission kinds among them.
	ValidateName apivalidation.ValidateNameFunc
	// NameSuffix, when not empty, is required at the end of every name
	// (KEP-5793's ".static.k8s.io"), so that a static object can never be
	// confused with, or shadowed by, one from the API. Names are unique
	// within their kind whatever it is.
	NameSuffix string
	// References lists the objects obj names, which must be in the set.
	References func(obj runtime.Object) []Reference
	// ValidateSet, when set, checks the set as a whole once every object
	// was accepted, named and referenced well.
	ValidateSet func(objects []*Manifest) []error
	// LinksOut lets Watch follow a link in the directory to a file
	// outside it, as kube-apiserver's os.ReadFile does (a manifest shared
	// between directories). By default such a link refuses the set,
	// naming it: whoever may write the directory cannot make the loader
	// read any other file the process can.
	LinksOut bool
}

// Manifest is one loaded object and where it came from.
type Manifest struct {
	Object runtime.Object
	Kind   string
	Name   string
	// File is the file's path; Document is the 1-based document in a
	// multi-document file (0 if alone); Item the 1-based item of a List
	// (0 if not in one).
	File     string
	Document int
	Item     int
}

// Source is the object's provenance, "manifest /etc/policies/a.yaml#2".
func (m *Manifest) Source() merge.Source {
	return merge.Source{Origin: Origin, Name: where(m.File, m.Document, m.Item)}
}

func where(file string, doc, item int) string {
	if doc > 0 {
		file += fmt.Sprintf("#%d", doc)
	}
	if item > 0 {
		file += fmt.Sprintf("[%d]", item)
	}
	return file
}

// Set is a loaded, validated set of manifests. It is immutable.
type Set struct {
	// Objects in file order, then document order.
	Objects []*Manifest
	// Hash is the content hash of the files it was loaded from, their
	// names included.
	Hash string
	// APIServerHash is the hash kube-apiserver reports for the same
	// directory once loaded (KEP-5793's
	// apiserver_manifest_admission_config_controller_last_config_info
	// {hash}, which HA drift checks compare across API servers): sha256
	// over the bytes of each non-empty manifest file followed by a NUL
	// byte, in name order, names left out, written "sha256:<hex>"; empty
	// for a directory with no such file.
	APIServerHash string
}

// Names returns "Kind/name" of every object, sorted.
func (s *Set) Names() []string {
	out := make([]string, len(s.Objects))
	for i, m := range s.Objects {
		out[i] = m.Kind + "/" + m.Name
	}
	slices.Sort(out)
	return out
}

// Load loads the manifest files of a directory generation (a file's is
// refused, as kube-apiserver refuses one), in sorted order, as one set,
// choosing and splitting them as kube-apiserver does (KEP-5793):
//
//  1. Every regular direct child whose extension is .yaml, .yml or .json
//     in any case, dot-files included, is read; an empty file holds
//     nothing. A subdirectory is passed over, but a symbolic link to one
//     with a manifest's name is an error.
//  2. A file splits into YAML documents at "---" lines; a document that
//     is empty once trimmed is skipped, but one holding only comments is
//     a document, and an error, as it is to kube-apiserver.
//  3. Each document is decoded by Decoder (a List expanded), accepted by
//     Accept, and its name checked; then the set: names unique within
//     their kind and ending in NameSuffix, References resolved
//     inside the set, ValidateSet.
//
// The set loads whole or not at all, so related objects (a policy and its
// binding) are never half applied. Unlike kube-apiserver, which stops at
// the first problem, the error lists every problem found (the first
// twenty in its text), each naming its file and document.
func Load(g *watch.Generation, opts Options) (*Set, error) {
	if opts.Decoder == nil || opts.Accept == nil {
		return nil, errors.New("manifests: Options need a Decoder and an Accept function")
	}
	if !g.Dir { // kube-apiserver's loader reads a directory, and refuses a file
		return nil, fmt.Errorf("%s: not a directory: manifests are loaded from a directory", g.Path)
	}
	set := &Set{Hash: g.Hash, APIServerHash: apiserverHash(g)}
	var errs []error
	// (1)
	for _, sk := range g.Skipped {
		if sk.Link && isManifest(sk.Name) {
			errs = append(errs, fmt.Errorf("%s: %s, not a file", filepath.Join(g.Path, sk.Name), sk.Reason))
		}
	}
	// What the documents' YAML aliases expand to, reckoned before a
	// decoder writes every alias out in full, comes from one limit for
	// the set: many documents, each under a limit, are not many times it.
	total := 0
	for _, f := range g.Files {
		if isManifest(f.Name) {
			total += len(f.Data)
		}
	}
	aliases := yamljson.NewBudget(yamljson.Limit(total))
	for _, f := range g.Files {
		if !isManifest(f.Name) {
			continue
		}
		path := filepath.Join(g.Path, f.Name)
		// (2)
		docs, err := splitDocuments(f.Data)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			continue
		}
		for i, doc := range docs {
			n := i + 1
			if len(docs) == 1 {
				n = 0
			}
			// JSON, which the API server decodes as JSON, has no
			// aliases, and no YAML parser may read it.
			if !utilyaml.IsJSONBuffer(doc) {
				if err := aliases.Check(doc); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", where(path, n, 0), err))
					continue
				}
			}
			// (3)
			objs, err := opts.decode(doc, path, n, 0, 0)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			set.Objects = append(set.Objects, objs...)
		}
	}
	for _, e := range validateSet(set.Objects, opts) {
		errs = append(errs, e)
	}
	if len(errs) == 0 && opts.ValidateSet != nil {
		errs = append(errs, opts.ValidateSet(set.Objects)...)
	}
	if len(errs) > 0 {
		return nil, &Error{Dir: g.Path, Errs: errs}
	}
	return set, nil
}

// Error is every problem of a manifest directory that failed to
// load.
type Error struct {
	Dir  string
	Errs []error
}

func (e *Error) Error() string {
	return fmt.Sprintf("invalid manifests in %s: %s", e.Dir, text.List(len(e.Errs), func(i int) string { return e.Errs[i].Error() }, "; "))
}

// Unwrap returns every problem, for errors.Is and errors.As.
func (e *Error) Unwrap() []error { return e.Errs }

// maxListDepth bounds how deep Lists may nest in one document.
const maxListDepth = 16

// decode decodes one document (or List item, at depth) of file, accepts
// what it holds, and returns the manifests.
func (opts *Options) decode(doc []byte, file string, n, item, depth int) ([]*Manifest, error) {
	at := where(file, n, item)
	obj, gvk, err := opts.Decoder.Decode(doc, nil, nil)
	if gvk != nil && gvk.Version == runtime.APIVersionInternal {
		// A scheme with the internal version decodes into it, and then
		// finds metadata and spec unknown: say what is wrong instead.
		return nil, fmt.Errorf("%s: apiVersion %s is the in-memory version, never written down", at, gvk.GroupVersion())
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	if list, ok := obj.(*metav1.List); ok {
		if depth >= maxListDepth {
			return nil, fmt.Errorf("%s: Lists nest more than %d deep", at, maxListDepth)
		}
		var out []*Manifest
		var errs []error
		for i, raw := range list.Items {
			it := item // a nested List's items are named by the outer item
			if depth == 0 {
				it = i + 1
			}
			ms, err := opts.decode(raw.Raw, file, n, it, depth+1)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, ms...)
		}
		return out, errors.Join(errs...)
	}
	accepted, err := opts.Accept(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	out := make([]*Manifest, 0, len(accepted))
	for _, o := range accepted {
		m := &Manifest{Object: o, Kind: kindOf(o), File: file, Document: n, Item: item}
		if acc, err := meta.Accessor(o); err == nil {
			m.Name = acc.GetName()
		}
		out = append(out, m)
	}
	return out, nil
}

// kindOf is the kind obj says it is, or its Go type's name: conversion
// leaves TypeMeta empty, and a type's name is its kind.
func kindOf(obj runtime.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// splitDocuments splits a file into its YAML documents, each trimmed, the
// empty ones left out, as kube-apiserver splits a manifest file.
func splitDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if doc = bytes.TrimSpace(doc); len(doc) > 0 {
			docs = append(docs, doc)
		}
	}
}

// nameOf is obj's name, "" when it has none.
func nameOf(obj runtime.Object) string {
	if acc, err := meta.Accessor(obj); err == nil {
		return acc.GetName()
	}
	return ""
}

// isManifest reports whether name has a manifest's extension, in any
// case as strings.ToLower has it (kube-apiserver's rule): not as
// strings.EqualFold, which takes "ſ" (U+017F) for "s".
func isManifest(name string) bool {
	return slices.Contains(extensions, strings.ToLower(filepath.Ext(name)))
}

// apiserverHash is Set.APIServerHash of the manifests of g, the
// files directly in its directory.
func apiserverHash(g *watch.Generation) string {
	files := slices.SortedFunc(slices.Values(g.Files), func(a, b watch.Entry) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	hashed := false
	for _, f := range files {
		if !isManifest(f.Name) || strings.Contains(f.Name, "/") || len(f.Data) == 0 {
			continue
		}
		h.Write(f.Data)
		h.Write([]byte{0})
		hashed = true
	}
	if !hashed {
		return ""
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil))
}

// selectManifest takes the names isManifest takes, dot-files included.
func selectManifest(name string) string {
	if isManifest(name) {
		return ""
	}
	return "not a manifest: manifests end in " + strings.Join(extensions, ", ")
}

// Watch returns watcher options that keep dir's manifest set live: the
// caller adds OnReload, Metrics and intervals, then calls New and Start.
// last_config_info reports the hash kube-apiserver reports for the set in
// effect (Set.APIServerHash).
// An empty directory is an empty set; a missing one is an error. Files
// are read as stored: kube-apiserver decompresses nothing, so a gzip'd
// manifest is refused here as it is there, and the hash is of the bytes
// it hashes.
func Watch(dir string, opts Options) watch.Options[*Set] {
	return watch.Options[*Set]{
		Paths: []string{dir},
		Read:  watch.ReadOptions{Select: selectManifest, KeepGzip: true, LinksOut: opts.LinksOut},
		Load: func(_ context.Context, c *watch.Contents) (*Set, error) {
			return Load(c.Generations[0], opts)
		},
		MetricsHash: func(s *Set) string { return s.APIServerHash },
	}
}

// Composite reads a static manifest set and a dynamic set of objects (for
// example an informer's) as one, static objects first, in name order, as
// kube-apiserver combines manifest-based and API-based admission
// configuration (its loaders sort the static objects by name, and the
// order of mutating webhooks is the order of their mutations). A dynamic
// object whose name ends in the reserved suffix is refused: only manifests
// may use it.
type Composite struct {
	// Static returns the static set in effect; nil means none.
	Static func() *Set
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
			slices.SortStableFunc(out, func(a, b runtime.Object) int { return strings.Compare(nameOf(a), nameOf(b)) })
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
