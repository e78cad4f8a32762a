package scheme_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	logsapi "k8s.io/component-base/logs/api/v1"
	"sigs.k8s.io/randfill"

	"github.com/stratacfg/strata/examples/component/apis/config"
	configscheme "github.com/stratacfg/strata/examples/component/apis/config/scheme"
	"github.com/stratacfg/strata/scheme/schemetest"
	"github.com/stratacfg/strata/validation"
)

// TestRoundTrip converts random configurations to every version and back,
// through JSON and YAML, and checks that nothing is lost.
func TestRoundTrip(t *testing.T) {
	schemetest.RoundTrip(t, configscheme.Install, func(serializer.CodecFactory) []any {
		return []any{
			func(c *config.ComponentConfiguration, f randfill.Continue) {
				// The round trip decodes with defaulting, so the object must
				// already be defaulted; and omitempty drops empty maps and lists.
				f.FillNoCustom(c)
				if len(c.FeatureGates) == 0 {
					c.FeatureGates = nil
				}
				if len(c.AllowedOrigins) == 0 {
					c.AllowedOrigins = nil
				}
				if c.SyncFrequency.Duration == 0 {
					c.SyncFrequency.Duration = time.Second
				}
				cc := &c.ClientConnection
				if cc.ContentType == "" {
					cc.ContentType = "application/json"
				}
				if cc.QPS == 0 {
					cc.QPS = 1
				}
				if cc.Burst == 0 {
					cc.Burst = 1
				}
				c.Logging = *logsapi.NewLoggingConfiguration()
				logsapi.SetRecommendedLoggingConfiguration(&c.Logging)
				c.Logging.Verbosity = logsapi.VerbosityLevel(f.Uint32() % 10)
			},
		}
	})
}

// TestMarkers fails when a string field of a version is declared neither a
// path nor not a path: adding a path field without saying so fails here.
func TestMarkers(t *testing.T) {
	kind, err := configscheme.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range kind.Versions() {
		if f := kind.Fields(schema.GroupVersion{Group: config.GroupName, Version: v.Version}); f != nil {
			validation.CheckStrings(t, f)
		}
	}
}
