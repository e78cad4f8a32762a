package greenhouse

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"

	"github.com/stratacfg/strata/internal/yamljson"
	"github.com/stratacfg/strata/watch"
)

// Set is objects held in memory: read from a directory of manifests, or
// built by a test. It implements Objects.
type Set struct {
	Definitions map[string]*PluginDefinition // "Kind namespace/name", "ClusterPluginDefinition name"
	Presets     map[string]*PluginPreset     // "namespace/name"
	Plugins     map[string]*Plugin
	Clusters    map[string]*Cluster
	Overrides   map[string]*PluginOverride
}

var _ Objects = (*Set)(nil)

// NewSet returns an empty set.
func NewSet() *Set {
	return &Set{Definitions: map[string]*PluginDefinition{}, Presets: map[string]*PluginPreset{}, Plugins: map[string]*Plugin{},
		Clusters: map[string]*Cluster{}, Overrides: map[string]*PluginOverride{}}
}

// ReadDir reads every YAML or JSON manifest directly in dir, each file
// possibly several documents, into a set: the kinds of greenhouse.sap/v1alpha1
// this package reads. A Secret is passed over unread; any other kind, a
// document that does not decode, or an object given twice is an error
// naming the file and document.
func ReadDir(dir string) (*Set, error) {
	g, err := watch.Read(dir, watch.ReadOptions{Select: func(rel string) string {
		switch strings.ToLower(path.Ext(rel)) {
		case ".yaml", ".yml", ".json":
			return ""
		}
		return "not a manifest"
	}})
	if err != nil {
		return nil, err
	}
	if !g.Dir {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	s := NewSet()
	where := map[string]string{}
	var errs []error
	for _, f := range g.Files {
		file := filepath.Join(dir, f.Name)
		docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(f.Data)))
		for n := 1; ; n++ {
			raw, err := docs.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			at := fmt.Sprintf("%s#%d", file, n)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", at, err))
				break
			}
			if len(bytes.TrimSpace(raw)) == 0 {
				continue
			}
			id, err := s.AddManifest(raw)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", at, err))
				continue
			}
			if id == "" {
				continue
			}
			if prev, dup := where[id]; dup {
				errs = append(errs, fmt.Errorf("%s: %s is given in %s already", at, id, prev))
			}
			where[id] = at
		}
	}
	return s, errors.Join(errs...)
}

// AddManifest decodes one manifest, YAML or JSON, into s as ReadDir
// decodes each document, and returns its identity ("Kind
// namespace/name"), "" for what it passes over (a Secret).
func (s *Set) AddManifest(raw []byte) (string, error) {
	j, err := yamljson.ToJSONStrict(raw, yamljson.Limit(len(raw)))
	if err != nil {
		return "", err
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name, Namespace string
		} `json:"metadata"`
	}
	if err := json.Unmarshal(j, &meta); err != nil {
		return "", err
	}
	if meta.APIVersion == "v1" && meta.Kind == "Secret" {
		return "", nil // never read
	}
	if meta.APIVersion != Group.String() {
		return "", fmt.Errorf("apiVersion %q kind %q is none of the %s kinds read here", meta.APIVersion, meta.Kind, Group)
	}
	switch meta.Kind {
	case KindPluginPreset, KindPlugin, KindCluster, KindPluginOverride:
		if meta.Metadata.Namespace == "" {
			// Keyed by its bare name, it would be taken for an object of
			// the namespace that shares that name.
			return "", fmt.Errorf("%s %q has no metadata.namespace: the kind is namespaced", meta.Kind, meta.Metadata.Name)
		}
	}
	return s.Add(meta.Kind, j)
}

// modeled are, by kind, the fields whose every member this package's
// types hold: a field there that they do not know is a misspelling (a
// PluginOverride's clusterSelektor, which would select every cluster) or
// something that would be silently dropped (a valueFrom.secret.namespace,
// which would re-target the reference), and is refused. Fields of
// Greenhouse's kinds that the computation does not read (a definition's
// helmChart) are outside them and left alone.
var modeled = map[string][]string{
	KindPluginDefinition:        {"metadata"},
	KindClusterPluginDefinition: {"metadata"},
	KindPluginPreset:            {"metadata", "spec.plugin.optionValues", "spec.plugin.pluginDefinitionRef", "spec.clusterSelector", "spec.clusterOptionOverrides"},
	KindPlugin:                  {"metadata", "spec.optionValues", "spec.pluginDefinitionRef"},
	KindCluster:                 {"metadata"},
	KindPluginOverride:          {""},
}

// decode decodes j, an object of kind, into into: a field given twice is
// an error, and so is one unknown in the fields modeled holds, each
// named by its path.
func decode(kind string, j []byte, into any) error {
	strict, err := kjson.UnmarshalStrict(j, into)
	if err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	var errs []error
	for _, e := range strict {
		var fe kjson.FieldError
		if errors.As(e, &fe) && strings.HasPrefix(e.Error(), "unknown field") && !under(fe.FieldPath(), modeled[kind]) {
			continue
		}
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w", kind, errors.Join(errs...))
	}
	return nil
}

// under reports whether the field path lies in one of fields ("" for
// every field).
func under(path string, fields []string) bool {
	for _, f := range fields {
		if f == "" || path == f || strings.HasPrefix(path, f+".") || strings.HasPrefix(path, f+"[") {
			return true
		}
	}
	return false
}

// Add decodes an object of kind from its JSON into s and returns its
// identity, "Kind namespace/name". A field given twice, and an unknown
// field where this package's types hold every field, is an error naming
// it.
func (s *Set) Add(kind string, j []byte) (string, error) {
	decode := func(into any) error { return decode(kind, j, into) }
	var id string
	switch kind {
	case KindPluginDefinition, KindClusterPluginDefinition:
		d := &PluginDefinition{}
		if err := decode(d); err != nil {
			return "", err
		}
		d.Kind = kind
		id = kind + " " + objectName(d.ObjectMeta)
		s.Definitions[id] = d
	case KindPluginPreset:
		p := &PluginPreset{}
		if err := decode(p); err != nil {
			return "", err
		}
		id = kind + " " + objectName(p.ObjectMeta)
		s.Presets[objectName(p.ObjectMeta)] = p
	case KindPlugin:
		p := &Plugin{}
		if err := decode(p); err != nil {
			return "", err
		}
		id = kind + " " + objectName(p.ObjectMeta)
		s.Plugins[objectName(p.ObjectMeta)] = p
	case KindCluster:
		c := &Cluster{}
		if err := decode(c); err != nil {
			return "", err
		}
		id = kind + " " + objectName(c.ObjectMeta)
		s.Clusters[objectName(c.ObjectMeta)] = c
	case KindPluginOverride:
		o := &PluginOverride{}
		if err := decode(o); err != nil {
			return "", err
		}
		id = kind + " " + objectName(o.ObjectMeta)
		s.Overrides[objectName(o.ObjectMeta)] = o
	default:
		return "", fmt.Errorf("kind %q is none of PluginDefinition, ClusterPluginDefinition, PluginPreset, Plugin, Cluster, PluginOverride", kind)
	}
	return id, nil
}

// Plugin implements Objects.
func (s *Set) Plugin(namespace, name string) (*Plugin, error) {
	return s.Plugins[namespace+"/"+name], nil
}

// Definition implements Objects.
func (s *Set) Definition(namespace string, ref PluginDefinitionReference) (*PluginDefinition, error) {
	return s.Definitions[refString(namespace, ref)], nil
}

// PluginPreset implements Objects.
func (s *Set) PluginPreset(namespace, name string) (*PluginPreset, error) {
	return s.Presets[namespace+"/"+name], nil
}

// Cluster implements Objects.
func (s *Set) Cluster(namespace, name string) (*Cluster, error) {
	return s.Clusters[namespace+"/"+name], nil
}

// PluginOverrides implements Objects.
func (s *Set) PluginOverrides(namespace string) ([]*PluginOverride, error) {
	return inNamespace(s.Overrides, namespace), nil
}

// ListPlugins implements Objects.
func (s *Set) ListPlugins(namespace string) ([]*Plugin, error) {
	return inNamespace(s.Plugins, namespace), nil
}

// ListPluginPresets implements Objects.
func (s *Set) ListPluginPresets(namespace string) ([]*PluginPreset, error) {
	return inNamespace(s.Presets, namespace), nil
}

// inNamespace returns the objects of m ("namespace/name" keys) in
// namespace.
func inNamespace[T any](m map[string]*T, namespace string) []*T {
	var out []*T
	for k, o := range m {
		if ns, _, _ := strings.Cut(k, "/"); ns == namespace {
			out = append(out, o)
		}
	}
	return out
}
