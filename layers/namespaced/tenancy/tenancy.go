// Package tenancy declares what the operator of a layers/namespaced
// resolver decides about tenants: the Policy that says what namespace
// layers may set (the gate, the lockdown list and the stability level,
// read live from the cluster layer; the allowlist, cluster-only keys,
// bounds and system namespaces, fixed by the program), the reasons a key
// is refused for, and Keys, what tenants may set under the cluster
// configuration in effect. The resolver applies the policy; this package
// is what an operator configures and a tenant reads of it.
package tenancy

import "github.com/stratacfg/strata/merge"

// Policy is the operator's control over what namespace layers may set; a
// resolver takes it in namespaced.Options.Tenancy. The gate, the lockdown
// list and the stability level are keys of the cluster layer, so the
// operator changes them live; no namespace or selector layer can ever set
// them.
type Policy struct {
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
	// alpha or beta (of a Parsed kind, the keys a namespaced.Section
	// lists as Alpha and Beta) tenants may set: "stable" (neither),
	// "beta", or "alpha" (both). A tenant may always set one to false,
	// turning its feature off.
	// StabilityDefault is the level when the cluster layers do not set
	// it; "stable" when empty.
	StabilityKey, StabilityDefault string
	// Overridable adds key patterns to the fields marked
	// validation.Overridable: together they are the allowlist. A
	// namespaced.Parsed kind's keys are SECTION/KEY.
	Overridable []string
	// ClusterOnly adds key patterns to the fields marked
	// validation.ClusterOnly: no namespace or selector layer sets them.
	ClusterOnly []string
	// Bounds limit the values tenants may set.
	Bounds []Bound
	// SystemNamespaces never get namespace layers. Nil means
	// kube-system, kube-public and kube-node-lease; the component's own
	// namespace is always excluded too.
	SystemNamespaces []string
	// RefuseRefLiterals refuses a tenant's value that holds anything of
	// a reference's shape ({"$ref": "secret NS/NAME#KEY"}, merge.Ref).
	// Without it such a value is a literal, never a reference (a tenant's
	// layer writes none), and is decoded as what it is.
	RefuseRefLiterals bool
}

// Bound limits what a tenant may set a key to: at most or at least the
// cluster layer's value of another key (an operator's maximum), or, when
// the cluster layer does not set that key or there is none, a constant (a
// system maximum). Values compare exactly as numbers, or as durations
// ("90s", "1h"); a tenant's value that is neither, or that lies beyond a bound,
// is refused, with the bound named, like any other refusal.
type Bound struct {
	// Key is the key bounded: a ConfigMap key, a JSON pointer, or for a
	// namespaced.Parsed kind SECTION/KEY. A bound on a field under a
	// ConfigMap key ("/tuning/workers") holds where a tenant sets that key
	// whole, the refusal naming the field.
	Key string
	// AtMostKey and AtLeastKey name cluster keys whose values bound it.
	AtMostKey, AtLeastKey string
	// AtMost and AtLeast are constant bounds, as a ConfigMap value
	// reads ("3600", "24h"); they apply where the keys above give none.
	AtMost, AtLeast string
}

// DefaultSystemNamespaces returns the namespaces whose ConfigMaps are
// never read as tenant layers when Policy.SystemNamespaces is nil,
// besides the component's own: kube-system, kube-public and
// kube-node-lease. A resolver's own list is its Policy's.
func DefaultSystemNamespaces() []string {
	return []string{"kube-system", "kube-public", "kube-node-lease"}
}

// Reasons a tenant policy gives for a dropped key (merge.Refusal.Reason,
// and the snapshot's rejected keys); not the reasons of the Events a
// resolver records. They are few and fixed, so that they serve as metric
// labels.
const (
	ReasonPolicyKey      = "tenant policy key: only the cluster layer sets it"
	ReasonClusterOnly    = "cluster-only key"
	ReasonPath           = "path-valued key: tenants may not set paths"
	ReasonLocked         = "locked by the operator"
	ReasonNotOverridable = "not an overridable key"
	ReasonAlpha          = "alpha key: the cluster does not allow alpha keys for namespaces"
	ReasonBeta           = "beta key: the cluster does not allow beta keys for namespaces"
	ReasonAboveBound     = "above the operator's bound"
	ReasonBelowBound     = "below the operator's bound"
	ReasonRefLiteral     = "a literal of a reference's shape: tenants may not write references"
)

// Keys is what tenants may set under the cluster configuration in
// effect, worked out by the resolver's policy itself from the
// configuration's declaration: for a Kind, its top-level members (the
// ConfigMap keys); for a namespaced.Parsed kind, the keys its sections
// declare. DryRun.TenantKeys returns it.
type Keys struct {
	// Open is the gate: whether namespace layers apply at all.
	Open bool
	// Keys maps every key, named as its ConfigMap holds it ("max-replicas",
	// or SECTION/KEY), to why a tenant may not set it: the zero Refusal
	// where a tenant may. A key a tenant may set can still be refused for
	// its value (a bound, a reference's shape).
	Keys map[string]merge.Refusal
}
