package layers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
)

// DropInExtensions are the file extensions a drop-in directory reads:
// .yaml, .yml and .json for ordinary files, and .conf as kubelet's drop-in
// directory uses. Other files, subdirectories, and names starting with "."
// (a ConfigMap mount's ..data and timestamped directories) are ignored.
var DropInExtensions = []string{".conf", ".json", ".yaml", ".yml"}

// File is a configuration file read as one layer.
type File struct {
	// Path is the file to read.
	Path string
	// Kind is the source kind reported in provenance: KindFile,
	// KindDropIn or KindInstanceConfig.
	Kind  string
	Codec *scheme.Codec
	// Into is the version whose keys the layer is expressed in (the merge
	// version). A file in another version is converted key by key.
	Into schema.GroupVersion
	Mode scheme.Mode
	// Schema is the merge schema of Into's type; keys it does not know
	// are dropped in warn and ignore modes.
	Schema *merge.Schema
	// InheritTypeMeta, when set, is the apiVersion given to a file that
	// names neither apiVersion nor kind, as drop-ins may (kubelet
	// requires both in every drop-in, kubernetes#124796).
	InheritTypeMeta schema.GroupVersion
	// AllowExperimental lets a file use an experimental version.
	AllowExperimental bool

	warnings []string
}

var _ Source = (*File)(nil)

// Layer reads, decodes and flattens the file. The file is decoded strictly
// (per Mode) on its own first, so that every error names this file and the
// field. The layer's Source carries the path and a content hash.
func (f *File) Layer(_ context.Context) (*merge.Layer, error) {
	f.warnings = nil
	data, err := readLimited(f.Path, f.Codec)
	if err != nil {
		return nil, err
	}
	opts := scheme.DecodeOptions{Source: f.Path, Mode: f.Mode, Into: f.Into, AllowExperimental: f.AllowExperimental}
	doc, err := f.Codec.Decode(data, opts)
	if errors.Is(err, scheme.ErrTypeMeta) && !f.InheritTypeMeta.Empty() {
		if withMeta, ok := addTypeMeta(data, f.InheritTypeMeta.WithKind(f.Codec.Kind())); ok {
			doc, err = f.Codec.Decode(withMeta, opts)
		}
	}
	if err != nil {
		return nil, err
	}
	for _, w := range doc.Warnings {
		f.warnings = append(f.warnings, w.String())
	}
	var values map[string]string
	if doc.GVK.GroupVersion() == f.Into {
		values, err = merge.Flatten(doc.JSON)
	} else {
		values, err = convertLeaves(f.Codec, doc, f.Into, f.Schema)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	delete(values, "/apiVersion")
	delete(values, "/kind")
	for k := range values {
		if _, ok := f.Schema.Type(k); !ok {
			// Strict mode failed on it already; warn mode warned.
			delete(values, k)
		}
	}
	sum := sha256.Sum256(data)
	return &merge.Layer{
		Source: merge.Source{Kind: f.Kind, Name: f.Path, Version: "sha256:" + hex.EncodeToString(sum[:])},
		Values: values,
	}, nil
}

// Warnings returns the warnings of the last Layer call.
func (f *File) Warnings() []string { return f.warnings }

// readLimited reads path, refusing a file over the codec's size limit
// without reading all of it.
func readLimited(path string, c *scheme.Codec) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading configuration: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading configuration: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("reading configuration: %s is a directory, not a file", path)
	}
	limit := c.MaxBytes()
	data, err := io.ReadAll(io.LimitReader(fh, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("reading configuration %s: %w", path, err)
	}
	if len(data) > limit {
		return nil, &scheme.Error{Source: path, Kind: scheme.ErrTooLarge,
			Details: []string{fmt.Sprintf("the file is over the limit of %d bytes", limit)}}
	}
	return data, nil
}

// addTypeMeta gives a document that names neither apiVersion nor kind the
// ones of gvk.
func addTypeMeta(data []byte, gvk schema.GroupVersionKind) ([]byte, bool) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(j, &m) != nil || m == nil {
		return nil, false
	}
	if _, ok := m["apiVersion"]; ok {
		return nil, false
	}
	if _, ok := m["kind"]; ok {
		return nil, false
	}
	m["apiVersion"], _ = json.Marshal(gvk.GroupVersion().String())
	m["kind"], _ = json.Marshal(gvk.Kind)
	out, err := json.Marshal(m)
	return out, err == nil
}

// DropInFiles lists the drop-in files of dir in lexical order, following
// symbolic links to regular files. A missing directory is an error.
func DropInFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading drop-in directory: %w", err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !hasDropInExtension(name) {
			continue
		}
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading drop-in directory: %w", err)
		}
		if st.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

func hasDropInExtension(name string) bool {
	ext := filepath.Ext(name)
	for _, e := range DropInExtensions {
		if ext == e {
			return true
		}
	}
	return false
}
