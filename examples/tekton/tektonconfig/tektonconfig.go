// Package tektonconfig is Tekton's configuration as strata resolves it per
// namespace (TEP-0085): Tekton's own config.Defaults and
// config.FeatureFlags, each built by Tekton's own constructor over the
// merged data of its cluster ConfigMap and a namespace's, under the rules
// of Tekton's per-namespace configuration (PR #9517): the gate and the
// lock list live in feature-flags and govern both, tenants set only the
// keys those rules allow, and the system namespaces take no namespace
// layer.
package tektonconfig

import (
	"context"

	"github.com/tektoncd/pipeline/pkg/apis/config"

	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
)

// Config is one namespace's Tekton configuration: both sections from one
// snapshot, never one section of one version beside the other of another.
type Config struct {
	Defaults     *config.Defaults
	FeatureFlags *config.FeatureFlags
}

// The names and labels of TEP-0085.
const (
	SystemNamespace             = "tekton-pipelines"
	NamespaceDefaultsConfigMap  = "tekton-config-defaults"
	NamespaceFeatureFlagsConfig = "tekton-feature-flags"
	GateKey                     = "per-namespace-configuration"
	LockKey                     = "non-overridable-fields"
)

// Labels must both be on a namespace ConfigMap.
var Labels = map[string]string{"app.kubernetes.io/part-of": "tekton-pipelines", "tekton.dev/pipeline-config": "true"}

// SelectorLabels mark a selector ConfigMap in tekton-pipelines: the
// operator's layer for the namespaces its selector annotation
// (config.strata.dev/namespace-selector) matches, of the section its
// config.strata.dev/section annotation names. A canary: a feature flag
// set for the labelled namespaces first.
var SelectorLabels = map[string]string{"app.kubernetes.io/part-of": "tekton-pipelines", "tekton.dev/pipeline-config-selector": "true"}

// Section names: the cluster ConfigMaps' names.
var (
	DefaultsSection     = config.GetDefaultsConfigName()
	FeatureFlagsSection = config.GetFeatureFlagsConfigName()
)

// DefaultsKeys are the keys config.NewDefaultsFromMap reads (v1.15.0).
var DefaultsKeys = []string{
	"default-timeout-minutes", "default-service-account", "default-managed-by-label-value", "default-pod-template",
	"default-affinity-assistant-pod-template", "default-cloud-events-sink", "default-task-run-workspace-binding",
	"default-max-matrix-combinations-count", "default-forbidden-env", "default-resolver-type",
	"default-container-resource-requirements", "default-imagepullbackoff-timeout", "default-create-container-error-timeout",
	"default-maximum-resolution-timeout", "default-sidecar-log-polling-interval", config.DefaultStepRefConcurrencyLimitKey,
}

// FeatureFlagsKeys are the keys of feature-flags: those
// config.NewFeatureFlagsFromMap reads (v1.15.0), and the gate and lock
// list of TEP-0085.
var FeatureFlagsKeys = []string{
	"disable-creds-init", "running-in-environment-with-injected-sidecars", "await-sidecar-readiness",
	"require-git-ssh-secret-known-hosts", "enable-api-fields", "send-cloudevents-for-runs", "enforce-nonfalsifiability",
	"trusted-resources-verification-no-match-policy", "enable-provenance-in-status", "results-from", "max-result-size",
	"set-security-context", "set-security-context-read-only-root-filesystem", "coschedule", config.KeepPodOnCancel,
	config.EnableCELInWhenExpression, config.EnableStepActions, config.EnableParamEnum, config.EnableArtifacts,
	config.DisableInlineSpec, config.EnableConciseResolverSyntax, config.EnableKubernetesSidecar,
	config.EnableWaitExponentialBackoff, config.EnableTerminationMessageCompression, config.EnableTektonOCIBundles,
	GateKey, LockKey,
}

// Overridable are the keys tenants may set, as PR #9517 lists them.
var Overridable = []string{
	DefaultsSection + "/default-service-account",
	DefaultsSection + "/default-timeout-minutes",
	DefaultsSection + "/default-managed-by-label-value",
	DefaultsSection + "/default-pod-template",
	DefaultsSection + "/default-task-run-workspace-binding",
	DefaultsSection + "/default-max-matrix-combinations-count",
	DefaultsSection + "/default-imagepullbackoff-timeout",
	DefaultsSection + "/default-container-resource-requirements",
	FeatureFlagsSection + "/running-in-environment-with-injected-sidecars",
	FeatureFlagsSection + "/await-sidecar-readiness",
	FeatureFlagsSection + "/max-result-size",
	FeatureFlagsSection + "/coschedule",
	FeatureFlagsSection + "/" + config.KeepPodOnCancel,
	FeatureFlagsSection + "/" + config.EnableCELInWhenExpression,
	FeatureFlagsSection + "/" + config.EnableArtifacts,
	FeatureFlagsSection + "/" + config.EnableParamEnum,
	FeatureFlagsSection + "/" + config.EnableKubernetesSidecar,
	FeatureFlagsSection + "/" + config.EnableWaitExponentialBackoff,
}

// perFeatureFlags are Tekton's per-feature flags (v1.15.0), each with the
// stability Tekton declares for it.
var perFeatureFlags = []config.PerFeatureFlag{
	config.DefaultEnableKeepPodOnCancel, config.DefaultEnableCELInWhenExpression, config.DefaultEnableArtifacts,
	config.DefaultEnableParamEnum, config.DefaultEnableConciseResolverSyntax, config.DefaultEnableTerminationMessageCompressionFlag,
	config.DefaultEnableTektonOCIBundles,
}

// flagsOf returns the names of Tekton's per-feature flags of stability
// level (config.AlphaAPIFields, config.BetaAPIFields).
func flagsOf(level string) []string {
	var out []string
	for _, f := range perFeatureFlags {
		if f.Stability == level {
			out = append(out, f.Name)
		}
	}
	return out
}

// Options are the resolver's options for Tekton installed in namespace
// system (SystemNamespace, unless knative's system.Namespace() says
// another). A tenant's alpha or
// beta feature flag applies only when the cluster's enable-api-fields
// allows that stability (TEP-0085's safeguard), Tekton's default "beta"
// when feature-flags leaves it out.
func Options(system string) namespaced.Options[*Config] {
	return namespaced.Options[*Config]{
		Name: "tekton-config",
		// Every warning and Event about a refused key points here.
		TenantKeysDoc: "`tekton-config keys`, or ask the operator for its output",
		Namespace:     system,
		Labels:        Labels,
		Selectors:     &namespaced.Selectors{Labels: SelectorLabels},
		Parsed: &namespaced.Parsed[*Config]{
			New: func() *Config { return &Config{} },
			Sections: []namespaced.Section[*Config]{
				{Name: DefaultsSection, ClusterConfigMap: DefaultsSection, NamespaceConfigMap: NamespaceDefaultsConfigMap, Keys: DefaultsKeys,
					Parse: namespaced.FromMap(config.NewDefaultsFromMap, func(c *Config, d *config.Defaults) { c.Defaults = d })},
				{Name: FeatureFlagsSection, ClusterConfigMap: FeatureFlagsSection, NamespaceConfigMap: NamespaceFeatureFlagsConfig, Keys: FeatureFlagsKeys,
					Parse: namespaced.FromMap(config.NewFeatureFlagsFromMap, func(c *Config, f *config.FeatureFlags) { c.FeatureFlags = f }),
					Alpha: flagsOf(config.AlphaAPIFields), Beta: flagsOf(config.BetaAPIFields)},
			},
		},
		Tenancy: tenancy.Policy{
			GateKey: FeatureFlagsSection + "/" + GateKey, GateOpen: "true", GateClosed: "false",
			LockKey:          FeatureFlagsSection + "/" + LockKey,
			StabilityKey:     FeatureFlagsSection + "/enable-api-fields",
			StabilityDefault: config.DefaultEnableAPIFields,
			Overridable:      Overridable,
			SystemNamespaces: []string{"kube-system", "kube-public"}, // and tekton-pipelines, the component's own
		},
	}
}

// ToContext puts the namespace's configuration in ctx through Tekton's own
// config.ToContext, over what ctx carries already (from Tekton's store:
// the cluster's metrics, SPIRE, events, tracing and backoff
// configuration, which have no namespace layer), so that every
// config.FromContextOrDefaults reader (TaskRun and PipelineRun
// SetDefaults and Validate, the reconcilers) reads the namespace's
// Defaults and FeatureFlags unchanged. strataknative.IntoContext and
// strataknative.WrapContext call it.
func ToContext(ctx context.Context, s *namespaced.Snapshot[*Config]) context.Context {
	cfg := *config.FromContextOrDefaults(ctx)
	cfg.Defaults, cfg.FeatureFlags = s.Object.Defaults, s.Object.FeatureFlags
	return config.ToContext(ctx, &cfg)
}
