package kubeletconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	cliflag "k8s.io/component-base/cli/flag"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/eviction"

	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/scheme"
)

// The profiles.
const (
	ProfileKubelet = "kubelet"
	ProfileStrata  = "strata"
)

// Load loads the configuration args (kubelet's command line, without the
// command name) name, in profile.
func Load(k *scheme.Kind, profile string, args []string) (*Result, error) {
	switch profile {
	case ProfileKubelet:
		return loadKubelet(k, args)
	case ProfileStrata:
		return loadStrata(k, args)
	}
	return nil, fmt.Errorf("--profile %q: want %s or %s", profile, ProfileKubelet, ProfileStrata)
}

// NewComponent is kubelet's configuration as a strata component, the
// strata profile: kubelet's flags, every one bound to its key or declared
// not configuration, names normalized as kubelet normalizes them; its
// drop-ins the .conf files directly in --config-dir, dot-files left out,
// decoded strictly, relative paths resolved against the drop-in's own
// directory; kubelet's default eviction thresholds filled in after
// everything merged, when no layer set any; a Linux-only field a shared
// file sets skipped on another OS, and said so, where kubelet fails.
func NewComponent(k *scheme.Kind) *layers.Component[*kubeletconfig.KubeletConfiguration] {
	return &layers.Component[*kubeletconfig.KubeletConfiguration]{
		Name:           "kubelet-config",
		Kind:           k,
		NormalizeFlags: cliflag.WordSepNormalizeFunc,
		DropIns:        layers.DropInPolicy{Extensions: []string{".conf"}},
		Default:        defaultEviction,
		SkipForeignOS:  true,
		Flags: func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
			kf := options.NewKubeletFlags()
			scratch, err := options.NewKubeletConfiguration()
			if err != nil {
				return err // only if kubelet's own defaults do not convert
			}
			own, config, global := fss.FlagSet("kubelet"), fss.FlagSet("configuration"), fss.FlagSet("global")
			flagSets(own, config, global, kf, scratch, false)
			unplaced := b.BindFields(config, scratch, func() ([]byte, error) { return JSON(k, scratch) }, func(flag, _ string) []layers.BindOption {
				switch {
				case replaceFlags[flag]:
					return []layers.BindOption{layers.Replace()}
				case legacyFlags[flag]:
					return []layers.BindOption{layers.LegacyDefault()}
				}
				return nil
			})
			if len(unplaced) > 0 {
				return fmt.Errorf("kubelet configuration flags with no field: %v", unplaced)
			}
			var names []string
			for _, fs := range []*pflag.FlagSet{own, global} {
				fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
			}
			b.NotConfiguration("kubelet's own flags and those of the packages it links: not part of KubeletConfiguration", names...)
			return nil
		},
	}
}

// defaultEviction fills kubelet's default hard eviction thresholds when no
// layer set any.
func defaultEviction(obj runtime.Object) {
	if c := obj.(*kubeletconfigv1beta1.KubeletConfiguration); c.EvictionHard == nil {
		c.EvictionHard = maps.Clone(eviction.DefaultEvictionHard)
	}
}

func loadStrata(k *scheme.Kind, args []string) (*Result, error) {
	loaded, _, err := NewComponent(k).Load(context.Background(), args)
	if err != nil {
		return nil, err
	}
	return &Result{Config: loaded.Object, Provenance: loaded.Provenance, Warnings: loaded.Warnings, Skipped: loaded.Skipped}, nil
}

// Explanation is the configuration and the provenance of every key, as
// --explain prints it.
type Explanation struct {
	Config     json.RawMessage                 `json:"config"`
	Provenance map[string]layers.KeyProvenance `json:"provenance"`
	// Skipped is what was read and left out, with why.
	Skipped []string `json:"skipped,omitempty"`
}

// Explain returns r's explanation.
func Explain(k *scheme.Kind, r *Result) (*Explanation, error) {
	doc, err := JSON(k, r.Config)
	if err != nil {
		return nil, err
	}
	return &Explanation{Config: doc, Provenance: layers.Provenances(r.Provenance), Skipped: r.Skipped}, nil
}
