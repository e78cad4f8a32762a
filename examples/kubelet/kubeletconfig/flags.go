package kubeletconfig

import (
	"io"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
)

// replaceFlags are kubelet's map flags whose first use replaces the map
// the files set (cliflag's map values start afresh on their first Set);
// --feature-gates is the exception: kubelet adds the files' gates back.
var replaceFlags = map[string]bool{
	"kube-reserved": true, "system-reserved": true, "qos-reserved": true,
	"eviction-hard": true, "eviction-soft": true, "eviction-soft-grace-period": true, "eviction-minimum-reclaim": true,
	"topology-manager-policy-options": true, "cpu-manager-policy-options": true, "manifest-url-header": true,
}

// legacyFlags are the flags whose defaults differ from the file's:
// kubelet applies them only when it runs without --config
// (applyLegacyDefaults).
var legacyFlags = map[string]bool{
	"anonymous-auth": true, "authentication-token-webhook": true, "authorization-mode": true, "read-only-port": true,
}

// flagSets registers kubelet v1.37.2's flags, as its command does:
// kubelet's own flags (KubeletFlags) on own, those of KubeletConfiguration
// bound to kc on config, and the flags third-party packages register
// globally on global. --config and --config-dir are left out when
// withConfigFiles is false: strata's command line has its own.
func flagSets(own, config, global *pflag.FlagSet, kf *options.KubeletFlags, kc *kubeletconfig.KubeletConfiguration, withConfigFiles bool) {
	all := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	kf.AddFlags(all)
	all.VisitAll(func(f *pflag.Flag) {
		if withConfigFiles || (f.Name != "config" && f.Name != "config-dir") {
			own.AddFlag(f)
		}
	})
	options.AddKubeletConfigFlags(config, kc)
	options.AddGlobalFlags(global)
}

// newKubeletFlagSet is the flag set of kubelet's first parse: every flag,
// names normalized (--read_only_port is --read-only-port), and help.
func newKubeletFlagSet(kf *options.KubeletFlags, kc *kubeletconfig.KubeletConfiguration) *pflag.FlagSet {
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	fs.SetOutput(io.Discard)
	flagSets(fs, fs, fs, kf, kc, true)
	fs.BoolP("help", "h", false, "help for kubelet")
	return fs
}

// newReparseFlagSet is the flag set kubelet parses the command line into
// again, over the configuration its files made (kubeletConfigFlagPrecedence):
// the global flags do nothing, and kubelet's own flags go to a throwaway.
func newReparseFlagSet(kc *kubeletconfig.KubeletConfiguration) *pflag.FlagSet {
	globals := pflag.NewFlagSet("", pflag.ContinueOnError)
	globals.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	options.AddGlobalFlags(globals)
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.SetNormalizeFunc(globals.GetNormalizeFunc())
	fs.SetOutput(io.Discard)
	globals.VisitAll(func(f *pflag.Flag) { fs.VarP(cliflag.NoOp{}, f.Name, f.Shorthand, f.Usage) })
	options.NewKubeletFlags().AddFlags(fs)
	options.AddKubeletConfigFlags(fs, kc)
	return fs
}
