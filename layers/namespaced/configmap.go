package namespaced

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratacfg/strata/internal/files"
	"github.com/stratacfg/strata/internal/pipeline"
	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/merge"
)

// Origins of the Kubernetes layers (merge.Source's Origin).
const (
	// OriginCluster is the cluster ConfigMap in the component's namespace.
	OriginCluster = "cluster"
	// OriginSelector is a ConfigMap in the component's namespace that
	// applies to the namespaces its label selector matches.
	OriginSelector = "selector"
	// OriginNamespace is a ConfigMap a namespace owns.
	OriginNamespace = "namespace"
)

// configMapLayer turns the data of cm into a raw layer of the given origin,
// and returns the data it read. Every data key is one leaf, its value
// converted as the model says (for a Kind, by the type of that member of
// the merge version, so "false" stays an explicit false). Keys that begin
// with "_" (an "_example" block) are documentation and are skipped. A
// gzip'd value, in data or binaryData, is read decompressed (unless
// KeepGzip), and the layer's source says so; other binaryData is refused.
//
// A ConfigMap over the size (counted decompressed) or key-count limit is
// refused whole before any value is converted. The error names the key;
// the caller names the ConfigMap.
func (c *core[T]) configMapLayer(cm *corev1.ConfigMap, origin string) (*merge.Layer, map[string]string, error) {
	return c.configMapLayerAs(cm, origin, cm.Name)
}

// namespaceLayer is configMapLayer of cm, a namespace's ConfigMap, as a
// layer of its own under policy. With parsed (a DryRun's or a Direct
// resolver's, which keep no namespace between calls) it is parsed once
// per version and kept, so that a resolve that reads it again does not
// parse it again, nor allocate it while the policy stays.
func (c *core[T]) namespaceLayer(cm *corev1.ConfigMap, policy merge.Policy, parsed *parsedLayers) (*merge.Layer, error) {
	if parsed != nil {
		if l, err, ok := parsed.get(cm, policy); ok {
			return l, err
		}
	}
	l, _, err := c.configMapLayer(cm, OriginNamespace)
	if l != nil {
		l.Policy = policy
	}
	if parsed != nil {
		parsed.put(cm, l, err)
	}
	return l, err
}

// parsedLayers keeps namespace ConfigMaps parsed, by namespace, name and
// resourceVersion, at most maxParsed of them. A version is only trusted
// with the data it was parsed from: an object built in a test or a dry
// run may reuse one for other data. A version is kept the second time it
// is parsed: a doorkeeper (a table of the versions parsed lately, one per
// slot) remembers the first, so that a version read once costs no copy of
// its data.
type parsedLayers struct {
	mu   sync.Mutex
	m    map[parsedKey]*parsedLayer
	door pipeline.Doorkeeper
}

// parsedSeed seeds the doorkeepers' hashes.
var parsedSeed = maphash.MakeSeed()

type parsedKey struct{ namespace, name, version string }

type parsedLayer struct {
	data   map[string]string
	binary map[string][]byte
	err    error
	// layer is the ConfigMap's layer under the policy it was last asked
	// for. It is never modified: another policy gets a copy.
	layer atomic.Pointer[merge.Layer]
}

// maxParsed bounds the namespace ConfigMaps kept parsed: past it, the
// cache starts again.
const maxParsed = 1024

// get returns cm parsed, its layer under policy, when it is kept.
func (p *parsedLayers) get(cm *corev1.ConfigMap, policy merge.Policy) (*merge.Layer, error, bool) {
	if cm.ResourceVersion == "" {
		return nil, nil, false
	}
	p.mu.Lock()
	e := p.m[parsedKey{cm.Namespace, cm.Name, cm.ResourceVersion}]
	p.mu.Unlock()
	if e == nil || !maps.Equal(e.data, cm.Data) || !maps.EqualFunc(e.binary, cm.BinaryData, bytes.Equal) {
		return nil, nil, false
	}
	l := e.layer.Load()
	if u := underPolicy(l, policy); u != l {
		e.layer.Store(u)
		l = u
	}
	return l, e.err, true
}

// underPolicy returns l under policy: l itself when it has that policy
// (or is nil), a copy otherwise, since a layer is never modified.
func underPolicy(l *merge.Layer, policy merge.Policy) *merge.Layer {
	if l == nil || l.Policy == policy {
		return l
	}
	cp := *l
	cp.Policy = policy
	return &cp
}

// put keeps cm parsed as l, or err.
func (p *parsedLayers) put(cm *corev1.ConfigMap, l *merge.Layer, err error) {
	if cm.ResourceVersion == "" || !p.again(cm) {
		return
	}
	var binary map[string][]byte
	if cm.BinaryData != nil {
		binary = make(map[string][]byte, len(cm.BinaryData))
		for k, v := range cm.BinaryData {
			binary[k] = bytes.Clone(v)
		}
	}
	// Copies: a caller may change the object it passed afterwards.
	e := &parsedLayer{data: maps.Clone(cm.Data), binary: binary, err: err}
	e.layer.Store(l)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m = pipeline.Room(p.m, maxParsed)
	p.m[parsedKey{cm.Namespace, cm.Name, cm.ResourceVersion}] = e
}

// again reports whether the version of cm was parsed lately, and
// otherwise remembers that it was: the doorkeeper's answer to whether to
// keep it.
func (p *parsedLayers) again(cm *corev1.ConfigMap) bool {
	var h maphash.Hash
	h.SetSeed(parsedSeed)
	for _, s := range [...]string{cm.Namespace, cm.Name, cm.ResourceVersion} {
		h.WriteString(s)
		h.WriteByte(0)
	}
	return p.door.Again(h.Sum64())
}

// configMapLayerAs is configMapLayer of cm read as the ConfigMap name of
// the model: a selector ConfigMap of a Parsed kind is read as its
// section's.
func (c *core[T]) configMapLayerAs(cm *corev1.ConfigMap, origin, name string) (*merge.Layer, map[string]string, error) {
	src := configMapSource(cm, origin)
	if n := len(cm.Data) + len(cm.BinaryData); n > c.o.MaxConfigMapKeys {
		return nil, nil, fmt.Errorf("%d keys, over the limit of %d keys a ConfigMap may hold here", n, c.o.MaxConfigMapKeys)
	}
	data, compressed, err := c.configMapData(cm)
	if err != nil {
		return nil, nil, err
	}
	src.Compressed = compressed
	values, err := c.model.values(name, data)
	if err != nil {
		return nil, nil, err
	}
	return &merge.Layer{Source: src, Values: values}, data, nil
}

// configMapData returns the keys and text values of cm, gzip'd values
// decompressed, and whether any was, within MaxConfigMapBytes counted
// decompressed: a bomb costs at most the limit. With no gzip'd value and
// no binaryData it is cm.Data itself.
func (c *core[T]) configMapData(cm *corev1.ConfigMap) (map[string]string, bool, error) {
	if c.o.Parsed != nil { // its parsers read Data, as Tekton's do: binaryData is none of theirs
		cm = &corev1.ConfigMap{Data: cm.Data}
	}
	budget := c.o.MaxConfigMapBytes
	over := func(size int) error {
		return fmt.Errorf("%d bytes of data, over the limit of %d bytes a ConfigMap may hold here", size, c.o.MaxConfigMapBytes)
	}
	size := 0
	zipped := len(cm.BinaryData) > 0
	for k, v := range cm.Data {
		size += len(k) + len(v)
		zipped = zipped || (!c.o.KeepGzip && files.IsGzip([]byte(v)))
	}
	if size > budget {
		return nil, false, over(size)
	}
	if !zipped {
		return cm.Data, false, nil
	}
	if c.o.KeepGzip {
		return nil, false, fmt.Errorf("binaryData is not configuration (keys %s)", text.Join(sortedKeys(cm.BinaryData), ", "))
	}
	out := make(map[string]string, len(cm.Data)+len(cm.BinaryData))
	size = 0
	compressed := false
	// Keys in order, so that the budget is spent, and an error found,
	// the same way every time.
	add := func(k string, v []byte, binary bool) error {
		if binary && !files.IsGzip(v) {
			return fmt.Errorf("binaryData key %q is not configuration: only gzip'd text is read from binaryData", k)
		}
		size += len(k)
		name := fmt.Sprintf("key %q", k)
		plain, z, err := files.Gunzip(name, v, max(budget-size, 0))
		if errors.Is(err, files.ErrTooLarge) {
			return fmt.Errorf("%s is gzip-compressed, and decompressed it puts the data over the limit of %d bytes a ConfigMap may hold here", name, c.o.MaxConfigMapBytes)
		}
		if err != nil {
			return err
		}
		if z && !utf8.Valid(plain) {
			return fmt.Errorf("%s is gzip-compressed and does not hold text (UTF-8)", name)
		}
		compressed = compressed || z
		size += len(plain)
		if size > budget {
			return over(size)
		}
		out[k] = string(plain)
		return nil
	}
	for _, k := range sortedKeys(cm.Data) {
		if err := add(k, []byte(cm.Data[k]), false); err != nil {
			return nil, false, err
		}
	}
	for _, k := range sortedKeys(cm.BinaryData) {
		if err := add(k, cm.BinaryData[k], true); err != nil {
			return nil, false, err
		}
	}
	return out, compressed, nil
}

// LayerError is a selector or namespace ConfigMap left out as a whole: its
// source, and why (a value that does not convert, a parser's error, a
// configuration that does not validate with it). Snapshot.Ignored returns
// them.
type LayerError struct {
	Source merge.Source
	Err    error
}

func (e *LayerError) Error() string { return e.Source.String() + ": ignored: " + e.Err.Error() }
func (e *LayerError) Unwrap() error { return e.Err }

// configMapSource is the provenance source of a ConfigMap: its origin, its
// namespace/name and its resourceVersion.
func configMapSource(cm *corev1.ConfigMap, origin string) merge.Source {
	return merge.Source{Origin: origin, Name: cm.Namespace + "/" + cm.Name, Version: cm.ResourceVersion}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
