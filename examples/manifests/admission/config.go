package admission

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	genericadmission "k8s.io/apiserver/pkg/admission"
	policyconfig "k8s.io/apiserver/pkg/admission/plugin/policy/config"
	webhookconfig "k8s.io/apiserver/pkg/admission/plugin/webhook/config"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	apiserverv1alpha1 "k8s.io/apiserver/pkg/apis/apiserver/v1alpha1"
)

// PluginDir is the static manifest directory an AdmissionConfiguration
// gives one plugin.
type PluginDir struct {
	Plugin string
	Dir    string
}

// configScheme reads AdmissionConfiguration as kube-apiserver's admission
// options do: apiserver.config.k8s.io v1alpha1 and v1, into the internal
// type.
var configScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(apiserverapi.AddToScheme(s))
	utilruntime.Must(apiserverv1alpha1.AddToScheme(s))
	utilruntime.Must(apiserverv1.AddToScheme(s))
	return s
}()

// ReadConfig reads file, kube-apiserver's --admission-control-config-file,
// with kube-apiserver's own code (k8s.io/apiserver v0.37.2): the
// AdmissionConfiguration by admission.ReadAdmissionConfiguration, each
// plugin's configuration inline or from its path (a relative path read
// against the file's directory), and each plugin's staticManifestsDir by
// that plugin's own configuration loader, which validates it as
// kube-apiserver does at start-up. It returns the plugins that name a
// directory, in the order of Plugins, and the problems across plugins
// that kube-apiserver does not report: a plugin configured twice (it
// takes the first entry), and a directory two plugins share (each
// plugin's loader refuses the other's kinds, or both load nothing). An
// error names the file and the plugin.
func ReadConfig(file string) ([]PluginDir, []string, error) {
	decoded, err := decodeConfig(file)
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	seen := map[string]bool{}
	for _, p := range decoded.Plugins {
		if !slices.Contains(Plugins, p.Name) {
			continue
		}
		if seen[p.Name] {
			problems = append(problems, fmt.Sprintf("%s: plugin %s is configured twice: kube-apiserver takes the first entry", file, p.Name))
			continue
		}
		seen[p.Name] = true
		// kube-apiserver exits (klog.Fatalf) on a path it cannot read:
		// say which first.
		if p.Configuration == nil && p.Path != "" {
			path := p.Path
			if !filepath.IsAbs(path) {
				path = filepath.Join(filepath.Dir(file), path)
			}
			if _, err := os.ReadFile(path); err != nil {
				return nil, nil, fmt.Errorf("%s: plugin %s: its configuration cannot be read: %w", file, p.Name, err)
			}
		}
	}
	provider, err := genericadmission.ReadAdmissionConfiguration(Plugins, file, configScheme)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []PluginDir
	var reals []string // each directory of out, its links resolved
	byDir := map[string][]string{}
	for _, plugin := range Plugins {
		r, err := provider.ConfigFor(plugin)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: plugin %s: %w", file, plugin, err)
		}
		if r == nil {
			continue
		}
		dir, err := staticManifestsDir(plugin, r)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: plugin %s: %w", file, plugin, err)
		}
		if dir == "" {
			continue
		}
		out = append(out, PluginDir{Plugin: plugin, Dir: dir})
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			real = filepath.Clean(dir)
		}
		byDir[real] = append(byDir[real], plugin)
		reals = append(reals, real)
	}
	for i, pd := range out {
		if plugins := byDir[reals[i]]; len(plugins) > 1 && plugins[0] == pd.Plugin {
			problems = append(problems, fmt.Sprintf("%s: directory %s is the staticManifestsDir of %s: each plugin's loader refuses the kinds of the others", file, reals[i], strings.Join(plugins, " and ")))
		}
	}
	return out, problems, nil
}

// decodeConfig decodes file as ReadAdmissionConfiguration does, for the
// entries it resolves.
func decodeConfig(file string) (*apiserverapi.AdmissionConfiguration, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	obj, err := runtime.Decode(serializer.NewCodecFactory(configScheme, serializer.EnableStrict).UniversalDecoder(), data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	cfg, ok := obj.(*apiserverapi.AdmissionConfiguration)
	if !ok {
		return nil, fmt.Errorf("%s: a %T, not an AdmissionConfiguration", file, obj)
	}
	return cfg, nil
}

// staticManifestsDir reads plugin's configuration from r with the loader
// the plugin itself uses.
func staticManifestsDir(plugin string, r io.Reader) (string, error) {
	switch plugin {
	case ValidatingAdmissionPolicy:
		c, err := policyconfig.LoadValidatingConfig(r)
		return c.StaticManifestsDir, err
	case MutatingAdmissionPolicy:
		c, err := policyconfig.LoadMutatingConfig(r)
		return c.StaticManifestsDir, err
	default: // the webhooks
		c, err := webhookconfig.LoadConfig(r)
		if err != nil {
			return "", err
		}
		return c.StaticManifestsDir, nil
	}
}

// NameConflicts returns, sorted, each name two plugins' sets both use
// (sets by plugin, each a list of "Kind/name"), which kube-apiserver
// accepts, but which makes an admission decision's or a metric's name
// ambiguous between plugins.
func NameConflicts(sets map[string][]string) []string {
	owners := map[string][]string{}
	for _, plugin := range Plugins {
		for _, kn := range sets[plugin] {
			_, name, _ := strings.Cut(kn, "/")
			if owners[name] == nil || owners[name][len(owners[name])-1] != plugin {
				owners[name] = append(owners[name], plugin)
			}
		}
	}
	var out []string
	for name, plugins := range owners {
		if len(plugins) > 1 {
			out = append(out, fmt.Sprintf("name %s is used by the sets of %s", name, strings.Join(plugins, " and ")))
		}
	}
	slices.Sort(out)
	return out
}
