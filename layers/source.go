// Package layers turns a component's sources of configuration (defaults, a
// config file, a drop-in directory, a per-instance file, flags) into raw
// merge layers, merges them, and resolves the result into a typed, defaulted,
// converted and validated configuration that knows where every value came
// from.
package layers

import (
	"context"

	"github.com/stratacfg/strata/internal/pipeline"
	"github.com/stratacfg/strata/merge"
)

// Source produces one raw layer. Implementations read their input each time
// Layer is called.
type Source interface {
	Layer(ctx context.Context) (*merge.Layer, error)
}

// Source kinds that name where a value came from in provenance.
const (
	KindDefault        = pipeline.KindDefault
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
