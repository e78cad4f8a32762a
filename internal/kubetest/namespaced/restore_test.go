package namespaced_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stratacfg/strata/internal/kubetest"
	"github.com/stratacfg/strata/internal/watchtest"
)

// TestEtcdRestored restores etcd, under running Lazy and Informer
// resolvers, from a snapshot taken before a tenant edited its overrides,
// the operator edited the cluster ConfigMap and a new namespace set its
// own: etcdctl saves the snapshot, etcdutl restores it with
// --bump-revision and --mark-compacted, as Kubernetes' guide to restoring
// etcd says, and kube-apiserver restarts. Every version a resolver held
// has expired: each must list again, converge to what the server holds
// now, the older values, and follow the edits made after.
//
// A restore that does not bump the revision reuses the versions clients
// hold, and a watch that resumes from one of them carries on past the
// rollback: tried here, neither the resolver nor client-go's informers
// noticed within a minute, and nothing the server sent said so.
// docs/TENANCY.md says to restart the controller after such a restore.
func TestEtcdRestored(t *testing.T) {
	srv := kubetest.Start(t)
	w := newWorldOn(t, srv)
	team := w.tenant("team")
	w.put(team, "overrides", tenantLabels, map[string]string{"default-timeout-seconds": "50"})
	ctx := t.Context()
	modes := []string{"lazy", "informer"}
	rs := map[string]resolver{}
	for _, mode := range modes {
		rs[mode] = w.start(ctx, mode)
	}
	snapshot := srv.SnapshotEtcd(t)

	late := w.tenant("late")
	w.put(team, "overrides", tenantLabels, map[string]string{"default-timeout-seconds": "70"})
	w.put(late, "overrides", tenantLabels, map[string]string{"default-timeout-seconds": "30"})
	w.put(w.system, "defaults", nil, map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "200"})
	for _, mode := range modes {
		await(t, mode, rs[mode], map[string]int64{team: 70, late: 30, w.prefix + "other": 200})
	}

	srv.RestoreEtcd(t, snapshot, "--bump-revision=1000000", "--mark-compacted")
	for _, mode := range modes {
		// late's namespace and ConfigMap are gone: the cluster's
		// restored 100 applies.
		await(t, mode, rs[mode], map[string]int64{team: 50, late: 100, w.prefix + "other": 100})
	}

	w.put(team, "overrides", tenantLabels, map[string]string{"default-timeout-seconds": "80"})
	for _, mode := range modes {
		await(t, mode, rs[mode], map[string]int64{team: 80})
	}
}

// await waits up to a minute for every namespace of want to resolve to
// its default timeout there in r, and fails with what each resolved last.
func await(t *testing.T, mode string, r resolver, want map[string]int64) {
	t.Helper()
	var off []string
	if !watchtest.Until(time.Minute, func() bool {
		off = nil
		for ns, v := range want {
			s, err := r.ForNamespace(t.Context(), ns)
			switch {
			case err != nil:
				off = append(off, fmt.Sprintf("%s: %v", ns, err))
			case *s.Object.DefaultTimeoutSeconds != v:
				off = append(off, fmt.Sprintf("%s: %d, want %d", ns, *s.Object.DefaultTimeoutSeconds, v))
			}
		}
		return len(off) == 0
	}) {
		t.Fatalf("%s resolver, a minute on: %v", mode, off)
	}
}
