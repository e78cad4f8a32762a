// Package validation validates the example component's internal
// configuration.
package validation

import (
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/stratacfg/strata/examples/component/apis/config"
	strataval "github.com/stratacfg/strata/validation"
)

// Feature gates of the example component.
const (
	AlphaThing featuregate.Feature = "AlphaThing"
	BetaThing  featuregate.Feature = "BetaThing"
	// GAThing graduated: it is locked on and may not be turned off.
	GAThing featuregate.Feature = "GAThing"
)

// NewFeatureGate returns the component's feature gates at their defaults,
// with logging's gates added.
func NewFeatureGate() featuregate.MutableFeatureGate {
	fg := featuregate.NewFeatureGate()
	if err := fg.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		AlphaThing: {Default: false, PreRelease: featuregate.Alpha},
		BetaThing:  {Default: true, PreRelease: featuregate.Beta},
		GAThing:    {Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	}); err != nil {
		panic(err) // the table above is constant
	}
	if err := logsapi.AddFeatureGates(fg); err != nil {
		panic(err)
	}
	return fg
}

// Validate returns every problem with c at once that the tags of the
// merge version (v1beta1) cannot say: validation-gen generates the port's
// range, the host name's format, the enums of the OS fields and the
// client's burst (a subfield of component-base's struct), which the kind
// runs on the merged configuration before this. A float (qps) and a
// duration have no tag for their bounds.
func Validate(c *config.ComponentConfiguration) field.ErrorList {
	var errs field.ErrorList
	if c.SyncFrequency.Duration <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("syncFrequency"), c.SyncFrequency.Duration.String(), "must be positive"))
	}
	cc := field.NewPath("clientConnection")
	if c.ClientConnection.QPS < 0 {
		errs = append(errs, field.Invalid(cc.Child("qps"), c.ClientConnection.QPS, "must not be negative"))
	}
	for i, o := range c.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			errs = append(errs, field.Invalid(field.NewPath("allowedOrigins").Index(i), o, "must be an origin such as https://example.com"))
		}
	}
	fg := NewFeatureGate()
	gateErrs := strataval.FeatureGates(fg, c.FeatureGates, field.NewPath("featureGates"))
	errs = append(errs, gateErrs...)
	if len(gateErrs) == 0 {
		if err := fg.SetFromMap(c.FeatureGates); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("featureGates"), c.FeatureGates, err.Error()))
		}
	}
	errs = append(errs, logsapi.Validate(&c.Logging, fg, field.NewPath("logging"))...)
	return errs
}
