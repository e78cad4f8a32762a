package layers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/internal/files"
	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
)

// File is a configuration file read as one layer, expressed in the keys of
// its kind's merge version: a file in another version is converted key by
// key.
type File struct {
	// Path is the file to read.
	Path string
	// SourceKind is the source kind reported in provenance: KindFile,
	// KindDropIn or KindInstanceConfig.
	SourceKind string
	// Kind is the configuration kind the file holds.
	Kind *scheme.Kind
	Mode scheme.Mode
	// InheritTypeMeta gives a file that names neither apiVersion nor
	// kind those of the merge version, as drop-ins may (kubelet requires
	// both in every drop-in, kubernetes#124796).
	InheritTypeMeta bool
	// AllowExperimental lets a file use an experimental version.
	AllowExperimental bool
	// Files reads the file; nil means the operating system.
	Files Files
}

// Files reads configuration files. A watcher passes the snapshot it took
// (watch.Contents), so that a configuration is built from one generation of
// a mounted ConfigMap, never from files of two updates.
type Files interface {
	// ReadFile returns the content of a file.
	ReadFile(path string) ([]byte, error)
	// ReadDir returns the names of the regular files directly inside
	// dir, sorted.
	ReadDir(dir string) ([]string, error)
}

// Decode reads, decodes and flattens the file, and returns its decoding
// warnings. The file is decoded strictly (per Mode) on its own first, so
// that every error names this file and the field. The layer's Source
// carries the path and a content hash. It is safe to call concurrently.
func (f *File) Decode() (*merge.Layer, []string, error) {
	data, err := f.read()
	if err != nil {
		return nil, nil, err
	}
	into := f.Kind.MergeVersion()
	opts := scheme.DecodeOptions{Source: f.Path, Mode: f.Mode, Into: into, AllowExperimental: f.AllowExperimental}
	doc, err := f.Kind.Decode(data, opts)
	if errors.Is(err, scheme.ErrTypeMeta) && f.InheritTypeMeta {
		if withMeta, ok := addTypeMeta(data, into.WithKind(f.Kind.GroupKind().Kind)); ok {
			doc, err = f.Kind.Decode(withMeta, opts)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	for _, w := range doc.Warnings {
		warnings = append(warnings, w.String())
	}
	t := typed.For(f.Kind.MergeFields().Type())
	var values map[string]string
	if doc.GVK.GroupVersion() == into {
		values, err = merge.Flatten(doc.JSON)
	} else {
		values, err = convertLeaves(f.Kind, doc, into, t)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	delete(values, "/apiVersion")
	delete(values, "/kind")
	for k := range values {
		if _, ok := t.At(k); !ok {
			// Strict mode failed on it already; warn mode warned.
			delete(values, k)
		}
	}
	sum := sha256.Sum256(data)
	return &merge.Layer{
		Source: merge.Source{Kind: f.SourceKind, Name: f.Path, Version: "sha256:" + hex.EncodeToString(sum[:])},
		Values: values,
	}, warnings, nil
}

func (f *File) read() ([]byte, error) {
	limit := f.Kind.MaxBytes()
	if f.Files == nil {
		data, err := files.Read(f.Path, limit)
		if errors.Is(err, files.ErrTooLarge) {
			return nil, tooLarge(f.Path, limit)
		}
		if err != nil {
			return nil, fmt.Errorf("reading configuration: %w", err)
		}
		return data, nil
	}
	data, err := f.Files.ReadFile(f.Path)
	if err != nil {
		return nil, fmt.Errorf("reading configuration: %w", err)
	}
	if len(data) > limit {
		return nil, tooLarge(f.Path, limit)
	}
	return data, nil
}

func tooLarge(path string, limit int) error {
	return &scheme.Error{Source: path, Kind: scheme.ErrTooLarge,
		Details: []string{fmt.Sprintf("the file is over the limit of %d bytes", limit)}}
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

// DefaultDropInExtensions are the extensions of the drop-ins of a
// component whose DropInPolicy names none: .yaml, .yml and .json for
// ordinary files, and .conf as kubelet's drop-in directory uses.
func DefaultDropInExtensions() []string { return []string{".conf", ".json", ".yaml", ".yml"} }

// DropInPolicy says which files of a --config-dir directory are drop-ins
// and how they are read. The zero value is strata's: the direct children
// with one of DefaultDropInExtensions, dot-files left out (a ConfigMap
// mount's ..data and timestamped directories among them), each decoded
// per --decode-mode, one that names neither apiVersion nor kind taking
// the main file's, relative paths resolved against the drop-in's own
// directory.
type DropInPolicy struct {
	// Extensions a drop-in's name ends with, compared exactly;
	// DefaultDropInExtensions when empty. kubelet reads ".conf" only.
	Extensions []string
	// Recursive reads the subdirectories too, as filepath.WalkDir walks
	// them: depth first, each directory's entries in byte order of their
	// names, a symbolic link never followed as a directory, and a
	// directory argument that is itself a symbolic link not walked at
	// all (kubelet's walk).
	Recursive bool
	// Hidden reads names starting with "." too (kubelet does).
	Hidden bool
	// RequireTypeMeta makes apiVersion and kind required in every
	// drop-in (kubelet requires them).
	RequireTypeMeta bool
	// Mode, when set, decodes drop-ins whatever --decode-mode says.
	Mode *scheme.Mode
}

func (p DropInPolicy) extensions() []string {
	if len(p.Extensions) > 0 {
		return p.Extensions
	}
	return DefaultDropInExtensions()
}

// why returns why name is not a drop-in's, or "" when it is.
func (p DropInPolicy) why(name string) string {
	if !p.Hidden && strings.HasPrefix(name, ".") {
		return "hidden"
	}
	ext := filepath.Ext(name)
	if !slices.Contains(p.extensions(), ext) {
		if ext == "" {
			return "no extension; drop-ins end in " + strings.Join(p.extensions(), ", ")
		}
		return "extension " + ext + "; drop-ins end in " + strings.Join(p.extensions(), ", ")
	}
	return ""
}

// Files lists the drop-ins of dir in the order they apply, and the
// entries it left out, each with why ("config.d/README: no extension;
// drop-ins end in .conf"). A name that is not a drop-in's is never opened,
// so a README or a dangling link beside the drop-ins never fails a load;
// a drop-in's name on a FIFO, a device or a link to nothing is an error.
// A missing directory is an error. fsys nil means the operating system;
// otherwise only its direct children are read.
func (p DropInPolicy) Files(dir string, fsys Files) (paths []string, skipped []string, err error) {
	if fsys != nil {
		names, err := fsys.ReadDir(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("reading drop-in directory: %w", err)
		}
		for _, name := range names {
			if why := p.why(name); why != "" {
				skipped = append(skipped, filepath.Join(dir, name)+": "+why)
			} else {
				paths = append(paths, filepath.Join(dir, name))
			}
		}
		sort.Strings(paths)
		return paths, skipped, nil
	}
	if p.Recursive {
		return p.walk(dir)
	}
	names, sk, err := files.List(dir, func(name string) bool {
		if why := p.why(name); why != "" {
			skipped = append(skipped, filepath.Join(dir, name)+": "+why)
			return false
		}
		return true
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading drop-in directory: %w", err)
	}
	for _, name := range names {
		paths = append(paths, filepath.Join(dir, name))
	}
	for _, s := range sk {
		skipped = append(skipped, filepath.Join(dir, s.Name)+": "+s.Reason)
	}
	sort.Strings(skipped)
	return paths, skipped, nil
}

// walk lists the drop-ins of dir and its subdirectories as
// filepath.WalkDir walks them. A drop-in is opened later by the one rule
// for files (files.Read): regular files only, without blocking.
func (p DropInPolicy) walk(dir string) (paths []string, skipped []string, err error) {
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && !p.Hidden && strings.HasPrefix(d.Name(), ".") {
				skipped = append(skipped, path+": hidden")
				return filepath.SkipDir
			}
			return nil
		}
		if why := p.why(d.Name()); why != "" {
			skipped = append(skipped, path+": "+why)
			return nil
		}
		paths = append(paths, path)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading drop-in directory: %w", err)
	}
	return paths, skipped, nil
}
