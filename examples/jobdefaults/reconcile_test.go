package main

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stratacfg/strata/examples/controller/apis/defaults/v1alpha1"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/namespacedtest"
)

// TestReconcileAcrossAConfigurationChange drives the reconciler and the
// webhook's defaulting through a tenant's edit with no cluster: the
// configuration comes from strata's test kit, the Jobs from
// controller-runtime's fake client.
func TestReconcileAcrossAConfigurationChange(t *testing.T) {
	o, err := options()
	if err != nil {
		t.Fatal(err)
	}
	r, err := namespacedtest.New(o,
		namespacedtest.ClusterConfigMap(o, map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "600", "default-service-account": "job-runner"}),
		namespacedtest.NamespaceConfigMap(o, "team-a", OverridesName, map[string]string{"default-timeout-seconds": "60"}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	ctx := context.Background()

	// Admission: the namespace's values where the Job leaves them unset.
	job := jobObject("team-a", "build")
	snap, err := r.ForNamespace(ctx, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	if err := applyDefaults(ctx, job, snap); err != nil {
		t.Fatal(err)
	}
	if *job.Spec.ActiveDeadlineSeconds != 60 || job.Spec.Template.Spec.ServiceAccountName != "job-runner" {
		t.Fatalf("defaulted: deadline %d, serviceAccountName %q", *job.Spec.ActiveDeadlineSeconds, job.Spec.Template.Spec.ServiceAccountName)
	}

	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(job).Build()
	rc := &reconciler{c: c, r: r}
	reconcile := func() map[string]string {
		t.Helper()
		if _, err := rc.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "build"}}); err != nil {
			t.Fatal(err)
		}
		var got batchv1.Job
		if err := c.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: "build"}, &got); err != nil {
			t.Fatal(err)
		}
		return got.Annotations
	}
	before := reconcile()
	if before[namespaced.AnnotationResolvedHash] != snap.Hash() || !strings.Contains(before[namespaced.AnnotationSources], "namespace:team-a/"+OverridesName) {
		t.Fatalf("annotations %v", before)
	}

	// The tenant edits the override: the namespace is notified, and the
	// next reconcile annotates the Job with the new configuration.
	var woken []string
	cancel := r.Subscribe(func(ns string, _, _ *namespaced.Snapshot[*v1alpha1.JobDefaults]) { woken = append(woken, ns) })
	defer cancel()
	if err := r.Set(namespacedtest.NamespaceConfigMap(o, "team-a", OverridesName, map[string]string{"default-timeout-seconds": "90"})); err != nil {
		t.Fatal(err)
	}
	if len(woken) != 1 || woken[0] != "team-a" {
		t.Errorf("woken %v, want team-a once", woken)
	}
	after := reconcile()
	if after[namespaced.AnnotationResolvedHash] == before[namespaced.AnnotationResolvedHash] {
		t.Error("the hash annotation did not change with the configuration")
	}
	next := jobObject("team-a", "next")
	snap, _ = r.ForNamespace(ctx, "team-a")
	if err := applyDefaults(ctx, next, snap); err != nil || *next.Spec.ActiveDeadlineSeconds != 90 {
		t.Errorf("a Job admitted after the edit: deadline %v (%v)", next.Spec.ActiveDeadlineSeconds, err)
	}
	// A reconcile with nothing changed patches nothing.
	if again := reconcile(); again[namespaced.AnnotationResolvedHash] != after[namespaced.AnnotationResolvedHash] {
		t.Errorf("annotations moved without a change: %v", again)
	}
}

// TestClusterCacheSize: the namespaces the resolver caches are what the
// cluster ConfigMap's namespace-config-cache-size says, the kind's default
// without one or without the ConfigMap.
func TestClusterCacheSize(t *testing.T) {
	o, err := options()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		objs []client.Object
		want int
	}{
		{[]client.Object{namespacedtest.ClusterConfigMap(o, map[string]string{"namespace-config-cache-size": "7"})}, 7},
		{[]client.Object{namespacedtest.ClusterConfigMap(o, map[string]string{"default-timeout-seconds": "60"})}, int(v1alpha1.DefaultCacheSize)},
		{nil, int(v1alpha1.DefaultCacheSize)},
	} {
		objs, want := tc.objs, tc.want
		c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()
		if got, err := clusterCacheSize(context.Background(), c, o); err != nil || got != want {
			t.Errorf("with %d objects: %d, %v; want %d", len(objs), got, err, want)
		}
	}
}
