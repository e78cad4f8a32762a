// Package kubeletconfig loads kubelet's real KubeletConfiguration
// (k8s.io/kubernetes v1.37.2) through strata, from --config, --config-dir
// and kubelet's own configuration flags, in two profiles:
//
//   - ProfileKubelet loads exactly as kubelet v1.37.2 does, quirks
//     included; the differential test checks it against kubelet's own
//     loading code;
//   - ProfileStrata keeps strata's stricter rules (docs/KUBELET.md lists
//     every difference and why).
package kubeletconfig

import (
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	_ "k8s.io/component-base/logs/json/register" // kubelet's binary has the json log format, and its flags
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	kubeletvalidation "k8s.io/kubernetes/pkg/kubelet/apis/config/validation"

	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

// Group and Kind name kubelet's configuration.
const (
	Group = "kubelet.config.k8s.io"
	Kind  = "KubeletConfiguration"
)

// NewKind returns the kind of kubelet's configuration on kubelet's own
// scheme: its internal type is the hub, v1beta1 the one version a file
// may use and the merge version, its path fields those
// KubeletConfigurationPathRefs lists, its validator
// ValidateKubeletConfiguration under the feature gates the configuration
// sets.
func NewKind() (*scheme.Kind, error) {
	s, _, err := kubeletscheme.NewSchemeAndCodecs()
	if err != nil {
		return nil, err
	}
	paths, err := validation.PathRefs(kubeletconfig.KubeletConfigurationPathRefs, reflect.TypeFor[kubeletconfigv1beta1.KubeletConfiguration]())
	if err != nil {
		return nil, err
	}
	return scheme.New(scheme.Config{
		Group:    Group,
		Kind:     Kind,
		Scheme:   s,
		Versions: []scheme.Version{{Version: "v1beta1", Markers: paths, OS: linuxOnly}},
		Check:    scheme.CheckFunc(validate),
	})
}

// linuxOnly are the fields kubelet refuses on Windows
// (pkg/kubelet/apis/config/validation, validation_windows.go: "is not
// supported on Windows"), so that one file shared by Linux and Windows
// nodes skips them on Windows (Component.SkipForeignOS) instead of
// failing there.
var linuxOnly = map[string]string{
	"/singleProcessOOMKill": "linux",
	"/userNamespaces":       "linux",
}

// validate is kubelet's validation under the feature gates the
// configuration sets, over the process's. One of kubelet's checks is of
// the machine, not of the configuration: with failCgroupV1 (the default)
// kubelet refuses to run on a host with cgroup v1. A configuration is
// checked here wherever it is loaded, so that check is left to kubelet.
func validate(kc *kubeletconfig.KubeletConfiguration) error {
	gates := utilfeature.DefaultFeatureGate.DeepCopy()
	if err := gates.SetFromMap(kc.FeatureGates); err != nil {
		return fmt.Errorf("invalid configuration: featureGates: %w", err)
	}
	c := kc.DeepCopy()
	c.FailCgroupV1 = false
	return kubeletvalidation.ValidateKubeletConfiguration(c, gates)
}

// Versioned converts kc to v1beta1, with apiVersion and kind set.
func Versioned(k *scheme.Kind, kc *kubeletconfig.KubeletConfiguration) (*kubeletconfigv1beta1.KubeletConfiguration, error) {
	out := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := k.Scheme().Convert(kc, out, nil); err != nil {
		return nil, fmt.Errorf("converting the configuration to v1beta1: %w", err)
	}
	out.APIVersion, out.Kind = kubeletconfigv1beta1.SchemeGroupVersion.String(), Kind
	return out, nil
}

// JSON is the configuration as one v1beta1 JSON object.
func JSON(k *scheme.Kind, kc *kubeletconfig.KubeletConfiguration) ([]byte, error) {
	v, err := Versioned(k, kc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// internal converts a v1beta1 object to the internal type.
func internal(k *scheme.Kind, v runtime.Object) (*kubeletconfig.KubeletConfiguration, error) {
	out := &kubeletconfig.KubeletConfiguration{}
	if err := k.Scheme().Convert(v, out, nil); err != nil {
		return nil, fmt.Errorf("converting the configuration to the internal version: %w", err)
	}
	return out, nil
}
