// Package greenhouse computes the effective option values of Greenhouse
// Plugins with strata: a PluginDefinition's defaults, a PluginPreset's
// values (or a standalone Plugin's own), the preset's override for the
// Plugin's cluster, and PluginOverrides selected by cluster and plugin
// definition, in the order Greenhouse's ADR 007 declares, each value
// saying where it came from.
//
// The types of Greenhouse's kinds follow its greenhouse.sap/v1alpha1 API
// at v0.16.0 field for field (api.go); PluginOverride, the ADR's kind
// that Greenhouse does not ship, is the example's own.
package greenhouse

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is Greenhouse's API group and version.
var Group = schema.GroupVersion{Group: "greenhouse.sap", Version: "v1alpha1"}

// Resources of the kinds read, by kind.
var Resources = map[string]schema.GroupVersionResource{
	KindPluginDefinition:        Group.WithResource("plugindefinitions"),
	KindClusterPluginDefinition: Group.WithResource("clusterplugindefinitions"),
	KindPluginPreset:            Group.WithResource("pluginpresets"),
	KindPlugin:                  Group.WithResource("plugins"),
	KindCluster:                 Group.WithResource("clusters"),
	KindPluginOverride:          Group.WithResource("pluginoverrides"),
}

// The kinds.
const (
	KindPluginDefinition        = "PluginDefinition"
	KindClusterPluginDefinition = "ClusterPluginDefinition"
	KindPluginPreset            = "PluginPreset"
	KindPlugin                  = "Plugin"
	KindCluster                 = "Cluster"
	KindPluginOverride          = "PluginOverride"
)

// LabelPluginPreset marks the Plugins a PluginPreset's controller made:
// the preset's name. A Plugin without it is standalone.
const LabelPluginPreset = "greenhouse.sap/pluginpreset"

// PluginOverride is the ADR's override scoped by cluster and plugin
// definition.
type PluginOverride struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		PluginDefinitionNames []string        `json:"pluginDefinitionNames,omitempty"`
		ClusterSelector       ClusterSelector `json:"clusterSelector,omitempty"`
		Overrides             []OverrideValue `json:"overrides,omitempty"`
	} `json:"spec"`
}

// OverrideValue is one value of a PluginOverride: an option's whole
// value, as an OptionValue gives it, or, with Path, a value set inside a
// map option's value (the ADR's path), which leaves the rest of the value
// as the layers below give it. Path is a JSON pointer into the value
// ("/resources/limits/cpu"), where the value is set.
type OverrideValue struct {
	OptionValue `json:",inline"`
	Path        string `json:"path,omitempty"`
}

// ClusterSelector selects clusters by labels and names.
type ClusterSelector struct {
	LabelSelector  *metav1.LabelSelector `json:"labelSelector,omitempty"`
	ClusterNames   []string              `json:"clusterNames,omitempty"`
	IgnoreClusters []string              `json:"ignoreClusters,omitempty"`
}

// Objects are the objects a computation reads. Implementations read a
// directory of manifests or a cluster; none reads Secrets.
type Objects interface {
	Plugin(namespace, name string) (*Plugin, error)
	// Definition returns the definition ref names for a Plugin in
	// namespace.
	Definition(namespace string, ref PluginDefinitionReference) (*PluginDefinition, error)
	PluginPreset(namespace, name string) (*PluginPreset, error)
	Cluster(namespace, name string) (*Cluster, error)
	PluginOverrides(namespace string) ([]*PluginOverride, error)
	// ListPlugins and ListPluginPresets return those of namespace, for a
	// valueFrom.ref's selector.
	ListPlugins(namespace string) ([]*Plugin, error)
	ListPluginPresets(namespace string) ([]*PluginPreset, error)
}
