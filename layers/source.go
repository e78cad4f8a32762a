// Package layers is a component's configuration bootstrap:
// `mycomp --config=FILE [--config-dir=DIR] [--instance-config=FILE] [flags]`.
//
// Describe the command with a Component (its name, its scheme.Kind and its
// flags), then:
//
//   - Execute runs the whole command, with the standard flags --explain,
//     --print-config, --output-version and --write-config-to;
//   - Load loads the configuration for a caller that runs the rest itself
//     (NewCommandLine, Parse and LoadFrom are its steps);
//   - Watch keeps the configuration live from the files the command line
//     named, ConfigMap mounts included.
//
// Each source becomes a raw merge layer, most generic first: defaults, the
// file, the drop-ins in lexical order, the per-instance file, and the flags
// set on the command line. The layers merge at raw-key granularity, so an
// explicit false or 0 is never mistaken for "unset"; relative paths
// resolve against the file that set them; and the result is decoded,
// defaulted, converted and validated, every key knowing where its value
// came from. The package links no client-go; per-namespace configuration
// from ConfigMaps is layers/namespaced.
package layers

// Origins name where a value came from in provenance (merge.Source's
// Origin).
const (
	OriginDefault        = "default"
	OriginLegacyDefault  = "legacy-default"
	OriginFile           = "file"
	OriginDropIn         = "drop-in"
	OriginInstanceConfig = "instance-config"
	OriginFlag           = "flag"
	// OriginRunning credits a restart-only key that a reload left at its
	// running value.
	OriginRunning = "running"
)

// isFileOrigin reports whether a source of origin k is a file whose
// directory relative paths resolve against.
func isFileOrigin(k string) bool {
	return k == OriginFile || k == OriginDropIn || k == OriginInstanceConfig
}
