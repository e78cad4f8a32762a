package namespaced

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/validation"
)

// Stability levels of tenancy.Policy.StabilityKey.
const (
	stabilityStable = "stable"
	stabilityBeta   = "beta"
	stabilityAlpha  = "alpha"
)

// tenantPolicy is the merge policy of namespace layers (tenant true) and of
// selector layers (tenant false: operator-owned, so only policy and
// cluster-only keys are refused). It is immutable.
//
// A key is refused for what it names and for what lies under it: a
// ConfigMap key whose value is an object or a map replaces everything
// under it, so an overridable key that holds a path, a cluster-only or a
// locked field, or a field of a stability the cluster does not allow, is
// refused as a whole, and the refusal names that field.
type tenantPolicy struct {
	tenant      bool
	keys        keyspace
	policy      []string // the gate, lock and stability keys
	locked      []string
	allow       []string
	clusterOnly []string
	bounds      map[string][]bound    // by key, tenants only
	refLiterals bool                  // refuse values of a reference's shape, tenants only
	stability   validation.Marker     // the markers tenants may set: 0, Beta, or Alpha|Beta
	members     map[string]*admission // each top-level member's, worked out once
}

// admission is what a policy says of one key: its refusal, whatever its
// value, and the bounds its value must keep, its own and those of fields
// under it (its value replaces them: a bound on /tuning/workers holds
// when a tenant sets tuning whole).
type admission struct {
	ref    merge.Refusal
	bounds []bound
	under  []boundUnder
}

// boundUnder is the bounds of a field under a key: its pointer, and its
// segments below the key ("*" matching any).
type boundUnder struct {
	key    string
	rest   []string
	bounds []bound
}

// bound is a tenancy.Bound with its value in effect.
type bound struct {
	atMost bool
	value  string // JSON
	from   string // "cluster key max-timeout", "a constant"
}

// withMembers returns p with the refusals of the document's top-level
// members worked out: every ConfigMap key is one of them.
func (p tenantPolicy) withMembers() *tenantPolicy {
	p.members = map[string]*admission{}
	for _, key := range p.keys.members() {
		p.members[key] = p.admission(key)
	}
	return &p
}

// admission works out what p says of key.
func (p *tenantPolicy) admission(key string) *admission {
	a := &admission{ref: p.admit(key), bounds: p.bounds[key]}
	for _, k := range slices.Sorted(maps.Keys(p.bounds)) {
		if merge.Under(k, key) {
			segs, _ := merge.Segments(k)
			depth, _ := merge.Segments(key)
			a.under = append(a.under, boundUnder{key: k, rest: segs[len(depth):], bounds: p.bounds[k]})
		}
	}
	return a
}

// Admit implements merge.Policy.
func (p *tenantPolicy) Admit(key, value string) merge.Refusal {
	a := p.members[key]
	if a == nil {
		a = p.admission(key)
	}
	if a.ref.Refused() && !(a.ref.Field == "" && (a.ref.Reason == tenancy.ReasonAlpha || a.ref.Reason == tenancy.ReasonBeta) && p.turnsOff(value)) {
		return a.ref // a feature the cluster does not allow may still be turned off (TEP-0085)
	}
	if p.refLiterals && merge.LooksLikeRef(value) {
		return merge.Refusal{Reason: tenancy.ReasonRefLiteral}
	}
	if ref := checkBounds(a.bounds, value); ref.Refused() || len(a.under) == 0 {
		return ref
	}
	doc, err := decodeExact(value)
	if err != nil {
		return merge.Refusal{} // not JSON: decoding the layer says so
	}
	for _, u := range a.under {
		for _, v := range valuesAt(doc, u.rest) {
			j, _ := json.Marshal(v)
			if ref := checkBounds(u.bounds, string(j)); ref.Refused() {
				ref.Field = u.key
				return ref
			}
		}
	}
	return merge.Refusal{}
}

// turnsOff reports whether value turns a feature off: false, or for a
// Parsed kind, whose values are all strings, false as knative's and
// Tekton's parsers read a flag (strconv.ParseBool: "false", "0", "f").
func (p *tenantPolicy) turnsOff(value string) bool {
	_, typed := p.keys.(fieldKeys)
	on, err := strconv.ParseBool(unquote(value))
	return value == "false" || !typed && err == nil && !on
}

// valuesAt returns the values at the segments rest below doc, "*"
// matching every member or element; null, a removal, is none.
func valuesAt(doc any, rest []string) []any {
	if doc == nil {
		return nil
	}
	if len(rest) == 0 {
		return []any{doc}
	}
	var out []any
	switch d := doc.(type) {
	case map[string]any:
		if rest[0] == "*" {
			for _, k := range slices.Sorted(maps.Keys(d)) {
				out = append(out, valuesAt(d[k], rest[1:])...)
			}
		} else if v, ok := d[rest[0]]; ok {
			out = valuesAt(v, rest[1:])
		}
	case []any:
		for i, v := range d {
			if rest[0] == "*" || rest[0] == strconv.Itoa(i) {
				out = append(out, valuesAt(v, rest[1:])...)
			}
		}
	}
	return out
}

// decodeExact decodes v, a JSON value as a layer's conversion or a
// bound's makes one, its numbers kept as written.
func decodeExact(v string) (x any, err error) {
	d := json.NewDecoder(strings.NewReader(v))
	d.UseNumber()
	err = d.Decode(&x)
	return x, err
}

// checkBounds refuses value when it lies beyond a bound.
func checkBounds(bounds []bound, value string) merge.Refusal {
	for _, b := range bounds {
		c, err := compareValues(value, b.value)
		reason, limit := tenancy.ReasonAboveBound, "at most"
		if !b.atMost {
			reason, limit = tenancy.ReasonBelowBound, "at least"
		}
		detail := fmt.Sprintf("%s %s, %s", limit, unquote(b.value), b.from)
		switch {
		case err != nil:
			return merge.Refusal{Reason: reason, Detail: err.Error() + "; the bound is " + detail}
		case b.atMost && c > 0, !b.atMost && c < 0:
			return merge.Refusal{Reason: reason, Detail: unquote(value) + " is not " + detail}
		}
	}
	return merge.Refusal{}
}

// compareValues compares two JSON values as numbers, or as durations,
// exactly: an integer one past a bound above 2^53 is past it.
func compareValues(a, b string) (int, error) {
	x, xd, err := numberOrDuration(a)
	if err != nil {
		return 0, err
	}
	y, yd, err := numberOrDuration(b)
	if err != nil {
		return 0, err
	}
	if xd != yd {
		return 0, fmt.Errorf("%s and %s are not both numbers or both durations", unquote(a), unquote(b))
	}
	return x.Cmp(y), nil
}

// numberOrDuration reads a JSON number, or a string holding a number or a
// duration, as an exact number (durations in seconds) and whether it is a
// duration.
func numberOrDuration(v string) (*big.Rat, bool, error) {
	x, err := decodeExact(v)
	if err != nil {
		return nil, false, fmt.Errorf("%s is not a value", v)
	}
	var s string
	switch x := x.(type) {
	case json.Number:
		s = string(x)
	case string:
		s = strings.TrimSpace(x)
	}
	// A number float64 holds (1e999 is none), read exactly when short
	// and written without an exponent: big.Rat spends seconds on
	// 1e-999999, and the square of the digits on a long one.
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		if len(s) <= 64 && !strings.ContainsAny(s, "eEpPxX/_") {
			if r, ok := new(big.Rat).SetString(s); ok {
				return r, false, nil
			}
		}
		return new(big.Rat).SetFloat64(f), false, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return big.NewRat(int64(d), int64(time.Second)), true, nil
	}
	return nil, false, fmt.Errorf("%s is neither a number nor a duration", text.Quote(unquote(v)))
}

// unquote is a JSON string's content, or the JSON as it is.
func unquote(v string) string {
	var s string
	if json.Unmarshal([]byte(v), &s) == nil {
		return s
	}
	return v
}

// admit is Admit worked out.
func (p *tenantPolicy) admit(key string) merge.Refusal {
	if ref, ok := refuseListed(p.policy, key, tenancy.ReasonPolicyKey); ok {
		return ref
	}
	markers := p.keys.Markers(key)
	if ref, ok := p.refuseMarked(markers, key, validation.ClusterOnly, tenancy.ReasonClusterOnly); ok {
		return ref
	}
	if ref, ok := refuseListed(p.clusterOnly, key, tenancy.ReasonClusterOnly); ok {
		return ref
	}
	if !p.tenant {
		return merge.Refusal{}
	}
	if ref, ok := p.refuseMarked(markers, key, validation.Path, tenancy.ReasonPath); ok {
		return ref
	}
	if ref, ok := refuseListed(p.locked, key, tenancy.ReasonLocked); ok {
		return ref
	}
	if markers&validation.Overridable == 0 && !slices.ContainsFunc(p.allow, func(pat string) bool { return merge.Covers(pat, key) }) {
		return merge.Refusal{Reason: tenancy.ReasonNotOverridable}
	}
	if p.stability&validation.Alpha == 0 {
		if ref, ok := p.refuseMarked(markers, key, validation.Alpha, tenancy.ReasonAlpha); ok {
			return ref
		}
	}
	if p.stability&validation.Beta == 0 {
		if ref, ok := p.refuseMarked(markers, key, validation.Beta, tenancy.ReasonBeta); ok {
			return ref
		}
	}
	return merge.Refusal{}
}

// refuseMarked refuses key for reason when key, an ancestor of it (in
// markers) or a field under it carries marker m.
func (p *tenantPolicy) refuseMarked(markers validation.Marker, key string, m validation.Marker, reason string) (merge.Refusal, bool) {
	if markers&m != 0 {
		return merge.Refusal{Reason: reason}, true
	}
	if under, ok := p.keys.Under(key, m); ok {
		return merge.Refusal{Reason: reason, Field: under}, true
	}
	return merge.Refusal{}, false
}

// refuseListed refuses key for reason when one of patterns covers it or
// names something under it.
func refuseListed(patterns []string, key, reason string) (merge.Refusal, bool) {
	for _, k := range patterns {
		if merge.Covers(k, key) {
			return merge.Refusal{Reason: reason}, true
		}
	}
	for _, k := range patterns {
		if merge.Under(k, key) {
			return merge.Refusal{Reason: reason, Field: k}, true
		}
	}
	return merge.Refusal{}, false
}

// tenantKeys is what tenants may set under cl, keys named by display.
func tenantKeys[T any](cl *clusterState[T], display func(string) string) *tenancy.Keys {
	p := cl.policy.tenant
	out := &tenancy.Keys{Open: cl.policy.open, Keys: make(map[string]merge.Refusal, len(p.members))}
	for key, a := range p.members {
		ref := a.ref
		if ref.Field != "" {
			ref.Field = display(ref.Field)
		}
		out.Keys[display(key)] = ref
	}
	return out
}

// clusterPolicy is what the cluster layer says about tenants.
type clusterPolicy struct {
	open     bool
	tenant   *tenantPolicy
	selector *tenantPolicy
}

// modelKeys is what the tenancy needs of a model.
type modelKeys interface {
	pointer(k string) (string, error)
	keys() keyspace
}

// checkPolicy checks the keys t names against the configuration's: each
// must be a key of it, and a bound's constants numbers or durations.
func checkPolicy(t *tenancy.Policy, m modelKeys) error {
	var errs []string
	try := func(what, k string) {
		if k == "" {
			return
		}
		if _, err := m.pointer(k); err != nil {
			errs = append(errs, what+": "+err.Error())
		}
	}
	try("GateKey", t.GateKey)
	try("LockKey", t.LockKey)
	try("StabilityKey", t.StabilityKey)
	switch strings.ToLower(t.StabilityDefault) {
	case "", stabilityStable, stabilityBeta, stabilityAlpha:
		if t.StabilityDefault != "" && t.StabilityKey == "" {
			errs = append(errs, "StabilityDefault without a StabilityKey: there is no level to default")
		}
	default:
		errs = append(errs, fmt.Sprintf("StabilityDefault: %q is none of %s, %s, %s", t.StabilityDefault, stabilityStable, stabilityBeta, stabilityAlpha))
	}
	for _, k := range t.Overridable {
		try("Overridable", k)
	}
	for _, k := range t.ClusterOnly {
		try("ClusterOnly", k)
	}
	for i, b := range t.Bounds {
		what := fmt.Sprintf("Bounds[%d]", i)
		try(what+".Key", b.Key)
		try(what+".AtMostKey", b.AtMostKey)
		try(what+".AtLeastKey", b.AtLeastKey)
		if b.AtMostKey == "" && b.AtLeastKey == "" && b.AtMost == "" && b.AtLeast == "" {
			errs = append(errs, what+": no bound")
		}
		for _, lit := range []string{b.AtMost, b.AtLeast} {
			if lit == "" {
				continue
			}
			j, _ := json.Marshal(lit)
			if _, _, err := numberOrDuration(string(j)); err != nil {
				errs = append(errs, what+": "+err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// policyFrom reads t's gate, the lockdown list and the stability level
// from data, the cluster layers' raw values by pointer, and puts the
// bounds in effect. The error names the key.
func policyFrom(t *tenancy.Policy, data map[string]string, m modelKeys) (*clusterPolicy, error) {
	ptr := func(k string) string {
		p, _ := m.pointer(k) // checked by checkPolicy
		return p
	}
	base := tenantPolicy{keys: m.keys()}
	for _, k := range t.Overridable {
		base.allow = append(base.allow, ptr(k))
	}
	for _, k := range t.ClusterOnly {
		base.clusterOnly = append(base.clusterOnly, ptr(k))
	}
	for _, k := range []string{t.GateKey, t.LockKey, t.StabilityKey} {
		if k != "" {
			base.policy = append(base.policy, ptr(k))
		}
	}
	out := &clusterPolicy{}
	if t.GateKey != "" {
		v, ok := data[ptr(t.GateKey)]
		switch {
		case !ok || v == t.GateClosed:
		case v == t.GateOpen:
			out.open = true
		default:
			return nil, fmt.Errorf("key %q: %q is neither %q nor %q", t.GateKey, v, t.GateClosed, t.GateOpen)
		}
	}
	if t.LockKey != "" {
		for _, k := range strings.Split(data[ptr(t.LockKey)], ",") {
			if k = strings.TrimSpace(k); k == "" {
				continue
			}
			p, err := m.pointer(k)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", t.LockKey, err)
			}
			base.locked = append(base.locked, p)
		}
	}
	if t.StabilityKey != "" {
		v, ok := data[ptr(t.StabilityKey)]
		if !ok {
			v = t.StabilityDefault
		}
		switch strings.ToLower(v) { // as Tekton reads enable-api-fields
		case "", stabilityStable:
		case stabilityBeta:
			base.stability = validation.Beta
		case stabilityAlpha:
			base.stability = validation.Alpha | validation.Beta
		default:
			return nil, fmt.Errorf("key %q: %q is none of %s, %s, %s", t.StabilityKey, v, stabilityStable, stabilityBeta, stabilityAlpha)
		}
	}
	tenant := base
	tenant.tenant = true
	tenant.refLiterals = t.RefuseRefLiterals
	bounds, err := boundsFrom(t, data, ptr)
	if err != nil {
		return nil, err
	}
	tenant.bounds = bounds
	out.tenant, out.selector = tenant.withMembers(), base.withMembers()
	return out, nil
}

// boundsFrom puts t's bounds in effect: a cluster key's value where the
// cluster layers set it, the constant otherwise. A cluster key's value
// that is neither a number nor a duration makes the cluster invalid.
func boundsFrom(t *tenancy.Policy, data map[string]string, ptr func(string) string) (map[string][]bound, error) {
	out := map[string][]bound{}
	for _, b := range t.Bounds {
		for _, side := range []struct {
			atMost       bool
			key, literal string
		}{{true, b.AtMostKey, b.AtMost}, {false, b.AtLeastKey, b.AtLeast}} {
			var value, from string
			if v, ok := data[ptr(side.key)]; side.key != "" && ok {
				value, from = v, "cluster key "+side.key
			} else if side.literal != "" {
				value, from = side.literal, "the system's bound"
			} else {
				continue
			}
			j, _ := json.Marshal(value)
			if _, _, err := numberOrDuration(string(j)); err != nil {
				return nil, fmt.Errorf("key %q, the bound of %s: %w", side.key, b.Key, err)
			}
			out[ptr(b.Key)] = append(out[ptr(b.Key)], bound{atMost: side.atMost, value: string(j), from: from})
		}
	}
	return out, nil
}

// defaultSystemNamespaces are tenancy.DefaultSystemNamespaces, read once.
var defaultSystemNamespaces = tenancy.DefaultSystemNamespaces()

// system reports whether namespace ns never gets namespace layers under
// t, own being the component's namespace.
func system(t *tenancy.Policy, ns, own string) bool {
	list := t.SystemNamespaces
	if list == nil {
		list = defaultSystemNamespaces
	}
	return ns == own || slices.Contains(list, ns)
}

// keyPointer reads k as a JSON pointer when it starts with "/", and as one
// ConfigMap key otherwise.
func keyPointer(k string) string {
	if strings.HasPrefix(k, "/") {
		return k
	}
	return merge.Pointer(k)
}
