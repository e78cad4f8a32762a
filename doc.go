// Package strata is a library for layered, versioned configuration of
// Kubernetes-style components and controllers.
//
// A configuration passes through one pipeline:
//
//		sources ─► raw layers ─► merge ─► resolve paths ─► decode, default ─► convert ─► validate
//
//	  - merge holds the raw layer model: keys are JSON pointers into the
//	    versioned document, values JSON text, objects flattened to leaves,
//	    null a tombstone (RFC 7386). Layers merge most generic first, with
//	    provenance for every key and a policy hook per layer. Merging before
//	    parsing keeps "set to false" apart from "unset". Standard library only.
//	  - scheme builds the codec of one configuration kind over an
//	    apimachinery runtime.Scheme: strict, warn or ignore decoding with
//	    errors that name the file and field, defaulting, conversion to the
//	    hub, a version lifecycle, multi-document YAML and v1 List, limits on
//	    untrusted input, and encoding to any version.
//	  - layers turns a component's sources (file, drop-in directory,
//	    per-instance file, flags, defaults) into layers and resolves them into
//	    a typed, validated configuration: Component.Load is the whole
//	    bootstrap of `mycomp --config=FILE [--config-dir=DIR] [flags]`.
//	  - validation knows what types cannot say: which fields are paths,
//	    restart-only or cluster-only; it attaches to every field error the
//	    layer that set the offending key; it validates sets of manifests.
//	  - watch keeps configuration from mounted files live: consistent reads
//	    of what kubelet's AtomicWriter and git-sync publish, fsnotify plus
//	    polling, validate before apply, keep the last good value, reload
//	    metrics; and directories of manifests loaded as one set.
//
// examples/component is a runnable component that shows all of it, with
// live reload under --watch; examples/manifests keeps a directory of policy
// manifests live; examples/controller gives Jobs per-namespace defaults.
// The bench module measures strata against viper, koanf, knative and a
// Tekton-style loader on one workload; docs/PERFORMANCE.md has the figures.
package strata
