package namespacedtest_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratacfg/strata/internal/testkind"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/namespacedtest"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
)

func options(t *testing.T) namespaced.Options[*testkind.Defaults] {
	t.Helper()
	kind, err := testkind.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	return namespaced.Options[*testkind.Defaults]{
		Kind: kind, Namespace: "strata-system", ClusterConfigMap: "strata-defaults",
		NamespaceConfigMaps: []string{"strata-overrides"}, Labels: map[string]string{"config.strata.dev/type": "namespace"},
		Tenancy: tenancy.Policy{GateKey: "enforced-config-level", GateOpen: "namespace", GateClosed: "cluster",
			LockKey: "non-overridable-fields"},
		Selectors: &namespaced.Selectors{Labels: map[string]string{"config.strata.dev/type": "selector"}},
	}
}

func TestResolverThroughAChange(t *testing.T) {
	o := options(t)
	r, err := namespacedtest.New(o,
		namespacedtest.ClusterConfigMap(o, map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "600",
			"non-overridable-fields": "default-service-account"}),
		namespacedtest.NamespaceConfigMap(o, "team-a", "strata-overrides", map[string]string{"default-timeout-seconds": "60", "default-service-account": "root"}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	ctx := context.Background()
	s, err := r.ForNamespace(ctx, "team-a")
	if err != nil || *s.Object.DefaultTimeoutSeconds != 60 {
		t.Fatalf("team-a: %v, %v", s, err)
	}
	if got := s.Rejected(); len(got) != 1 || got[0].Key != "default-service-account" || got[0].Reason != tenancy.ReasonLocked {
		t.Errorf("rejected %v", got)
	}
	var notified []string
	r.Subscribe(func(ns string, old, new *namespaced.Snapshot[*testkind.Defaults]) {
		notified = append(notified, fmt.Sprintf("%s %d→%d", ns, *old.Object.DefaultTimeoutSeconds, *new.Object.DefaultTimeoutSeconds))
	})
	// Set returns once subscribers have been called.
	if err := r.Set(namespacedtest.NamespaceConfigMap(o, "team-a", "strata-overrides", map[string]string{"default-timeout-seconds": "90"})); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(notified) != "[team-a 60→90]" {
		t.Errorf("notified %v", notified)
	}
	if s, _ := r.ForNamespace(ctx, "team-a"); *s.Object.DefaultTimeoutSeconds != 90 || len(s.Rejected()) != 0 {
		t.Errorf("after Set: timeout %d, rejected %v", *s.Object.DefaultTimeoutSeconds, s.Rejected())
	}
	notified = nil
	if err := r.Delete(namespacedtest.NamespaceConfigMap(o, "team-a", "strata-overrides", nil)); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(notified) != "[team-a 90→600]" {
		t.Errorf("notified %v", notified)
	}
	// A selector layer and a namespace's labels.
	notified = nil
	if err := r.Set(
		namespacedtest.Namespace("team-a", map[string]string{"tier": "gold"}),
		namespacedtest.SelectorConfigMap(o, "gold", "tier=gold", map[string]string{"default-timeout-seconds": "300"}),
	); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.ForNamespace(ctx, "team-a"); *s.Object.DefaultTimeoutSeconds != 300 {
		t.Errorf("with the gold selector: timeout %d", *s.Object.DefaultTimeoutSeconds)
	}
	if err := r.Set(namespacedtest.Namespace("plain", nil)); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.ForNamespace(ctx, "plain"); *s.Object.DefaultTimeoutSeconds != 600 {
		t.Errorf("an unlabelled namespace: timeout %d", *s.Object.DefaultTimeoutSeconds)
	}
	if err := r.Set(namespacedtest.Namespace("plain", nil).DeepCopyObject()); err != nil {
		t.Fatal(err)
	}
	if err := r.Set(&corev1.Secret{}); err == nil {
		t.Error("Set took an object that is neither a ConfigMap nor a Namespace")
	}
}
