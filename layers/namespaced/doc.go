// Package namespaced resolves per-namespace configuration for controllers
// and admission webhooks. Three kinds of ConfigMap are merged at raw-key
// granularity, most generic first:
//
//   - the cluster ConfigMap, in the component's own namespace, which also
//     holds the tenant policy's live keys (Options.Tenancy names them): a
//     gate that opens namespace overrides, a list of keys locked by the
//     operator, and the stability level tenants may use;
//   - selector ConfigMaps, in the component's namespace, each applying to
//     the namespaces its label selector matches (opt-in);
//   - the namespace's own ConfigMaps, owned by tenants, of which only the
//     keys the policy admits apply; every key refused is reported with its
//     ConfigMap and the reason.
//
// The result is one immutable Snapshot per namespace: the typed hub
// object, defaulted, converted and validated, with the provenance of every
// key. An invalid tenant ConfigMap is ignored as a whole and reported; it
// never fails a resolve.
//
// A Resolver reads ConfigMaps in one of three ways, chosen when it is
// built, and caches one snapshot per namespace; every method it has works
// in each:
//
//   - NewLazy: a namespace's ConfigMaps are read on its first resolve and
//     then followed, for as long as it stays in the cache (evicted by
//     CLOCK), through one watch every cached namespace shares, whatever
//     the gate; start-up cost does not grow with the number of
//     namespaces.
//   - NewInformer: one label-filtered, cluster-wide informer keeps every
//     namespace's ConfigMaps; for operators who can list and watch them
//     cluster-wide.
//   - NewFromReader: through a cache the caller already has (a
//     controller-runtime manager's, a client-go lister), told of changes
//     through Invalidate.
//
// A Direct resolver (NewDirect) is a type of its own, for admission
// webhooks and one-shot commands: GETs and LISTs on every call, no cache,
// so no subscriptions; DryRun resolves objects a caller holds.
//
// ForNamespace is what a reconcile calls: on a cached namespace it takes no
// lock and allocates nothing. Subscribe tells a controller which
// namespaces' configuration changed, after the new snapshot is readable.
//
// A Resolver is level-triggered, as a controller is. A ConfigMap edit in
// Lazy mode takes this path, through four files:
//
//	lazy.go       lazyMode.follow hands the shared watch's event to the
//	              state (state.seen), the owner of every record
//	state.go      the event, newer than what the namespace's record holds
//	              (record.take), is put there and the namespace queued; a
//	              worker (state.work) reads the record as it is now,
//	              state.build builds, and publishes unless the record
//	              changed meanwhile
//	build.go      core.build merges the layers into the snapshot
//	subscribe.go  each subscription is queued the namespace, and its
//	              goroutine calls the subscriber from what it saw last
//
// Any other change (a cluster or selector ConfigMap, a namespace's labels,
// a list after the watch started again) queues the namespaces it affects
// in the same queue.
package namespaced
