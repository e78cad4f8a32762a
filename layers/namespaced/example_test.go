package namespaced_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/examples/controller/apis/defaults/v1alpha1"
	"github.com/stratacfg/strata/layers/namespaced"
)

// A cluster ConfigMap opens namespace overrides and locks one key; team-a
// sets the TTL to an explicit 0, which the cluster's 300 does not
// override, and tries the locked key.
func ExampleResolver_ResolveObjects() {
	kind, _ := v1alpha1.NewKind()
	r, _ := namespaced.NewDirect(nil, namespaced.Options[*v1alpha1.JobDefaults]{
		Kind:                kind,
		Namespace:           "strata-system",
		ClusterConfigMap:    "strata-defaults",
		NamespaceConfigMaps: []string{"strata-overrides"},
		Labels:              map[string]string{"config.strata.dev/type": "namespace"},
		Tenancy: namespaced.Tenancy{
			GateKey: "enforced-config-level", GateOpen: "namespace", GateClosed: "cluster",
			LockKey: "non-overridable-fields",
		},
	})
	cluster := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "strata-system", Name: "strata-defaults"},
		Data: map[string]string{
			"enforced-config-level":              "namespace",
			"non-overridable-fields":             "default-service-account",
			"default-ttl-seconds-after-finished": "300",
		},
	}
	tenant := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "strata-overrides",
			Labels: map[string]string{"config.strata.dev/type": "namespace"}},
		Data: map[string]string{"default-ttl-seconds-after-finished": "0", "default-service-account": "root"},
	}
	snap, err := r.ResolveObjects("team-a", []runtime.Object{cluster, tenant})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ttl:", *snap.Object.DefaultTTLSecondsAfterFinished)
	src, _ := snap.Provenance().SourceOf("/default-ttl-seconds-after-finished")
	fmt.Println("set by:", src)
	for _, d := range snap.Rejected() {
		fmt.Println(d)
	}
	// Output:
	// ttl: 0
	// set by: namespace team-a/strata-overrides
	// namespace team-a/strata-overrides: key "default-service-account" dropped: locked by the operator
}
