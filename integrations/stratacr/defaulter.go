package stratacr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/merge"
)

// Defaulter returns a mutating admission webhook for objects of type O
// (a pointer, *batchv1.Job) that gives each object the configuration of
// its namespace through apply; register it on the manager's webhook
// server at the path the webhook configuration names. It waits, within
// the request's time, for the resolver to be ready. A tenant's invalid
// ConfigMap never makes it refuse an object: that layer is ignored and
// the cluster configuration applies; only failing to read the
// configuration at all does.
//
// apply must default as defaulting does: fill each field the object
// leaves unset (nil, empty or zero), each on its own, with a value that
// depends on the snapshot's configuration (its Object) alone, not on the
// object's other fields nor on the request. Then the webhook does no
// per-object work beyond a scan of the request: the fields apply sets are
// found once per configuration, by applying it to an empty object, and
// shared by the namespaces whose configuration is the same; each request
// is answered with a JSON patch that adds those the object lacks, without
// decoding the object, encoding it again and diffing the two, as
// controller-runtime's defaulting path does.
//
// That path is still taken where the patch could differ from what apply
// would do. For a configuration: apply sets nothing on an empty object
// (it may set fields of list elements), sets a value that is not a
// number, string or boolean, changes a field already set (tried with
// each value one above and one below, at 1 and ten times over, a string
// with a letter added, a boolean flipped: a floor or a ceiling shows, a
// sentinel string such as "default" replaced does not), or does not
// fill a field on its own (it fills a whole struct or map only when it
// is absent or empty, tried with a member of the map's own beside);
// these are checked once per configuration. For a request: a
// field it sets is present with a zero value or under a parent that is
// not an object, or a name on the way is escaped or given twice. What the
// checks cannot see is an apply whose values depend on other fields of
// the object: such a function belongs on controller-runtime's path
// (admission.WithDefaulter) with a Resolver's ForNamespace.
func Defaulter[T any, O client.Object](r *Resolver[T], apply func(ctx context.Context, obj O, snap *namespaced.Snapshot[T]) error) *webhook.Admission {
	d := &defaulter[T, O]{r: r, apply: apply}
	d.typed = admission.WithDefaulter[O](r.mgr.GetScheme(), typedDefaulter[T, O]{d})
	return &webhook.Admission{Handler: d}
}

type defaulter[T any, O client.Object] struct {
	r     *Resolver[T]
	apply func(ctx context.Context, obj O, snap *namespaced.Snapshot[T]) error
	// typed is controller-runtime's defaulting path.
	typed *webhook.Admission
	// plans holds the plans made, by the content hash of the
	// configuration they were made from (Snapshot.Hash); planCount
	// counts them.
	plans     sync.Map
	planCount atomic.Int64
}

func (d *defaulter[T, O]) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation == admissionv1.Delete || req.Namespace == "" {
		return d.typed.Handle(ctx, req)
	}
	snap, err := d.r.snapshot(ctx, req.Namespace)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if patch, ok := d.plan(snap).patch(req.Object.Raw); ok {
		resp := admission.Allowed("")
		if patch != nil {
			resp.Patch, resp.PatchType = patch, new(admissionv1.PatchTypeJSONPatch)
		}
		return resp
	}
	return d.typed.Handle(ctx, req)
}

// maxPlans bounds the plans a defaulter keeps: past it, they are all
// dropped and made again as requests need them.
const maxPlans = 4096

// maxPlanValues bounds the values a plan sets. Its checks apply the
// defaulting function to the whole defaulted object about twice per value
// (fillsEachAlone), which grows with the square of the values: a tenant's
// hundreds of default labels would cost seconds of the webhook's time. A
// configuration that sets more gets no plan, and its requests take
// controller-runtime's path, whose cost per request grows with them only
// once.
const maxPlanValues = 64

// plan returns the plan of snap's configuration, made on the first
// request of a snapshot that has it, once however many requests ask for
// it at the same time: namespaces with the same effective configuration
// share one.
func (d *defaulter[T, O]) plan(snap *namespaced.Snapshot[T]) *plan {
	key := snap.Hash()
	v, ok := d.plans.Load(key)
	if !ok {
		var loaded bool
		v, loaded = d.plans.LoadOrStore(key, new(planning))
		if !loaded && d.planCount.Add(1) > maxPlans {
			d.plans.Clear()
			d.planCount.Store(0)
		}
	}
	p := v.(*planning)
	p.once.Do(func() { p.plan = planFor(func(obj O) error { return d.apply(context.Background(), obj, snap) }) })
	return p.plan
}

// planning is a plan made once.
type planning struct {
	once sync.Once
	plan *plan
}

// typedDefaulter is the defaulter controller-runtime's path calls.
type typedDefaulter[T any, O client.Object] struct{ d *defaulter[T, O] }

func (t typedDefaulter[T, O]) Default(ctx context.Context, obj O) error {
	snap, err := t.d.r.snapshotOf(ctx, obj)
	if err != nil {
		return err
	}
	return t.d.apply(ctx, obj, snap)
}

// plan is what one snapshot's defaulting sets, as a tree of the members
// it sets, from the root object down: the leaves are the values. A nil
// plan (typed) sends every request down controller-runtime's path.
type plan struct {
	root *member
}

// member is an object member a plan sets, or one of its ancestors.
type member struct {
	name    string
	pointer string    // its JSON pointer, escaped
	path    []byte    // the pointer as a JSON string
	kids    []*member // by name; none for a value
	value   []byte    // the value's JSON: a leaf's, or the whole object's
}

// planFor applies apply to an empty object of type O and returns the
// members it set, or nil when a patch could differ from what apply does.
func planFor[O client.Object](apply func(obj O) error) *plan {
	before, err := json.Marshal(newObject[O]())
	if err != nil {
		return nil
	}
	obj := newObject[O]()
	if err := apply(obj); err != nil {
		return nil // the typed path returns the error per request
	}
	after, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	var b, a map[string]any
	if decode(before, &b) != nil || decode(after, &a) != nil {
		return nil
	}
	root := &member{}
	if !diff(root, b, a) {
		return nil
	}
	// An apply that sets nothing on an empty object may still set fields
	// of list elements, or fields that depend on others: it gets no plan.
	if len(root.kids) == 0 || root.values() > maxPlanValues || !keepsWhatIsSet(apply, a, root) || !fillsEachAlone(apply, a, root) {
		return nil
	}
	render(root)
	return &plan{root: root}
}

// newObject returns a new, empty O.
func newObject[O client.Object]() O {
	var o O
	return reflect.New(reflect.TypeOf(o).Elem()).Interface().(O)
}

func decode(data []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(into)
}

// diff adds to m the members of after (the empty object defaulted) that
// before (the empty object) lacks or holds zero; it reports false for a
// change a patch that only adds values cannot make.
func diff(m *member, before, after map[string]any) bool {
	for name := range before {
		if _, ok := after[name]; !ok {
			return false // apply removed a member
		}
	}
	for _, name := range slices.Sorted(maps.Keys(after)) {
		av, bv := after[name], before[name]
		if reflect.DeepEqual(av, bv) {
			continue
		}
		if empty(av) && empty(bv) {
			return false // an empty object or list made, or one taken away: a pointer set, a nil slice made empty
		}
		kid := &member{name: name, pointer: merge.Child(m.pointer, name)}
		if ao, ok := av.(map[string]any); ok && len(ao) > 0 {
			bo, _ := bv.(map[string]any)
			if bo == nil && !empty(bv) {
				return false
			}
			if !diff(kid, bo, ao) {
				return false
			}
			if len(kid.kids) == 0 {
				return false // an object made that holds only nulls: its presence is the change
			}
		} else {
			if !zero(bv) || !scalar(av) {
				return false
			}
			kid.value, _ = json.Marshal(av)
		}
		m.kids = append(m.kids, kid)
	}
	return true
}

// values returns the number of values under m.
func (m *member) values() int {
	if m.kids == nil {
		return 1
	}
	n := 0
	for _, kid := range m.kids {
		n += kid.values()
	}
	return n
}

// empty reports whether v, decoded, is absent, null, {} or [].
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// zero reports whether v, decoded, is absent, null or empty: what
// defaulting fills.
func zero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// scalar reports whether v is a value the plan can check by presence
// and change to check apply: a string, a number or true.
func scalar(v any) bool {
	switch v.(type) {
	case string, json.Number, bool:
		return true
	}
	return false
}

// keepsWhatIsSet applies apply to the defaulted object with every value
// it set changed, each way changeLeaves changes them, and reports whether
// it leaves them as they are: an apply that overrides a field already
// set (raises it to a floor, lowers it to a ceiling, or reads what it
// fills to decide) cannot be answered by a patch that adds only what is
// absent.
func keepsWhatIsSet[O client.Object](apply func(obj O) error, defaulted map[string]any, root *member) bool {
	for way := range changeWays {
		if changed := changeLeaves(defaulted, root, way); !appliesAs(apply, changed, changed) {
			return false
		}
	}
	return true
}

// appliesAs reports whether apply, given the object in, makes it the
// object want, each read as an O (a member O has not is dropped).
func appliesAs[O client.Object](apply func(obj O) error, in, want map[string]any) bool {
	typed := func(doc map[string]any) (O, bool) {
		obj := newObject[O]()
		data, err := json.Marshal(doc)
		return obj, err == nil && json.Unmarshal(data, obj) == nil
	}
	w, ok := typed(want)
	if !ok {
		return false
	}
	wantJSON, err := json.Marshal(w)
	if err != nil {
		return false
	}
	obj, ok := typed(in)
	if !ok || apply(obj) != nil {
		return false
	}
	got, err := json.Marshal(obj)
	return err == nil && bytes.Equal(got, wantJSON)
}

// changeWays is how many ways changeLeaves changes a value: a little up
// and down, to 1 and far up, so that a floor or a ceiling near the value
// or far from it shows.
const changeWays = 4

// changeLeaves returns a copy of obj with each value of m's leaves
// changed, the way-th way: an integer one above, one below (two above
// where that is zero, which may read as absent), 1 (2 where it is 1), or
// ten times and one above; a float likewise; a string with a letter
// after or before it; a boolean flipped.
func changeLeaves(obj map[string]any, m *member, way int) map[string]any {
	out := make(map[string]any, len(obj))
	maps.Copy(out, obj)
	for _, kid := range m.kids {
		if kid.kids != nil {
			o, _ := out[kid.name].(map[string]any)
			out[kid.name] = changeLeaves(o, kid, way)
			continue
		}
		switch v := out[kid.name].(type) {
		case string:
			out[kid.name] = []string{v + "x", "x" + v, v + "y", "y" + v}[way]
		case bool:
			out[kid.name] = !v
		case json.Number:
			if n, err := v.Int64(); err == nil {
				c := []int64{n + 1, n - 1, 1, n*10 + 1}[way]
				if c == 0 || c == n || way == 3 && c/10 != n {
					c = n + 2 // zero may read as absent; n*10 may overflow
				}
				out[kid.name] = json.Number(strconv.FormatInt(c, 10))
			} else if f, err := v.Float64(); err == nil {
				out[kid.name] = json.Number(strconv.FormatFloat([]float64{f*2 + 1, f/2 - 1, 1, f*10 + 1}[way], 'g', -1, 64))
			}
		}
	}
	return out
}

// fillsEachAlone reports whether apply, given the defaulted object with
// one value it set taken out, puts back that value and changes nothing
// else, for each value, and again with a member of the object's own
// beside it (a copy of the value under another name, which a map keeps
// and a struct drops): an apply that fills a whole object or map only
// when it is absent or empty (a securityContext, labels when len is 0)
// fills nothing when part of it is present, and cannot be answered value
// by value.
func fillsEachAlone[O client.Object](apply func(obj O) error, defaulted map[string]any, root *member) bool {
	var paths [][]string
	var walk func(m *member, path []string)
	walk = func(m *member, path []string) {
		for _, kid := range m.kids {
			p := append(slices.Clip(path), kid.name)
			if kid.kids == nil {
				paths = append(paths, p)
			}
			walk(kid, p)
		}
	}
	walk(root, nil)
	for _, p := range paths {
		for _, doc := range []map[string]any{defaulted, withForeign(defaulted, p)} {
			if !appliesAs(apply, without(doc, p), doc) {
				return false
			}
		}
	}
	return true
}

// withForeign returns obj with, beside the member at path, a copy of its
// value under a name apply does not set.
func withForeign(obj map[string]any, path []string) map[string]any {
	out := make(map[string]any, len(obj)+1)
	maps.Copy(out, obj)
	if len(path) == 1 {
		out[path[0]+".strata-probe"] = obj[path[0]]
	} else if o, ok := out[path[0]].(map[string]any); ok {
		out[path[0]] = withForeign(o, path[1:])
	}
	return out
}

// without returns obj with the member at path taken out, copying the
// objects on the way.
func without(obj map[string]any, path []string) map[string]any {
	out := make(map[string]any, len(obj))
	maps.Copy(out, obj)
	if len(path) == 1 {
		delete(out, path[0])
	} else if o, ok := out[path[0]].(map[string]any); ok {
		out[path[0]] = without(o, path[1:])
	}
	return out
}

// render sets the value of each object member of the tree: the object of
// its kids' values, added whole when the request lacks it.
func render(m *member) {
	m.path, _ = json.Marshal(m.pointer)
	if m.kids == nil {
		return
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kid := range m.kids {
		render(kid)
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(kid.name)
		b.Write(name)
		b.WriteByte(':')
		b.Write(kid.value)
	}
	b.WriteByte('}')
	m.value = b.Bytes()
}

// patch returns the JSON patch that adds to raw, an object's JSON, the
// members of the plan it lacks (nil: none), or false when the typed path
// must answer: no plan, raw not an object, or a member present with a
// zero value or under a parent that is not an object.
func (p *plan) patch(raw []byte) ([]byte, bool) {
	if p == nil || !json.Valid(raw) {
		return nil, false
	}
	s := scan{doc: raw, seen: make(map[*member]bool, 8)}
	i := s.space(0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	if _, ok := s.object(i, p.root); !ok {
		return nil, false
	}
	var out []byte
	out = s.adds(out, p.root)
	if out == nil {
		return nil, true
	}
	return append(out, ']'), true
}

// scan finds which members of a plan an object's JSON, already valid,
// holds.
type scan struct {
	doc  []byte
	seen map[*member]bool
}

// object reads the object at i with the members of m, and returns where
// it ends; false when a member of m is present empty, given twice, or
// not an object where m has members under it, or when a name is escaped.
func (s *scan) object(i int, m *member) (int, bool) {
	i = s.space(i + 1)
	if s.doc[i] == '}' {
		return i + 1, true
	}
	for {
		end := s.skip(i) // the name
		name := s.doc[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			return 0, false // an escaped name: the typed path reads it
		}
		i = s.space(s.space(end) + 1) // past the colon
		kid := m.kid(name)
		switch {
		case kid == nil:
			i = s.skip(i)
		case s.seen[kid]:
			return 0, false // given twice: the typed path reads it
		case kid.kids == nil:
			end := s.skip(i)
			if zeroJSON(s.doc[i:end]) {
				return 0, false
			}
			s.seen[kid], i = true, end
		case s.doc[i] == '{':
			s.seen[kid] = true
			var ok bool
			if i, ok = s.object(i, kid); !ok {
				return 0, false
			}
		default:
			return 0, false
		}
		i = s.space(i)
		if s.doc[i] == '}' {
			return i + 1, true
		}
		i = s.space(i + 1) // past the comma
	}
}

// kid returns the member of m named name, escaped as in the JSON.
func (m *member) kid(name []byte) *member {
	for _, k := range m.kids {
		if k.name == string(name) {
			return k
		}
	}
	return nil
}

// adds appends to out the patch operations that add what the object
// lacks under m, which it holds.
func (s *scan) adds(out []byte, m *member) []byte {
	for _, kid := range m.kids {
		switch {
		case !s.seen[kid]:
			if out == nil {
				out = append(out, '[')
			} else {
				out = append(out, ',')
			}
			out = append(out, `{"op":"add","path":`...)
			out = append(out, kid.path...)
			out = append(out, `,"value":`...)
			out = append(out, kid.value...)
			out = append(out, '}')
		case kid.kids != nil:
			out = s.adds(out, kid)
		}
	}
	return out
}

// space skips JSON whitespace from i.
func (s *scan) space(i int) int {
	for i < len(s.doc) && (s.doc[i] == ' ' || s.doc[i] == '\t' || s.doc[i] == '\n' || s.doc[i] == '\r') {
		i++
	}
	return i
}

// skip returns where the value at i ends, in valid JSON.
func (s *scan) skip(i int) int {
	switch s.doc[i] {
	case '"':
		for i++; s.doc[i] != '"'; i++ {
			if s.doc[i] == '\\' {
				i++
			}
		}
		return i + 1
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch s.doc[i] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			case '"':
				i = s.skip(i) - 1
			}
		}
	}
	for i < len(s.doc) && !strings.ContainsRune(",}] \t\n\r", rune(s.doc[i])) {
		i++
	}
	return i
}

// zeroJSON reports whether v, a JSON value, is null or empty: what a
// typed decode reads as unset, or may.
func zeroJSON(v []byte) bool {
	switch v[0] {
	case 'n', 'f', '"':
		return v[0] != '"' || len(v) == 2
	case '{', '[':
		return len(bytes.TrimSpace(v[1:len(v)-1])) == 0
	case 't':
		return false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return err != nil || f == 0
}

// snapshot returns the configuration of namespace ns once the resolver is
// ready.
func (r *Resolver[T]) snapshot(ctx context.Context, ns string) (*namespaced.Snapshot[T], error) {
	if err := r.WaitReady(ctx); err != nil {
		return nil, err
	}
	snap, err := r.ForNamespace(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("reading the configuration of namespace %s: %w", ns, err)
	}
	return snap, nil
}
