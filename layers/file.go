package layers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/stratacfg/strata/internal/files"
	"github.com/stratacfg/strata/internal/pipeline"
	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/internal/yamljson"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/watch"
)

// File is a configuration file read as one layer, expressed in the keys of
// its kind's merge version: a file in another version is converted key by
// key.
type File struct {
	// Path is the file to read.
	Path string
	// Origin is the origin reported in provenance: OriginFile,
	// OriginDropIn or OriginInstanceConfig.
	Origin string
	// Kind is the configuration kind the file holds.
	Kind *scheme.Kind
	Mode scheme.Mode
	// InheritTypeMeta gives a file that names neither apiVersion nor
	// kind those of the merge version, as drop-ins may (kubelet requires
	// both in every drop-in, kubernetes#124796).
	InheritTypeMeta bool
	// AllowExperimental lets a file use an experimental version.
	AllowExperimental bool
	// Files reads the file; nil means reading it on its own with
	// watch.Read (a link resolved once, bounded, gzip decompressed).
	Files Files

	// gates, when set, takes the feature gates the component does not
	// know out of the file as it is decoded, and keeps them.
	gates *gateCheck
}

// Files reads configuration files. A component passes the snapshot it took
// of all its files (*watch.Contents), so that a configuration is built
// from one generation of a mounted ConfigMap, never from files of two
// updates.
type Files interface {
	// ReadFile returns the content of a file.
	ReadFile(path string) ([]byte, error)
}

// Decode reads, decodes and flattens the file, and returns its decoding
// warnings. The file is decoded strictly (per Mode) on its own first, so
// that every error names this file and the field. The layer's Source
// carries the path and a content hash. It is safe to call concurrently.
func (f *File) Decode() (*merge.Layer, []string, error) {
	l, _, warnings, err := f.decode(false)
	return l, warnings, err
}

// decode is Decode. With versionDefaults, for a file written in a version
// other than the merge version, it also returns the defaults that version
// gives the keys the file leaves unset, converted to the merge version, as
// a layer whose Source names the version (nil when there are none).
func (f *File) decode(versionDefaults bool) (*merge.Layer, *merge.Layer, []string, error) {
	data, compressed, err := f.read()
	if err != nil {
		return nil, nil, nil, err
	}
	into := f.Kind.MergeVersion()
	t := typed.For(f.Kind.MergeFields().Type())
	// An element of a keyed list that asks for its removal is no field
	// of the Go type: take it out before the strict decode, and make it
	// a tombstone after.
	raw := data
	data, removed, err := removals(t, data, f.Mode)
	if errors.Is(err, errDocuments) {
		return nil, nil, nil, &scheme.Error{Source: f.Path, Kind: scheme.ErrSyntax, Details: []string{"holds several documents; exactly one " + f.Kind.GroupKind().Kind + " is expected"}}
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	opts := scheme.DecodeOptions{Source: f.Path, Mode: f.Mode, Into: into, AllowExperimental: f.AllowExperimental}
	if f.gates != nil {
		opts.Filter = f.gates.filter
	}
	if f.InheritTypeMeta {
		opts.Inherit = into.WithKind(f.Kind.GroupKind().Kind)
	}
	doc, err := f.Kind.Decode(data, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	var warnings []string
	for _, w := range doc.Warnings {
		warnings = append(warnings, w.String())
	}
	var values, undefaulted map[string]string
	if doc.GVK.GroupVersion() == into {
		values, err = t.Flatten(doc.JSON)
	} else {
		values, undefaulted, err = convertLeaves(f.Kind, doc, into, t)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	var defaults *merge.Layer
	if versionDefaults && undefaulted != nil {
		vals, err := addedByDefaults(doc, t, values, undefaulted)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: the defaults of %s: %w", f.Path, doc.GVK.GroupVersion(), err)
		}
		if len(vals) > 0 {
			defaults = &merge.Layer{Source: merge.Source{Origin: OriginDefault, Name: doc.GVK.GroupVersion().String()}, Values: vals, Lists: t.Lists()}
		}
	}
	delete(values, "/apiVersion")
	delete(values, "/kind")
	if f.Mode != scheme.Strict || len(doc.Warnings) > 0 {
		for k := range values {
			if _, ok := t.At(k); !ok {
				// Warn mode warned of it; ignore mode says nothing.
				delete(values, k)
			}
		}
	}
	for _, k := range removed {
		values[k] = merge.Tombstone
	}
	sum := sha256.Sum256(raw)
	return &merge.Layer{
		Source: merge.Source{Origin: f.Origin, Name: f.Path, Version: "sha256:" + hex.EncodeToString(sum[:]), Compressed: compressed},
		Values: values,
		Lists:  t.Lists(),
	}, defaults, warnings, nil
}

// addedByDefaults returns the keys of the merge version, other than those
// the file set (own), that the defaults of the file's own version set:
// where doc's object, defaulted in its version and converted to the merge
// version, differs from the same document converted undefaulted. A key
// the file set that those defaults change (an explicit zero its version
// reads as unset) takes, in own, the value its version gives it: the
// file means that, whatever the merge version's defaults make of the
// value as written.
func addedByDefaults(doc *scheme.Document, t *typed.Type, own, undefaulted map[string]string) (map[string]string, error) {
	defaulted, err := t.FlattenObject(doc.Object)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range defaulted {
		if k == "/apiVersion" || k == "/kind" {
			continue
		}
		if ov, set := own[k]; set {
			if ov != merge.Tombstone && !pipeline.SameValue(t, k, ov, v) {
				own[k] = v
			}
			continue
		}
		if u, ok := undefaulted[k]; ok && u == v {
			continue
		}
		out[k] = v
	}
	return out, nil
}

// read returns the file's content, decompressed, and whether it was
// compressed.
func (f *File) read() ([]byte, bool, error) {
	limit := f.Kind.MaxBytes()
	fsys := f.Files
	if fsys == nil {
		c, err := watch.ReadContents([]string{f.Path}, watch.ReadOptions{MaxBytes: limit})
		if err != nil {
			return nil, false, readError(f.Path, limit, err)
		}
		fsys = c
	}
	data, err := fsys.ReadFile(f.Path)
	if err != nil {
		return nil, false, fmt.Errorf("reading configuration: %w", err)
	}
	if len(data) > limit {
		return nil, false, readError(f.Path, limit, &files.Error{Path: f.Path, Problem: fmt.Sprintf("is over the limit of %d bytes", limit), Err: files.ErrTooLarge})
	}
	compressed := false
	if c, ok := fsys.(interface{ Compressed(string) bool }); ok {
		compressed = c.Compressed(f.Path)
	}
	return data, compressed, nil
}

// readError is the error of reading path: a size limit is a decoding
// error of the file (scheme.ErrTooLarge) saying which limit, anything
// else a read error.
func readError(path string, limit int, err error) error {
	var fe *files.Error
	if errors.Is(err, files.ErrTooLarge) && errors.As(err, &fe) {
		return &scheme.Error{Source: path, Kind: scheme.ErrTooLarge, Details: []string{"the file " + fe.Problem}}
	}
	return fmt.Errorf("reading configuration: %w", err)
}

// errDocuments is removals' error for data of several documents.
var errDocuments = errors.New("several documents")

// removals returns data without the elements of t's keyed lists that ask
// for their removal and the members that remove elements from its sets,
// as JSON, and their keys; data as it is when it has none, and in strict
// mode when it gives a field twice, for the decoder to refuse. Data of
// several documents, which the conversion would take the first of, is
// errDocuments.
func removals(t *typed.Type, data []byte, mode scheme.Mode) ([]byte, []string, error) {
	lists := t.Lists()
	if len(lists) == 0 || !bytes.Contains(data, []byte("$patch")) && !bytes.Contains(data, []byte("$deleteFromPrimitiveList/")) {
		return data, nil, nil
	}
	if !yamljson.Single(data) {
		return nil, nil, errDocuments
	}
	convert := yamljson.ToJSON
	if mode == scheme.Strict {
		convert = yamljson.ToJSONStrict
	}
	j, err := convert(data, yamljson.Limit(len(data)))
	if err != nil {
		return data, nil, nil // the decoder reports it
	}
	return lists.Removals(j)
}

// defaultDropInExtensions are the extensions of the drop-ins of a
// component whose DropInPolicy names none: .yaml, .yml and .json for
// ordinary files, and .conf as kubelet's drop-in directory uses.
func defaultDropInExtensions() []string { return []string{".conf", ".json", ".yaml", ".yml"} }

// DropInPolicy says which files of a --config-dir directory are drop-ins
// and how they are read. The zero value is strata's: the direct children
// with one of .conf, .json, .yaml and .yml, dot-files left out (a ConfigMap
// mount's ..data and timestamped directories among them), each decoded
// per --decode-mode, one that names neither apiVersion nor kind taking
// the merge version's (not the main file's: a drop-in means what it says
// whatever version the main file is migrated to), relative paths resolved
// against the drop-in's own directory. The directory is read as every
// target of a component is (watch.ReadContents): a mount's ..data or a
// git-sync link resolved once, in the same generation as --config,
// bounded, gzip'd files decompressed.
type DropInPolicy struct {
	// Extensions a drop-in's name ends with, compared exactly;
	// .conf, .json, .yaml and .yml when empty. kubelet reads ".conf"
	// only.
	Extensions []string
	// Recursive reads the subdirectories too, as filepath.WalkDir walks
	// them: depth first, each directory's entries in byte order of their
	// names, a symbolic link never followed as a directory (it is
	// skipped), at most 16 levels deep (watch.ReadOptions.MaxDepth).
	Recursive bool
	// Hidden reads names starting with "." too (kubelet does).
	Hidden bool
	// RequireTypeMeta makes apiVersion and kind required in every
	// drop-in (kubelet requires them).
	RequireTypeMeta bool
	// Mode, when set, decodes drop-ins whatever --decode-mode says.
	Mode *scheme.Mode
	// LinksOut follows a symbolic link in the directory to a file
	// outside it. By default such a link is refused by name: a link is
	// followed only when it leads to a file inside the directory (the
	// generation behind a mount's ..data), so that whoever may write the
	// directory cannot make the component read any other file it can.
	LinksOut bool
}

func (p DropInPolicy) extensions() []string {
	if len(p.Extensions) > 0 {
		return p.Extensions
	}
	return defaultDropInExtensions()
}

// Why returns why a file named name is not a drop-in ("no extension;
// drop-ins end in .conf"), or "" when it is one.
func (p DropInPolicy) Why(name string) string {
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

// read returns how a drop-in directory is read: the names Why takes, its
// subdirectories when Recursive (hidden ones only when Hidden).
func (p DropInPolicy) read(o watch.ReadOptions) watch.ReadOptions {
	o.Select = func(rel string) string { return p.Why(path.Base(rel)) }
	o.Tree = p.Recursive
	o.LinksOut = p.LinksOut
	o.SelectDir = func(rel string) string {
		if !p.Hidden && strings.HasPrefix(path.Base(rel), ".") {
			return "hidden"
		}
		return ""
	}
	return o
}

// dropIns returns the drop-ins of the directory target g in the order
// they apply, and the entries left out, each with why
// ("config.d/README: no extension; drop-ins end in .conf"). g holds what
// read selected, and, for a watch that reads markers beside the drop-ins
// (WatchOptions.Markers), those and what it left out below the top too: p
// chooses from it alike, a subdirectory it does not read said once.
func (p DropInPolicy) dropIns(g *watch.Generation) (paths, skipped []string) {
	dirs := map[string]bool{}
	nested := func(name string) bool {
		top, _, below := strings.Cut(name, "/")
		if !below || p.Recursive {
			return false
		}
		if !dirs[top] {
			dirs[top] = true
			why := p.Why(top)
			if why == "" {
				why = "a directory"
			}
			skipped = append(skipped, filepath.Join(g.Path, top)+": "+why)
		}
		return true
	}
	for _, f := range g.Files {
		if nested(f.Name) {
			continue
		}
		at := filepath.Join(g.Path, filepath.FromSlash(f.Name))
		if why := p.Why(path.Base(f.Name)); why != "" {
			skipped = append(skipped, at+": "+why)
			continue
		}
		paths = append(paths, at)
	}
	for _, s := range g.Skipped {
		if !nested(s.Name) {
			skipped = append(skipped, filepath.Join(g.Path, filepath.FromSlash(s.Name))+": "+s.Reason)
		}
	}
	sort.Strings(skipped)
	return paths, skipped
}
