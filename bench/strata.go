package bench

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
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
// validation. The way it reads ConfigMaps is the caller's.
func ResolverOptions() (namespaced.Options[*Settings], error) {
	kind, err := NewKind()
	if err != nil {
		return namespaced.Options[*Settings]{}, err
	}
	return namespaced.Options[*Settings]{
		Name:                "strata-bench",
		Kind:                kind,
		Namespace:           SystemNamespace,
		ClusterConfigMap:    ClusterName,
		NamespaceConfigMaps: []string{OverridesName},
		Labels:              OverrideLabels,
		Tenancy:             tenancy.Policy{GateKey: GateKey, GateOpen: "true", GateClosed: "false"},
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
