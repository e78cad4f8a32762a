// Package configset makes a set of ConfigMaps atomic for the pods that
// mount them, which only a producer can do: kubelet updates each mounted
// ConfigMap on its own, in no set order, so a reader of several mounts can
// always see some updated and others not.
//
// Publish writes a directory of configuration files as parts (a key per
// file, gzip'd above a size, each file in the part its name hashes to, as
// prow's updateconfig partitions), and only then a manifest ConfigMap
// naming every part's content hash and a generation that only grows.
// Check, a watch.Options.Consistent, serves what a pod mounted only when
// every part matches the manifest mounted beside it: a part or a manifest
// kubelet has not updated yet keeps the set pending, and a manifest older
// than one already served is refused as a rollback.
//
//	publisher: configset.Publish(ctx, client.CoreV1(), "/src/ci", configset.Options{
//		Namespace: "ci", Manifest: "ci-config", Parts: []string{"ci-config-0", "ci-config-1"},
//	})
//	reader:    watch.Options[T]{
//		Paths:      []string{"/etc/ci/manifest", "/etc/ci/0", "/etc/ci/1"},
//		Consistent: configset.Check("/etc/ci/manifest"),
//	}
package configset

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/stratacfg/strata/watch"
)

// ManifestKey is the manifest ConfigMap's one key.
const ManifestKey = "manifest.json"

// Manifest is what the manifest ConfigMap holds: the generation of the
// publish that wrote it, and each part's content hash as a reader of its
// mount computes it (watch.Generation.Hash), by ConfigMap name.
type Manifest struct {
	Generation int64             `json:"generation"`
	Parts      map[string]string `json:"parts"`
}

// Options say where Publish writes.
type Options struct {
	// Namespace holds every ConfigMap of the set.
	Namespace string
	// Manifest names the manifest ConfigMap.
	Manifest string
	// Parts name the ConfigMaps the files are spread over, as prow's
	// PartitionedNames: a file goes to the part the first byte of its
	// name's SHA-256 selects, so that a change to one file rewrites one
	// part. A reader mounts each on its own, and never fewer than all.
	// At most 256.
	Parts []string
	// GzipAbove is the size above which a file is gzip'd (into
	// BinaryData, which a reader decompresses); zero means 64 KiB, and a
	// negative size gzips nothing.
	GzipAbove int
	// Select, when set, says which files of the directory are published,
	// by their path relative to it; nil publishes every regular file.
	// Hidden files and directories are never published.
	Select func(rel string) bool
	// Labels are set on every ConfigMap written.
	Labels map[string]string
	// AllowEmpty lets a directory that selects no file empty a set whose
	// parts hold some. By default that publish is refused, as prow's
	// updateconfig deletes nothing when a run updates nothing: it is
	// more often a run against the wrong directory than a wish to serve
	// no configuration.
	AllowEmpty bool
}

const (
	defaultGzipAbove = 64 << 10
	// maxPartBytes is the API server's bound on a ConfigMap's data.
	maxPartBytes = 1 << 20
	maxParts     = 256
)

// generationAnnotation, on a part, is the generation of the publish that
// wrote it last: a manifest ConfigMap deleted and published again goes on
// from the highest, so that readers never take it for a rollback.
const generationAnnotation = "configset.strata.dev/generation"

// Publish writes the files of dir as the set o names: the parts first,
// each only when its content changed, then the manifest, with the
// generation after the one it held. Nothing is written when dir is not a
// directory, a file cannot be read, two files share a name, a name is not
// a ConfigMap key, a part would pass the API server's 1 MiB, or dir
// selects no file over a set that holds some (unless AllowEmpty); a set
// whose parts all hold what dir holds is left as it is, and its manifest
// is returned. A write that fails on the way leaves the manifest as it
// was, so readers keep serving the set it names. Publishes are not
// serialized: each part and the manifest is written on the
// resourceVersion read, and once the manifest is written the parts are
// read again; a publish that raced another fails then (or on a conflict
// before), readers never serve the torn set, and the next publish mends
// it.
func Publish(ctx context.Context, client corev1client.ConfigMapsGetter, dir string, o Options) (*Manifest, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	parts, err := o.parts(dir)
	if err != nil {
		return nil, err
	}
	cms := client.ConfigMaps(o.Namespace)
	old, err := cms.Get(ctx, o.Manifest, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading the manifest ConfigMap %s/%s: %w", o.Namespace, o.Manifest, err)
	}
	var was Manifest
	if err == nil {
		m, err := Decode([]byte(old.Data[ManifestKey]))
		if err != nil {
			return nil, fmt.Errorf("ConfigMap %s/%s, key %s: %w", o.Namespace, o.Manifest, ManifestKey, err)
		}
		was = *m
	} else {
		old = nil
	}
	current := make([]*corev1.ConfigMap, len(o.Parts))
	highest := was.Generation
	for i, name := range o.Parts {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading part %s/%s: %w", o.Namespace, name, err)
		}
		current[i] = cm
		if g, err := strconv.ParseInt(cm.Annotations[generationAnnotation], 10, 64); err == nil {
			highest = max(highest, g)
		}
	}
	if !o.AllowEmpty && !slices.ContainsFunc(parts, func(p *part) bool { return len(p.data)+len(p.binary) > 0 }) {
		for i, cm := range current {
			if cm != nil && len(cm.Data)+len(cm.BinaryData) > 0 {
				return nil, fmt.Errorf("%s selects no file, and part %s/%s holds %d keys: nothing was published (Options.AllowEmpty publishes an empty set)", dir, o.Namespace, o.Parts[i], len(cm.Data)+len(cm.BinaryData))
			}
		}
	}
	next := &Manifest{Generation: highest + 1, Parts: map[string]string{}}
	for i, name := range o.Parts {
		next.Parts[name] = partHash(parts[i])
	}
	data, err := json.Marshal(next)
	if err == nil {
		_, err = Decode(data) // what every reader will do
	}
	if err != nil {
		return nil, fmt.Errorf("the manifest of generation %d: %w", next.Generation, err)
	}
	for i, name := range o.Parts {
		if err := o.write(ctx, cms, name, current[i], parts[i], next.Generation); err != nil {
			return nil, err
		}
	}
	if old != nil && maps.Equal(was.Parts, next.Parts) {
		return &was, nil
	}
	m := o.configMap(o.Manifest, map[string]string{ManifestKey: string(data)}, nil)
	if old == nil {
		_, err = cms.Create(ctx, m, metav1.CreateOptions{})
	} else {
		m.ResourceVersion = old.ResourceVersion
		_, err = cms.Update(ctx, m, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("writing the manifest ConfigMap %s/%s (generation %d): %w", o.Namespace, o.Manifest, next.Generation, err)
	}
	for _, name := range o.Parts {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading part %s/%s again: %w", o.Namespace, name, err)
		}
		if h := partHash(&part{data: cm.Data, binary: cm.BinaryData}); h != next.Parts[name] {
			return nil, fmt.Errorf("part %s/%s changed while generation %d was published (another publish?): readers keep the set they serve; publish again", o.Namespace, name, next.Generation)
		}
	}
	return next, nil
}

// Validate says what is wrong with o, if anything, before anything is
// read or written: no namespace, manifest or part, more parts than 256, a
// name that is no ConfigMap name, or one named twice. Publish calls it; a
// command line calls it to tell its user's mistake from a failure to
// publish.
func (o Options) Validate() error {
	switch {
	case o.Namespace == "":
		return errors.New("configset: Options.Namespace is required")
	case o.Manifest == "":
		return errors.New("configset: Options.Manifest is required")
	case len(o.Parts) == 0:
		return errors.New("configset: Options.Parts is required")
	case len(o.Parts) > maxParts:
		return fmt.Errorf("configset: %d parts: at most %d", len(o.Parts), maxParts)
	}
	seen := map[string]bool{o.Manifest: true}
	for _, p := range append([]string{o.Manifest}, o.Parts...) {
		if errs := validation.IsDNS1123Subdomain(p); len(errs) > 0 {
			return fmt.Errorf("configset: %q is not a ConfigMap name: %s", p, strings.Join(errs, "; "))
		}
	}
	for _, p := range o.Parts {
		if seen[p] {
			return fmt.Errorf("configset: ConfigMap %q is named twice", p)
		}
		seen[p] = true
	}
	return nil
}

// part is what one part ConfigMap holds.
type part struct {
	data   map[string]string
	binary map[string][]byte
	size   int
}

// parts reads dir and spreads its files over o.Parts.
func (o Options) parts(dir string) ([]*part, error) {
	root, err := filepath.EvalSymlinks(dir) // a git-sync root is a link
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(root); err != nil {
		return nil, err
	} else if !st.IsDir() { // read as a directory of nothing, it would empty every part
		return nil, fmt.Errorf("%s is not a directory: nothing was published", dir)
	}
	parts := make([]*part, len(o.Parts))
	for i := range parts {
		parts[i] = &part{data: map[string]string{}, binary: map[string][]byte{}}
	}
	from := map[string]string{} // key → the file it came from
	gzipAbove := o.GzipAbove
	if gzipAbove == 0 {
		gzipAbove = defaultGzipAbove
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == root {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir(), o.Select != nil && !o.Select(rel):
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: not a regular file (a link or a device): nothing was published", filepath.Join(dir, rel))
		}
		key := d.Name()
		if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
			return fmt.Errorf("%s: %q is not a ConfigMap key: %s", filepath.Join(dir, rel), key, strings.Join(errs, "; "))
		}
		if other, ok := from[key]; ok {
			return fmt.Errorf("%s and %s would both be key %q", filepath.Join(dir, other), filepath.Join(dir, rel), key)
		}
		from[key] = rel
		content, err := readBounded(path)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, rel), err)
		}
		p := parts[PartOf(key, len(o.Parts))]
		if gzipAbove > 0 && len(content) > gzipAbove {
			if content, err = gzipped(content); err != nil {
				return fmt.Errorf("%s: %w", filepath.Join(dir, rel), err)
			}
		}
		if utf8.Valid(content) {
			p.data[key] = string(content)
		} else {
			p.binary[key] = content
		}
		p.size += len(content)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, p := range parts {
		if p.size > maxPartBytes {
			return nil, fmt.Errorf("part %s would hold %d bytes, and a ConfigMap holds at most %d: give more parts, or a lower GzipAbove", o.Parts[i], p.size, maxPartBytes)
		}
	}
	return parts, nil
}

// PartOf is the index of the part, among n, that holds key: prow's rule for
// PartitionedNames, the first byte of the key's SHA-256 modulo n.
func PartOf(key string, n int) int {
	if n <= 1 {
		return 0
	}
	sum := sha256.Sum256([]byte(key))
	return int(sum[0]) % n
}

// maxFileBytes bounds a file Publish reads: no part could hold more, even
// gzip'd.
const maxFileBytes = 4 * maxPartBytes

// readBounded reads a regular file, refusing one over maxFileBytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxFileBytes)
	}
	return data, nil
}

func gzipped(content []byte) ([]byte, error) {
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	if _, err := z.Write(content); err != nil {
		return nil, err
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// partHash is the hash a reader of the part's mount computes.
func partHash(p *part) string {
	return watch.ContentHash(watch.ReadOptions{}, watch.Mount{Path: "part", Data: p.data, BinaryData: p.binary})
}

func (o Options) configMap(name string, data map[string]string, binary map[string][]byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: o.Labels},
		Data:       data,
		BinaryData: binary,
	}
}

// write makes the part ConfigMap name, cur as it was read (nil when
// there is none), hold p, writing only when it does not already.
func (o Options) write(ctx context.Context, cms corev1client.ConfigMapInterface, name string, cur *corev1.ConfigMap, p *part, gen int64) error {
	if cur != nil && equalData(cur.Data, p.data) && equalBinary(cur.BinaryData, p.binary) && labelsHeld(cur.Labels, o.Labels) {
		return nil
	}
	cm := o.configMap(name, p.data, p.binary)
	cm.Annotations = map[string]string{generationAnnotation: strconv.FormatInt(gen, 10)}
	var err error
	if cur == nil {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	} else {
		cm.ResourceVersion = cur.ResourceVersion
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing part %s/%s: %w", o.Namespace, name, err)
	}
	return nil
}

func equalData(a, b map[string]string) bool { return len(a) == len(b) && maps.Equal(a, b) }

func equalBinary(a, b map[string][]byte) bool {
	return len(a) == len(b) && maps.EqualFunc(a, b, bytes.Equal)
}

func labelsHeld(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// maxManifestBytes bounds a manifest: 256 parts with the longest names
// and their hashes take about 84 KiB.
const maxManifestBytes = 128 << 10

// Decode reads a manifest strictly: unknown fields, a generation below 1,
// no parts, or a part name or hash that is not one are errors.
func Decode(data []byte) (*Manifest, error) {
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("manifest of %d bytes: at most %d", len(data), maxManifestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a manifest: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a manifest: data after the object")
	}
	switch {
	case m.Generation < 1:
		return nil, fmt.Errorf("generation %d: must be at least 1", m.Generation)
	case len(m.Parts) == 0:
		return nil, errors.New("no parts")
	case len(m.Parts) > maxParts:
		return nil, fmt.Errorf("%d parts: at most %d", len(m.Parts), maxParts)
	}
	for _, name := range slices.Sorted(maps.Keys(m.Parts)) {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return nil, fmt.Errorf("part %q: not a ConfigMap name: %s", name, strings.Join(errs, "; "))
		}
		if h := m.Parts[name]; !isHash(h) {
			return nil, fmt.Errorf("part %s: hash %q is not sha256:HEX", name, h)
		}
	}
	return &m, nil
}

func isHash(s string) bool {
	hex, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for _, c := range hex {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Check returns a check for watch.Options.Consistent over a set Publish
// wrote: manifest is the target the manifest ConfigMap is mounted at (a
// directory), and parts the targets its parts are mounted at, each on its
// own; with no parts, every other target is one. The set is served only
// when each part's content is one the manifest lists, and the manifest
// lists no part that is not mounted; until then it is pending, kubelet
// having updated some mounts and not the others yet. A manifest whose
// generation is below the highest this check accepted is refused, and the
// reload reports it as a rollback. A part must be read whole: a ReadOptions
// that leaves one of its files out cannot match. The check keeps the
// generation it accepted: use one per watcher.
func Check(manifest string, parts ...string) func(c *watch.Contents) error {
	var mu sync.Mutex
	var accepted int64
	return func(c *watch.Contents) error {
		mg, ok := c.Target(manifest)
		if !ok {
			return fmt.Errorf("configset: the manifest %s is not one of the watched paths", manifest)
		}
		data, ok := fileOf(mg, ManifestKey)
		if !ok {
			return fmt.Errorf("%s holds no %s: the manifest ConfigMap is not published or not mounted yet", manifest, ManifestKey)
		}
		m, err := Decode(data)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(manifest, ManifestKey), err)
		}
		var targets []*watch.Generation
		for _, g := range c.Generations {
			if g.Path != manifest && (len(parts) == 0 || slices.Contains(parts, g.Path)) {
				targets = append(targets, g)
			}
		}
		if len(targets) != len(m.Parts) {
			return fmt.Errorf("%s: the manifest (generation %d) lists %d parts (%s), and %d are mounted: mount every part, each on its own", manifest, m.Generation, len(m.Parts), strings.Join(slices.Sorted(maps.Keys(m.Parts)), ", "), len(targets))
		}
		unmatched := map[string]int{} // hash → parts of the manifest that hold it
		for _, h := range m.Parts {
			unmatched[h]++
		}
		for _, g := range targets {
			if len(g.Skipped) > 0 {
				return fmt.Errorf("%s: %s was left out of the read, and a part is matched whole", g.Path, g.Skipped[0].Name)
			}
			if unmatched[g.Hash] == 0 {
				return fmt.Errorf("%s holds content the manifest (generation %d) does not list: a part or the manifest is not updated yet", g.Path, m.Generation)
			}
			unmatched[g.Hash]--
		}
		mu.Lock()
		defer mu.Unlock()
		if m.Generation < accepted {
			return &watch.RollbackError{Refuse: true, Rollbacks: []watch.Rollback{{
				Part: manifest, From: "generation " + strconv.FormatInt(accepted, 10), To: "generation " + strconv.FormatInt(m.Generation, 10),
			}}}
		}
		accepted = m.Generation
		return nil
	}
}

// fileOf returns the file named name of g, a directory target.
func fileOf(g *watch.Generation, name string) ([]byte, bool) {
	for _, f := range g.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}
