package namespaced

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/internal/pipeline"
	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/internal/yamljson"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

// Parsed is a configuration kind read by parsers that already exist for
// it: constructors over a ConfigMap's data, the knative pattern that
// Knative Serving, Eventing and Tekton share. Each Section is one
// ConfigMap at the cluster level and one a namespace may own. strata
// merges the raw keys of every layer, applies the tenant policy key by
// key, and calls each section's parser once on its merged data, into one
// T per snapshot: a reconcile never sees one section of one version
// beside another of another. Provenance is per key; a parser's error
// refuses the layer whose keys caused it, named.
type Parsed[T any] struct {
	// New returns the empty configuration the sections parse into.
	New func() T
	// Sections, in the order their cluster ConfigMaps layer.
	Sections []Section[T]
}

// Section is one ConfigMap of a Parsed kind.
type Section[T any] struct {
	// Name names the section in keys: the key k of its ConfigMaps is
	// "NAME/k" wherever strata shows a key or takes one (Tenancy,
	// provenance, refusals).
	Name string
	// ClusterConfigMap is the section's ConfigMap in Options.Namespace;
	// NamespaceConfigMap the one a namespace may own, with
	// Options.Labels.
	ClusterConfigMap, NamespaceConfigMap string
	// Parse parses the section's merged data into cfg. Keys that begin
	// with "_" (an "_example" block) are never passed.
	Parse func(data map[string]string, cfg T) error
	// Keys are the keys the section reads, when known: the operator's
	// lock list may name no other of the section's, and may name one of
	// them without its section when no other section declares it.
	Keys []string
	// Alpha and Beta are the section's keys of that stability (a feature
	// flag of an alpha or a beta feature): a tenant sets one only when
	// the cluster allows that stability (tenancy.Policy.StabilityKey), as
	// for the fields of a Kind marked validation.Alpha and
	// validation.Beta, but may always set it to false (TEP-0085: a
	// namespace cannot enable such a feature; it may turn one off).
	Alpha, Beta []string
}

// FromMap adapts a constructor over a ConfigMap's data (Tekton's
// config.NewDefaultsFromMap) to a Section's Parse: set stores what it
// returns in the configuration.
func FromMap[T, V any](ctor func(map[string]string) (V, error), set func(cfg T, v V)) func(map[string]string, T) error {
	return func(data map[string]string, cfg T) error {
		v, err := ctor(data)
		if err != nil {
			return err
		}
		set(cfg, v)
		return nil
	}
}

// model is what a resolver knows of its configuration: the ConfigMaps
// that hold it, how one becomes a layer, what each key is, and how layers
// become T. A Kind's Go types are one model, a Parsed kind another; no
// other part of a resolver asks which.
type model[T any] interface {
	// clusterNames are the cluster ConfigMaps, in the order they layer;
	// namespaceNames the ConfigMaps a namespace may own, likewise.
	clusterNames() []string
	namespaceNames() []string
	// values turns the data of the ConfigMap name into a layer's keys
	// and JSON values; the error names each bad key.
	values(name string, data map[string]string) (map[string]string, error)
	// keyOf is the pointer of the data key k of the ConfigMap name.
	keyOf(name, k string) string
	// selectorName is the ConfigMap name whose keys a selector ConfigMap
	// holds, given the section its annotation names ("" for none).
	selectorName(section string) (string, error)
	// pointer turns a key as an operator writes it (Tenancy, a lock
	// list) into a JSON pointer, and display a pointer into the key as a
	// user reads it.
	pointer(k string) (string, error)
	display(ptr string) string
	// keys answers what Tenancy asks of a key.
	keys() keyspace
	// newStack merges lower and builds T with upper above it.
	newStack(upper []*merge.Layer, lower ...*merge.Layer) (stack[T], T, *merge.Result, error)
}

// stack is lower layers (the cluster ConfigMaps) merged once, to build
// from with other layers above them.
type stack[T any] interface {
	Build(upper []*merge.Layer) (T, *merge.Result, *pipeline.Shared, error)
	Sources() []merge.Source
}

// keyspace is what the tenant policy knows of keys.
type keyspace interface {
	// Markers returns the markers of key and its ancestors.
	Markers(key string) validation.Marker
	// Under returns a field under key that carries m.
	Under(key string, m validation.Marker) (string, bool)
	// members are the keys a ConfigMap key can be, whose refusals are
	// worked out once.
	members() []string
	// known reports whether key is a key of the configuration.
	known(key string) bool
}

// kindModel is a scheme.Kind's Go types: a ConfigMap key is a top-level
// member of the merge version, its value converted by the member's type.
type kindModel[T any] struct {
	kind     *scheme.Kind
	fields   *validation.Fields
	typ      *typed.Type
	cluster  string
	own      []string
	keySpace fieldKeys
}

func newKindModel[T any](k *scheme.Kind, cluster string, own []string) (*kindModel[T], error) {
	hub, err := k.New(k.Hub())
	if err != nil {
		return nil, err
	}
	if _, ok := hub.(T); !ok {
		return nil, fmt.Errorf("the hub type of %s is %T, not %s", k.GroupKind().Kind, hub, reflect.TypeFor[T]())
	}
	m := &kindModel[T]{kind: k, fields: k.MergeFields(), cluster: cluster, own: own}
	m.typ = typed.For(m.fields.Type())
	m.keySpace = fieldKeys{m.fields, m.typ}
	return m, nil
}

func (m *kindModel[T]) clusterNames() []string   { return []string{m.cluster} }
func (m *kindModel[T]) namespaceNames() []string { return m.own }

func (m *kindModel[T]) values(_ string, data map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(data))
	var errs []string
	for k, v := range data {
		if strings.HasPrefix(k, "_") {
			continue
		}
		key, j, err := m.typ.ConvertMember(k, v)
		if err != nil {
			if f := m.kind.Removed(m.kind.MergeVersion(), key); f != nil {
				err = errors.New(f.String())
			}
			errs = append(errs, err.Error())
			continue
		}
		out[key] = j
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("%s", text.Join(errs, "; "))
	}
	return out, nil
}

func (m *kindModel[T]) keyOf(_, k string) string { return merge.Pointer(k) }

// selectorName is any name: a Kind's ConfigMaps all hold its members.
func (m *kindModel[T]) selectorName(string) (string, error) { return m.cluster, nil }

func (m *kindModel[T]) pointer(k string) (string, error) {
	p := keyPointer(k)
	if _, ok := m.typ.At(strings.ReplaceAll(p, "*", "x")); !ok {
		return "", fmt.Errorf("%q is no configuration key", k)
	}
	return p, nil
}

func (m *kindModel[T]) display(ptr string) string {
	if segs, ok := merge.Segments(ptr); ok && len(segs) == 1 {
		return segs[0]
	}
	return ptr
}

func (m *kindModel[T]) keys() keyspace { return m.keySpace }

func (m *kindModel[T]) newStack(upper []*merge.Layer, lower ...*merge.Layer) (stack[T], T, *merge.Result, error) {
	var zero T
	st, obj, res, err := pipeline.NewStack[runtime.Object](m.kind, upper, lower...)
	if err != nil {
		return nil, zero, nil, err
	}
	return kindStack[T]{st}, obj.(T), res, nil
}

// kindStack is a pipeline.Stack of runtime.Object giving T.
type kindStack[T any] struct {
	st *pipeline.Stack[runtime.Object]
}

func (s kindStack[T]) Build(upper []*merge.Layer) (T, *merge.Result, *pipeline.Shared, error) {
	obj, res, sh, err := s.st.Build(upper)
	if err != nil {
		var zero T
		return zero, nil, nil, err
	}
	return obj.(T), res, sh, nil
}

func (s kindStack[T]) Sources() []merge.Source { return s.st.Sources() }

// fieldKeys is a keyspace over a Go type's fields and markers.
type fieldKeys struct {
	f   *validation.Fields
	typ *typed.Type
}

func (k fieldKeys) Markers(key string) validation.Marker { return k.f.Markers(key) }
func (k fieldKeys) Under(key string, m validation.Marker) (string, bool) {
	return k.f.Under(key, m)
}

func (k fieldKeys) members() []string {
	var out []string
	k.typ.Walk(func(key string, _ reflect.StructField) bool {
		out = append(out, key)
		return false
	})
	return out
}

func (k fieldKeys) known(key string) bool {
	_, ok := k.typ.At(strings.ReplaceAll(key, "*", "x"))
	return ok
}

// parsedModel is a Parsed kind: the key k of a section's ConfigMap is the
// pointer /SECTION/k, its value the string as it is.
type parsedModel[T any] struct {
	p        *Parsed[T]
	byName   map[string]*Section[T] // by cluster or namespace ConfigMap name
	sections map[string]*Section[T] // by section name
}

func newParsedModel[T any](p *Parsed[T]) (*parsedModel[T], error) {
	m := &parsedModel[T]{p: p, byName: map[string]*Section[T]{}, sections: map[string]*Section[T]{}}
	var errs []string
	if p.New == nil {
		errs = append(errs, "Parsed.New is required")
	}
	if len(p.Sections) == 0 {
		errs = append(errs, "Parsed needs at least one section")
	}
	for i := range p.Sections {
		s := &p.Sections[i]
		switch {
		case s.Name == "" || strings.Contains(s.Name, "/"):
			errs = append(errs, fmt.Sprintf("section %d: a name without \"/\" is required", i))
		case s.ClusterConfigMap == "" || s.NamespaceConfigMap == "":
			errs = append(errs, fmt.Sprintf("section %s: ClusterConfigMap and NamespaceConfigMap are required", s.Name))
		case s.Parse == nil:
			errs = append(errs, fmt.Sprintf("section %s: Parse is required", s.Name))
		case m.sections[s.Name] != nil:
			errs = append(errs, fmt.Sprintf("section %s is declared twice", s.Name))
		case m.byName[s.ClusterConfigMap] != nil || m.byName[s.NamespaceConfigMap] != nil:
			errs = append(errs, fmt.Sprintf("section %s: a ConfigMap name belongs to another section", s.Name))
		}
		for _, k := range append(slices.Clip(s.Alpha), s.Beta...) {
			if len(s.Keys) > 0 && !slices.Contains(s.Keys, k) {
				errs = append(errs, fmt.Sprintf("section %s: %s has a stability but is not among its Keys", s.Name, k))
			}
		}
		for _, k := range s.Alpha {
			if slices.Contains(s.Beta, k) {
				errs = append(errs, fmt.Sprintf("section %s: %s is both alpha and beta", s.Name, k))
			}
		}
		m.sections[s.Name] = s
		m.byName[s.ClusterConfigMap], m.byName[s.NamespaceConfigMap] = s, s
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return m, nil
}

func (m *parsedModel[T]) clusterNames() []string {
	out := make([]string, len(m.p.Sections))
	for i, s := range m.p.Sections {
		out[i] = s.ClusterConfigMap
	}
	return out
}

func (m *parsedModel[T]) namespaceNames() []string {
	out := make([]string, len(m.p.Sections))
	for i, s := range m.p.Sections {
		out[i] = s.NamespaceConfigMap
	}
	return out
}

func (m *parsedModel[T]) values(name string, data map[string]string) (map[string]string, error) {
	s := m.byName[name]
	if s == nil {
		return nil, fmt.Errorf("ConfigMap %s belongs to no section", name)
	}
	out := make(map[string]string, len(data))
	var errs []string
	for k, v := range data {
		if strings.HasPrefix(k, "_") {
			continue
		}
		if err := yamljson.Check([]byte(v), yamljson.Limit(len(v))); err != nil { // before a parser reads it as YAML
			errs = append(errs, fmt.Sprintf("key %q: %v", k, err))
			continue
		}
		j, _ := json.Marshal(v)
		out[merge.Pointer(s.Name, k)] = string(j)
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, errors.New(text.Join(errs, "; "))
	}
	return out, nil
}

func (m *parsedModel[T]) keyOf(name, k string) string {
	if s := m.byName[name]; s != nil {
		return merge.Pointer(s.Name, k)
	}
	return merge.Pointer(k)
}

func (m *parsedModel[T]) selectorName(section string) (string, error) {
	s := m.sections[section]
	if s == nil {
		names := make([]string, len(m.p.Sections))
		for i, s := range m.p.Sections {
			names[i] = s.Name
		}
		return "", fmt.Errorf("section %q is none of %s", section, strings.Join(names, ", "))
	}
	return s.ClusterConfigMap, nil
}

func (m *parsedModel[T]) pointer(k string) (string, error) {
	k = strings.TrimPrefix(k, "/")
	section, key, ok := strings.Cut(k, "/")
	if !ok {
		// A key alone, as Tekton's lock list names them: the section
		// that declares it.
		var in []string
		for _, s := range m.p.Sections {
			if slices.Contains(s.Keys, k) {
				in = append(in, s.Name)
			}
		}
		switch len(in) {
		case 1:
			return merge.Pointer(in[0], k), nil
		case 0:
			return "", fmt.Errorf("%q is no key of any section: keys are SECTION/KEY", k)
		default:
			return "", fmt.Errorf("%q is a key of sections %s: write SECTION/KEY", k, strings.Join(in, ", "))
		}
	}
	s := m.sections[section]
	switch {
	case !ok || key == "":
		return "", fmt.Errorf("%q is no key: keys are SECTION/KEY", k)
	case s == nil:
		return "", fmt.Errorf("%q: no section %s", k, section)
	case len(s.Keys) > 0 && !slices.Contains(s.Keys, key) && key != "*":
		return "", fmt.Errorf("%q is no key of section %s", k, section)
	}
	return merge.Pointer(section, key), nil
}

func (m *parsedModel[T]) display(ptr string) string {
	if segs, ok := merge.Segments(ptr); ok && len(segs) == 2 {
		return segs[0] + "/" + segs[1]
	}
	return ptr
}

func (m *parsedModel[T]) keys() keyspace { return parsedKeys[T]{m} }

func (m *parsedModel[T]) newStack(upper []*merge.Layer, lower ...*merge.Layer) (stack[T], T, *merge.Result, error) {
	var zero T
	st := &parsedStack[T]{m: m, res: merge.Merge(lower...)}
	for _, l := range lower {
		st.sources = append(st.sources, l.Source)
	}
	obj, res, _, err := st.Build(upper)
	if err != nil {
		return nil, zero, nil, err
	}
	return st, obj, res, nil
}

// parsedStack merges the cluster layers once and parses every section of
// the merge with the layers above them.
type parsedStack[T any] struct {
	m       *parsedModel[T]
	res     *merge.Result
	sources []merge.Source
}

func (st *parsedStack[T]) Sources() []merge.Source { return st.sources }

// Build merges upper above the cluster layers and parses each section of
// the result once. A parser's error names its section.
func (st *parsedStack[T]) Build(upper []*merge.Layer) (T, *merge.Result, *pipeline.Shared, error) {
	var zero T
	res := pipeline.Engine.Extend(st.res, upper...)
	data := sectionsOf(res)
	cfg := st.m.p.New()
	for i := range st.m.p.Sections {
		s := &st.m.p.Sections[i]
		d := data[s.Name]
		if d == nil {
			d = map[string]string{}
		}
		if err := parseSafely(s, d, cfg); err != nil {
			// A parser that does not name the key at fault (Tekton's
			// of a boolean) has it found: the first key set above the
			// cluster layers that fails alone over them.
			e, below := &sectionError[T]{section: s, err: err}, sectionsOf(st.res)[s.Name]
			for _, k := range slices.Sorted(maps.Keys(d)) {
				if v, ok := below[k]; ok && v == d[k] {
					continue // the cluster layers'
				}
				one := maps.Clone(below)
				if one == nil {
					one = map[string]string{}
				}
				if one[k] = d[k]; parseSafely(s, one, st.m.p.New()) != nil {
					e.key = k
					break
				}
			}
			return zero, nil, nil, e
		}
	}
	return cfg, res, nil, nil
}

// sectionsOf is the effective data of each section in res.
func sectionsOf(res *merge.Result) map[string]map[string]string {
	data := map[string]map[string]string{}
	for k, v := range res.Values() {
		segs, ok := merge.Segments(k)
		var s string
		if !ok || len(segs) != 2 || json.Unmarshal([]byte(v), &s) != nil {
			continue
		}
		if data[segs[0]] == nil {
			data[segs[0]] = map[string]string{}
		}
		data[segs[0]][segs[1]] = s
	}
	return data
}

// sectionError is a section's parser's error, and the key at fault when
// one alone is.
type sectionError[T any] struct {
	section *Section[T]
	key     string
	err     error
}

// Error quotes the parser's error cut to text.MaxMessage: a constructor
// may quote the whole value it refused (Tekton's quotes a
// default-pod-template), and a tenant's value is up to a megabyte.
func (e *sectionError[T]) Error() string {
	msg := text.Cut(e.err.Error(), text.MaxMessage)
	if e.key != "" && !strings.Contains(msg, strconv.Quote(e.key)) {
		msg = "key " + strconv.Quote(e.key) + ": " + msg
	}
	return e.section.Name + ": " + msg
}
func (e *sectionError[T]) Unwrap() error { return e.err }

// clusterConfigMap is the cluster ConfigMap of the section whose parser
// failed, so that an error of the cluster layers names the one at fault.
func (e *sectionError[T]) clusterConfigMap() string { return e.section.ClusterConfigMap }

// parseSafely runs a section's parser, turning a panic into an error.
func parseSafely[T any](s *Section[T], data map[string]string, cfg T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the parser panicked: %s", text.Cut(fmt.Sprint(r), text.MaxMessage))
		}
	}()
	return s.Parse(data, cfg)
}

// parsedKeys is the keyspace of a Parsed kind: the stability its sections
// declare are its only markers (Tenancy lists what tenants may set), its
// sections' declared keys known.
type parsedKeys[T any] struct{ m *parsedModel[T] }

func (k parsedKeys[T]) Markers(key string) validation.Marker {
	segs, ok := merge.Segments(key)
	if !ok || len(segs) != 2 || k.m.sections[segs[0]] == nil {
		return 0
	}
	s := k.m.sections[segs[0]]
	switch {
	case slices.Contains(s.Alpha, segs[1]):
		return validation.Alpha
	case slices.Contains(s.Beta, segs[1]):
		return validation.Beta
	}
	return 0
}

func (parsedKeys[T]) Under(string, validation.Marker) (string, bool) { return "", false }

func (k parsedKeys[T]) members() []string {
	var out []string
	for _, s := range k.m.p.Sections {
		for _, key := range s.Keys {
			out = append(out, merge.Pointer(s.Name, key))
		}
	}
	return out
}

func (k parsedKeys[T]) known(key string) bool {
	segs, ok := merge.Segments(key)
	if !ok || len(segs) != 2 {
		return false
	}
	s := k.m.sections[segs[0]]
	return s != nil && (len(s.Keys) == 0 || slices.Contains(s.Keys, segs[1]) || segs[1] == "*")
}
