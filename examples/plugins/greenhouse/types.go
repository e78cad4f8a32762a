// Package greenhouse computes the effective option values of Greenhouse
// Plugins with strata: a PluginDefinition's defaults, a PluginPreset's
// values (or a standalone Plugin's own), the preset's override for the
// Plugin's cluster, and PluginOverrides selected by cluster and plugin
// definition, in the order Greenhouse's ADR 007 declares, each value
// saying where it came from.
//
// The types are the fields of Greenhouse's greenhouse.sap/v1alpha1 kinds
// that the computation reads (Greenhouse v0.16 names them so), plus the
// ADR's PluginOverride; they are decoded from unstructured objects, so
// that anything else a real Greenhouse object holds is left alone.
package greenhouse

import (
	"encoding/json"

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

// The types of PluginOption.
const (
	TypeBool   = "bool"
	TypeInt    = "int"
	TypeString = "string"
	TypeList   = "list"
	TypeMap    = "map"
	TypeSecret = "secret"
)

// PluginDefinition (or ClusterPluginDefinition) declares a plugin's
// options.
type PluginDefinition struct {
	Kind              string `json:"kind"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Options []PluginOption `json:"options,omitempty"`
	} `json:"spec"`
}

// PluginOption is one option of a PluginDefinition.
type PluginOption struct {
	Name     string           `json:"name"`
	Type     string           `json:"type"`
	Default  *json.RawMessage `json:"default,omitempty"`
	Required bool             `json:"required"`
}

// OptionValue is one option's value: given (Value) or referenced
// (ValueFrom), exactly one of them.
type OptionValue struct {
	Name      string           `json:"name"`
	Value     *json.RawMessage `json:"value,omitempty"`
	ValueFrom *ValueFrom       `json:"valueFrom,omitempty"`
}

// ValueFrom names where a value is kept.
type ValueFrom struct {
	Secret *SecretKeyReference `json:"secret,omitempty"`
}

// SecretKeyReference is a key of a Secret in the object's namespace.
type SecretKeyReference struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// PluginDefinitionReference names a Plugin's definition.
type PluginDefinitionReference struct {
	Name string `json:"name,omitempty"`
	Kind string `json:"kind,omitempty"`
}

// PluginPreset makes a Plugin per selected cluster.
type PluginPreset struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Plugin struct {
			PluginDefinitionRef PluginDefinitionReference `json:"pluginDefinitionRef"`
			OptionValues        []OptionValue             `json:"optionValues,omitempty"`
		} `json:"plugin"`
		ClusterSelector        metav1.LabelSelector    `json:"clusterSelector"`
		ClusterOptionOverrides []ClusterOptionOverride `json:"clusterOptionOverrides,omitempty"`
	} `json:"spec"`
}

// ClusterOptionOverride is a preset's values for one cluster.
type ClusterOptionOverride struct {
	ClusterName string        `json:"clusterName"`
	Overrides   []OptionValue `json:"overrides"`
}

// Plugin is a plugin on one cluster.
type Plugin struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		PluginDefinitionRef PluginDefinitionReference `json:"pluginDefinitionRef"`
		ClusterName         string                    `json:"clusterName,omitempty"`
		OptionValues        []OptionValue             `json:"optionValues,omitempty"`
	} `json:"spec"`
}

// Cluster is a cluster, selected by its labels.
type Cluster struct {
	metav1.ObjectMeta `json:"metadata"`
}

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
}
