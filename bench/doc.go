// Package bench measures strata side by side with the libraries its users
// would pick instead: spf13/viper, knadh/koanf, knative.dev/pkg/configmap,
// and a Tekton-style loader that re-merges raw ConfigMap maps and parses
// them on every call.
//
// It is a module of its own, so that none of those libraries enters
// strata's go.mod. Every library does the same work on the same data: the
// workload in this package (a 30-key configuration of 10 booleans, 10
// integers, 5 durations and 5 strings, with a 5-key namespace overlay, and
// a nested component file with feature gates). The tests check that every
// library arrives at the same effective configuration, so that a benchmark
// never compares different work. `make bench` runs the benchmarks and
// writes docs/PERFORMANCE.md with cmd/perfdoc.
package bench
