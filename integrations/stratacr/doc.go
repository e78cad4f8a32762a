// Package stratacr wires strata's per-namespace configuration into a
// controller-runtime manager, with no watch of its own:
//
//   - New builds a namespaced resolver that reads ConfigMaps through the
//     manager's cache and runs with the manager;
//   - CacheByObject keeps the manager's ConfigMap cache to what the
//     resolver reads, so that tenants' other ConfigMaps are never cached;
//   - Resolver.Source wakes a controller for the objects of a namespace
//     whose configuration changed;
//   - Defaulter applies a namespace's configuration to objects at
//     admission, in a mutating webhook that answers with a JSON patch
//     found once per snapshot; Validator checks objects against it.
//
// It is a module of its own, so that strata's library never requires
// controller-runtime.
package stratacr
