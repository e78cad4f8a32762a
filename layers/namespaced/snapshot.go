package namespaced

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratacfg/strata/internal/pipeline"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/target"
)

// Annotations a controller writes on the objects it reconciled, so that
// "which configuration did this object get" has an answer on the object.
const (
	AnnotationResolvedHash = "config.strata.dev/resolved-hash"
	AnnotationSources      = "config.strata.dev/sources"
)

// Snapshot is one namespace's effective configuration. It is immutable:
// callers must not modify it, its Object, or the slices its methods
// return. Namespaces whose layers are the same share one snapshot.
type Snapshot[T any] struct {
	// Object is the hub (internal) object: merged, defaulted, converted
	// and validated. Namespaces whose layers above the cluster's set the
	// same keys to the same values may share one Object, each snapshot
	// naming its own layers.
	Object T

	result  *merge.Result
	shared  *pipeline.Shared // with the snapshots of the same Object; nil: none
	sources []merge.Source
	// inSources holds sources when they are two (the cluster's and a
	// namespace's ConfigMap) or fewer: a build allocates them with the
	// snapshot.
	inSources [2]merge.Source
	rejected  []merge.Dropped // keys as JSON pointers
	display   func(string) string
	ignored   []error
	// contested are the keys selector layers of one rank, which only
	// their creation times and names order, set to different values.
	contested []target.Contest

	hashOnce sync.Once
	hash     string
}

// newSnapshot is the snapshot of obj, merged in res from lower layers with
// sources lower and the layers upper above them.
func newSnapshot[T any](obj T, res *merge.Result, sh *pipeline.Shared, lower []merge.Source, upper []*merge.Layer, display func(string) string) *Snapshot[T] {
	s := &Snapshot[T]{Object: obj, result: res, shared: sh, rejected: res.Dropped(), display: display}
	if n := len(lower) + len(upper); n <= len(s.inSources) {
		s.sources = s.inSources[:0]
	} else {
		s.sources = make([]merge.Source, 0, n)
	}
	s.sources = append(s.sources, lower...)
	for _, l := range upper {
		s.sources = append(s.sources, l.Source)
	}
	return s
}

// Provenance returns the effective raw keys and where each came from,
// defaults included (Explain, SourceOf). The keys defaulting filled are
// found when it is first read, not when the snapshot is built.
func (s *Snapshot[T]) Provenance() *merge.Result { return s.result }

// Sources returns the layers merged, most generic first, with their
// resourceVersions.
func (s *Snapshot[T]) Sources() []merge.Source { return s.sources }

// Rejected returns the keys a tenant policy dropped, sorted by key, each
// named as its ConfigMap holds it ("max-replicas", or SECTION/KEY for a
// Parsed kind), as Events and admission warnings name it; a key deeper in
// a configuration kind, and Field, stay JSON pointers.
func (s *Snapshot[T]) Rejected() []merge.Dropped {
	out := make([]merge.Dropped, len(s.rejected))
	for i, d := range s.rejected {
		d.Key = s.display(d.Key)
		if d.Field != "" {
			d.Field = s.display(d.Field)
		}
		out[i] = d
	}
	return out
}

// Ignored returns the layers left out as a whole because they are
// invalid, each a *LayerError (its source, and why); the rest of the
// configuration applies.
func (s *Snapshot[T]) Ignored() []error { return s.ignored }

// Contested returns the keys that selector layers as specific as each
// other (one number of selector terms) set to different values in this
// namespace, sorted by key (a JSON pointer; KeyName names it as its
// ConfigMap holds it): the value that wins by creation time, then name,
// and the others. A disagreement between equally specific layers is the
// operator's to resolve; Selectors.RefuseContests makes it an error.
func (s *Snapshot[T]) Contested() []target.Contest { return s.contested }

// Hash returns the content hash of the effective configuration: "sha256:"
// and the hex digest of the effective keys and values, defaults included.
// It is computed on the first call, or taken from a snapshot of the same
// Object that computed it: sharing an Object, they have the same content.
func (s *Snapshot[T]) Hash() string {
	s.hashOnce.Do(func() { s.hash = s.shared.Hash(func() string { return contentHash(s.result.Values()) }) })
	return s.hash
}

// KeyName returns the name of key, a JSON pointer of Provenance, as
// Rejected and Overrides name keys: as its ConfigMap holds it
// ("max-replicas", or SECTION/KEY for a Parsed kind).
func (s *Snapshot[T]) KeyName(key string) string { return s.display(key) }

// Overrides returns the keys a namespace or selector layer set and won,
// sorted, named as Rejected names them: what this namespace overrides of
// the cluster configuration.
func (s *Snapshot[T]) Overrides() []string {
	var out []string
	for _, k := range s.result.Keys() {
		p, _ := s.result.Explain(k)
		if p.Source.Origin == pipeline.OriginDefault && len(p.Shadowed) > 0 {
			p.Source = p.Shadowed[0].Source // the layer whose value defaulting refilled
		}
		if p.Source.Origin == OriginNamespace || p.Source.Origin == OriginSelector {
			out = append(out, s.display(k))
		}
	}
	return out
}

// sourcesAnnotation is the value of AnnotationSources: the sourceRef of
// each layer, comma-separated.
func (s *Snapshot[T]) sourcesAnnotation() string {
	parts := make([]string, len(s.sources))
	for i, src := range s.sources {
		parts[i] = sourceRef(src)
	}
	return strings.Join(parts, ",")
}

// sourceRef names a layer with its version: "kind:namespace/name@version",
// or without "@version" when it has none.
func sourceRef(s merge.Source) string {
	out := s.Origin + ":" + s.Name
	if s.Version != "" {
		out += "@" + s.Version
	}
	return out
}

// Annotate records on obj the hash and the sources of the configuration it
// was reconciled with. It reports whether it changed an annotation.
func (s *Snapshot[T]) Annotate(obj metav1.Object) bool {
	a := obj.GetAnnotations()
	sources := s.sourcesAnnotation()
	if a[AnnotationResolvedHash] == s.Hash() && a[AnnotationSources] == sources {
		return false
	}
	if a == nil {
		a = map[string]string{}
	}
	a[AnnotationResolvedHash], a[AnnotationSources] = s.Hash(), sources
	obj.SetAnnotations(a)
	return true
}

// contentHash hashes the effective raw keys and values, length-prefixed so
// that no two contents collide by concatenation.
func contentHash(values map[string]string) string {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	var n [8]byte
	for _, k := range keys {
		for _, s := range []string{k, values[k]} {
			binary.BigEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			h.Write([]byte(s))
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
