package namespaced

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/validation"
)

// Tenancy is the operator's control over what namespace layers may set.
// The gate, the lockdown list and the stability level are keys of the
// cluster layer, so the operator changes them live; no namespace or
// selector layer can ever set them.
type Tenancy struct {
	// GateKey is the cluster key that opens namespace overrides. It is
	// open only when it holds GateOpen; absent, it holds GateClosed. Any
	// other value makes the cluster layer invalid. With no GateKey the
	// gate is always closed.
	GateKey, GateOpen, GateClosed string
	// LockKey is the cluster key that lists, comma-separated, more keys
	// tenants may not set (ConfigMap keys, or JSON pointers for nested
	// fields). A listed key that is no field makes the cluster layer
	// invalid, so a typo never leaves a key open.
	LockKey string
	// StabilityKey is the cluster key that says which fields marked
	// alpha or beta tenants may set: "stable" (the default: neither),
	// "beta", or "alpha" (both).
	StabilityKey string
	// Overridable adds key patterns to the fields marked
	// validation.Overridable: together they are the allowlist.
	Overridable []string
	// SystemNamespaces never get namespace layers. Nil means
	// kube-system, kube-public and kube-node-lease; the component's own
	// namespace is always excluded too.
	SystemNamespaces []string
}

// DefaultSystemNamespaces are the namespaces whose ConfigMaps are never read
// as tenant layers, besides the component's own.
var DefaultSystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// Reasons a tenant policy gives for a dropped key. They are few and fixed,
// so that they serve as metric labels.
const (
	ReasonPolicyKey      = "tenant policy key: only the cluster layer sets it"
	ReasonClusterOnly    = "cluster-only key"
	ReasonPath           = "path-valued key: tenants may not set paths"
	ReasonLocked         = "locked by the operator"
	ReasonNotOverridable = "not an overridable key"
	ReasonAlpha          = "alpha key: the cluster does not allow alpha keys for namespaces"
	ReasonBeta           = "beta key: the cluster does not allow beta keys for namespaces"
)

// Stability levels of StabilityKey.
const (
	StabilityStable = "stable"
	StabilityBeta   = "beta"
	StabilityAlpha  = "alpha"
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
	tenant    bool
	fields    *validation.Fields
	policy    []string // the gate, lock and stability keys
	locked    []string
	allow     []string
	stability validation.Marker        // the markers tenants may set: 0, Beta, or Alpha|Beta
	members   map[string]merge.Refusal // the refusal of each top-level member, worked out once
}

// withMembers returns p with the refusals of the document's top-level
// members worked out: every ConfigMap key is one of them.
func (p tenantPolicy) withMembers() *tenantPolicy {
	p.members = map[string]merge.Refusal{}
	typed.For(p.fields.Type()).Walk(func(key string, _ reflect.StructField) bool {
		p.members[key] = p.admit(key)
		return false
	})
	return &p
}

// Admit implements merge.Policy.
func (p *tenantPolicy) Admit(_ *merge.Layer, key string) merge.Refusal {
	if ref, ok := p.members[key]; ok {
		return ref
	}
	return p.admit(key)
}

// admit is Admit worked out.
func (p *tenantPolicy) admit(key string) merge.Refusal {
	if ref, ok := refuseListed(p.policy, key, ReasonPolicyKey); ok {
		return ref
	}
	markers := p.fields.Markers(key)
	if ref, ok := p.refuseMarked(markers, key, validation.ClusterOnly, ReasonClusterOnly); ok {
		return ref
	}
	if !p.tenant {
		return merge.Refusal{}
	}
	if ref, ok := p.refuseMarked(markers, key, validation.Path, ReasonPath); ok {
		return ref
	}
	if ref, ok := refuseListed(p.locked, key, ReasonLocked); ok {
		return ref
	}
	if markers&validation.Overridable == 0 && !slices.ContainsFunc(p.allow, func(pat string) bool { return merge.Covers(pat, key) }) {
		return merge.Refusal{Reason: ReasonNotOverridable}
	}
	if p.stability&validation.Alpha == 0 {
		if ref, ok := p.refuseMarked(markers, key, validation.Alpha, ReasonAlpha); ok {
			return ref
		}
	}
	if p.stability&validation.Beta == 0 {
		if ref, ok := p.refuseMarked(markers, key, validation.Beta, ReasonBeta); ok {
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
	if under, ok := p.fields.Under(key, m); ok {
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

// clusterPolicy is what the cluster layer says about tenants.
type clusterPolicy struct {
	open     bool
	tenant   *tenantPolicy
	selector *tenantPolicy
}

// policyFrom reads the gate, the lockdown list and the stability level from
// the cluster ConfigMap's data (nil when there is none). The error names
// the key.
func (t *Tenancy) policyFrom(data map[string]string, fields *validation.Fields) (*clusterPolicy, error) {
	base := tenantPolicy{fields: fields, allow: t.keys(t.Overridable)}
	for _, k := range []string{t.GateKey, t.LockKey, t.StabilityKey} {
		if k != "" {
			base.policy = append(base.policy, keyPointer(k))
		}
	}
	out := &clusterPolicy{}
	if t.GateKey != "" {
		v, ok := data[t.GateKey]
		switch {
		case !ok || v == t.GateClosed:
		case v == t.GateOpen:
			out.open = true
		default:
			return nil, fmt.Errorf("key %q: %q is neither %q nor %q", t.GateKey, v, t.GateClosed, t.GateOpen)
		}
	}
	if t.LockKey != "" {
		for _, k := range strings.Split(data[t.LockKey], ",") {
			if k = strings.TrimSpace(k); k == "" {
				continue
			}
			p := keyPointer(k)
			if _, ok := typed.For(fields.Type()).At(strings.ReplaceAll(p, "*", "x")); !ok {
				return nil, fmt.Errorf("key %q: %q is no configuration key", t.LockKey, k)
			}
			base.locked = append(base.locked, p)
		}
	}
	if t.StabilityKey != "" {
		switch v := data[t.StabilityKey]; v {
		case "", StabilityStable:
		case StabilityBeta:
			base.stability = validation.Beta
		case StabilityAlpha:
			base.stability = validation.Alpha | validation.Beta
		default:
			return nil, fmt.Errorf("key %q: %q is none of %s, %s, %s", t.StabilityKey, v, StabilityStable, StabilityBeta, StabilityAlpha)
		}
	}
	tenant := base
	tenant.tenant = true
	out.tenant, out.selector = tenant.withMembers(), base.withMembers()
	return out, nil
}

// system reports whether namespace ns never gets namespace layers.
func (t *Tenancy) system(ns, own string) bool {
	if ns == own {
		return true
	}
	if t.SystemNamespaces == nil {
		return slices.Contains(DefaultSystemNamespaces, ns)
	}
	return slices.Contains(t.SystemNamespaces, ns)
}

// keys turns ConfigMap keys or JSON pointers into pointers.
func (t *Tenancy) keys(in []string) []string {
	out := make([]string, len(in))
	for i, k := range in {
		out[i] = keyPointer(k)
	}
	return out
}

// keyPointer reads k as a JSON pointer when it starts with "/", and as one
// ConfigMap key otherwise.
func keyPointer(k string) string {
	if strings.HasPrefix(k, "/") {
		return k
	}
	return merge.Pointer(k)
}
