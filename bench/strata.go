package bench

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/stratacfg/strata/layers"
)

// Names of the workload's ConfigMaps.
const (
	SystemNamespace = "strata-bench-system"
	ClusterName     = "bench-defaults"
	OverridesName   = "bench-overrides"
	OverridesLabel  = "bench.strata.dev/overrides"
	TenantNamespace = "team-a"
)

// OverrideLabels are the labels a namespace ConfigMap must carry.
var OverrideLabels = map[string]string{OverridesLabel: "true"}

// ResolverOptions returns the options of a strata resolver for the
// workload: the gate, the allowlist (the fields tagged overridable) and
// validation. Client and Mode are the caller's.
func ResolverOptions() (layers.ResolverOptions[*Settings], error) {
	codec, err := NewCodec()
	if err != nil {
		return layers.ResolverOptions[*Settings]{}, err
	}
	fields, err := NewFields()
	if err != nil {
		return layers.ResolverOptions[*Settings]{}, err
	}
	return layers.ResolverOptions[*Settings]{
		Name:                "strata-bench",
		Namespace:           SystemNamespace,
		ClusterConfigMap:    ClusterName,
		NamespaceConfigMaps: []string{OverridesName},
		Labels:              OverrideLabels,
		Tenancy:             layers.Tenancy{GateKey: GateKey, GateOpen: "true", GateClosed: "false"},
		Codec:               codec,
		Fields:              fields,
		Validate:            Validate,
	}, nil
}

// ClusterConfigMap and NamespaceConfigMap are the workload's ConfigMaps.
func ClusterConfigMap() *corev1.ConfigMap {
	return ConfigMap(SystemNamespace, ClusterName, "1", nil, ClusterData())
}

// NamespaceConfigMap is namespace ns's overlay.
func NamespaceConfigMap(ns string) *corev1.ConfigMap {
	return ConfigMap(ns, OverridesName, "1", OverrideLabels, NamespaceData())
}
