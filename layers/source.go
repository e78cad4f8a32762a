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

// Source kinds that name where a value came from in provenance.
const (
	KindDefault        = "default"
	KindLegacyDefault  = "legacy-default"
	KindFile           = "file"
	KindDropIn         = "drop-in"
	KindInstanceConfig = "instance-config"
	KindFlag           = "flag"
	// KindRunning credits a restart-only key that a reload left at its
	// running value.
	KindRunning = "running"
)

// isFileKind reports whether a source of kind k is a file whose directory
// relative paths resolve against.
func isFileKind(k string) bool {
	return k == KindFile || k == KindDropIn || k == KindInstanceConfig
}
