package greenhouse

// The Go shapes of Greenhouse's greenhouse.sap/v1alpha1 kinds Plugin,
// PluginPreset, PluginDefinition, ClusterPluginDefinition and Cluster, at
// Greenhouse v0.16.0 (its module cannot be imported here): field names,
// JSON tags and types are Greenhouse's, field for field, its JSON wrapper
// (apiextensionsv1.JSON) held as json.RawMessage, and its PluginOptionValue
// and PluginValueFromSource named OptionValue and ValueFrom. A
// ClusterPluginDefinition is decoded into a PluginDefinition: the two
// share their spec, and their statuses have the same fields.

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionType names a kind of condition.
type ConditionType string

// ConditionReason is a short machine-readable cause of a condition.
type ConditionReason string

// Condition is one observed state of an object.
type Condition struct {
	Type               ConditionType          `json:"type"`
	Status             metav1.ConditionStatus `json:"status"`
	Reason             ConditionReason        `json:"reason,omitempty"`
	LastTransitionTime metav1.Time            `json:"lastTransitionTime"`
	Message            string                 `json:"message,omitempty"`
}

// StatusConditions holds an object's conditions, at most one per type.
type StatusConditions struct {
	Conditions []Condition `json:"conditions,omitempty"`
}

// PluginDefinitionReference points at a PluginDefinition or a
// ClusterPluginDefinition.
type PluginDefinitionReference struct {
	Name string `json:"name,omitempty"`
	// Kind tells PluginDefinition from ClusterPluginDefinition.
	Kind string `json:"kind,omitempty"`
}

// HelmChartReference locates a Helm chart.
type HelmChartReference struct {
	Name       string `json:"name"`
	Repository string `json:"repository"`
	Version    string `json:"version"`
}

// SecretKeyReference is one key of a Secret in the object's namespace.
type SecretKeyReference struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// UIApplicationReference locates a plugin's frontend.
type UIApplicationReference struct {
	URL     string `json:"url,omitempty"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

// WaitForItem is one entry of a waitFor list.
type WaitForItem struct {
	PluginRef `json:"pluginRef"`
}

// PluginRef names a Plugin directly or through the PluginPreset that made it.
type PluginRef struct {
	Name         string `json:"name,omitempty"`
	PluginPreset string `json:"pluginPreset,omitempty"`
}

// Plugin is one installation of a plugin definition, on one cluster.
type Plugin struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PluginSpec   `json:"spec,omitempty"`
	Status PluginStatus `json:"status,omitempty"`
}

// PluginSpec is what a Plugin asks for.
type PluginSpec struct {
	PluginDefinitionRef PluginDefinitionReference `json:"pluginDefinitionRef"`
	DisplayName         string                    `json:"displayName,omitempty"`
	OptionValues        []OptionValue             `json:"optionValues,omitempty"`
	// ClusterName is the target cluster; empty means the Greenhouse cluster.
	ClusterName      string `json:"clusterName,omitempty"`
	ReleaseNamespace string `json:"releaseNamespace,omitempty"`
	ReleaseName      string `json:"releaseName,omitempty"`
	// DeletionPolicy is "Delete" or "Retain".
	DeletionPolicy    string             `json:"deletionPolicy,omitempty"`
	WaitFor           []WaitForItem      `json:"waitFor,omitempty"`
	IgnoreDifferences []IgnoreDifference `json:"ignoreDifferences,omitempty"`
}

// OptionValue is one option's value on a Plugin (Greenhouse's
// PluginOptionValue): given inline or taken from a Secret.
type OptionValue struct {
	Name      string           `json:"name"`
	Value     *json.RawMessage `json:"value,omitempty"`
	ValueFrom *ValueFrom       `json:"valueFrom,omitempty"`
}

// ValueFrom says where a Plugin's option value is kept (Greenhouse's
// PluginValueFromSource).
type ValueFrom struct {
	Secret *SecretKeyReference `json:"secret,omitempty"`
}

// ExternalValueSource takes a value from other Plugins or PluginPresets.
type ExternalValueSource struct {
	// Kind is "Plugin" or "PluginPreset"; empty means the referrer's kind.
	Kind string `json:"kind,omitempty"`
	// Name and Selector are alternatives: exactly one is set.
	Name     string                `json:"name,omitempty"`
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Expression is CEL run against the referenced object.
	Expression string `json:"expression"`
}

// IgnoreDifference selects resources and paths left out of drift detection.
type IgnoreDifference struct {
	Group   string   `json:"group,omitempty"`
	Version string   `json:"version,omitempty"`
	Kind    string   `json:"kind,omitempty"`
	Name    string   `json:"name,omitempty"`
	Paths   []string `json:"paths,omitempty"`
}

// PluginStatus is what the controller reports about a Plugin.
type PluginStatus struct {
	HelmReleaseStatus *HelmReleaseStatus      `json:"helmReleaseStatus,omitempty"`
	Version           string                  `json:"version,omitempty"`
	HelmChart         *HelmChartReference     `json:"helmChart,omitempty"`
	UIApplication     *UIApplicationReference `json:"uiApplication,omitempty"`
	Weight            *int32                  `json:"weight,omitempty"`
	Description       string                  `json:"description,omitempty"`
	ExposedServices   map[string]Service      `json:"exposedServices,omitempty"`
	StatusConditions  `json:"statusConditions,omitempty"`
	LastReconciledAt  string   `json:"lastReconciledAt,omitempty"`
	ImageReplication  []string `json:"imageReplication,omitempty"`
}

// ServiceType tells how a service is exposed.
type ServiceType string

// The kinds of exposure.
const (
	ServiceTypeService ServiceType = "service"
	ServiceTypeIngress ServiceType = "ingress"
)

// Service is one service a Plugin exposes.
type Service struct {
	Namespace string      `json:"namespace"`
	Name      string      `json:"name"`
	Port      int32       `json:"port,omitempty"`
	Protocol  *string     `json:"protocol,omitempty"`
	Type      ServiceType `json:"type"`
}

// HelmReleaseStatus describes the Helm release behind a Plugin.
type HelmReleaseStatus struct {
	Status        string      `json:"status"`
	FirstDeployed metav1.Time `json:"firstDeployed,omitempty"`
	LastDeployed  metav1.Time `json:"lastDeployed,omitempty"`
	// PluginOptionChecksum is a hash of the values last applied.
	PluginOptionChecksum string `json:"pluginOptionChecksum,omitempty"`
	Diff                 string `json:"diff,omitempty"`
}

// PluginPreset makes one Plugin per selected cluster.
type PluginPreset struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PluginPresetSpec   `json:"spec,omitempty"`
	Status PluginPresetStatus `json:"status,omitempty"`
}

// PluginPresetSpec is what a PluginPreset asks for.
type PluginPresetSpec struct {
	Plugin                 PluginPresetPluginSpec  `json:"plugin"`
	ClusterSelector        metav1.LabelSelector    `json:"clusterSelector"`
	ClusterOptionOverrides []ClusterOptionOverride `json:"clusterOptionOverrides,omitempty"`
	WaitFor                []WaitForItem           `json:"waitFor,omitempty"`
	// DeletionPolicy is "Delete" or "Retain".
	DeletionPolicy string `json:"deletionPolicy,omitempty"`
}

// PluginPresetPluginSpec is the template for the Plugins a preset makes.
type PluginPresetPluginSpec struct {
	PluginDefinitionRef PluginDefinitionReference       `json:"pluginDefinitionRef"`
	DisplayName         string                          `json:"displayName,omitempty"`
	OptionValues        []PluginPresetPluginOptionValue `json:"optionValues,omitempty"`
	ReleaseNamespace    string                          `json:"releaseNamespace,omitempty"`
	ReleaseName         string                          `json:"releaseName,omitempty"`
	DeletionPolicy      string                          `json:"deletionPolicy,omitempty"`
	IgnoreDifferences   []IgnoreDifference              `json:"ignoreDifferences,omitempty"`
}

// PluginPresetPluginOptionValue is one option's value on a preset.
type PluginPresetPluginOptionValue struct {
	Name      string                             `json:"name"`
	Value     *json.RawMessage                   `json:"value,omitempty"`
	ValueFrom *PluginPresetPluginValueFromSource `json:"valueFrom,omitempty"`
	// Expression is a YAML template whose ${...} parts are CEL.
	Expression *string `json:"expression,omitempty"`
}

// PluginPresetPluginValueFromSource says where a preset's value is kept:
// a Secret or another resource, one of the two.
type PluginPresetPluginValueFromSource struct {
	Secret *SecretKeyReference  `json:"secret,omitempty"`
	Ref    *ExternalValueSource `json:"ref,omitempty"`
}

// ClusterOptionOverride replaces a preset's values for one cluster.
type ClusterOptionOverride struct {
	ClusterName string                          `json:"clusterName"`
	Overrides   []PluginPresetPluginOptionValue `json:"overrides"`
}

// PluginPresetStatus is what the controller reports about a preset.
type PluginPresetStatus struct {
	StatusConditions        `json:"statusConditions,omitempty"`
	PluginStatuses          []ManagedPluginStatus `json:"pluginStatuses,omitempty"`
	TotalPlugins            int                   `json:"totalPlugins,omitempty"`
	ReadyPlugins            int                   `json:"readyPlugins,omitempty"`
	FailedPlugins           int                   `json:"failedPlugins,omitempty"`
	PluginDefinitionVersion string                `json:"pluginDefinitionVersion,omitempty"`
}

// ManagedPluginStatus is the readiness of one Plugin a preset made.
type ManagedPluginStatus struct {
	PluginName     string    `json:"pluginName,omitempty"`
	ReadyCondition Condition `json:"readyCondition,omitempty"`
}

// PluginDefinition is a namespaced plugin definition.
type PluginDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PluginDefinitionSpec   `json:"spec,omitempty"`
	Status PluginDefinitionStatus `json:"status,omitempty"`
}

// ClusterPluginDefinition is a cluster-scoped plugin definition.
type ClusterPluginDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PluginDefinitionSpec          `json:"spec,omitempty"`
	Status ClusterPluginDefinitionStatus `json:"status,omitempty"`
}

// PluginDefinitionSpec describes a plugin and declares its options; both
// definition kinds share it.
type PluginDefinitionSpec struct {
	DisplayName   string                  `json:"displayName,omitempty"`
	Description   string                  `json:"description,omitempty"`
	HelmChart     *HelmChartReference     `json:"helmChart,omitempty"`
	UIApplication *UIApplicationReference `json:"uiApplication,omitempty"`
	Options       []PluginOption          `json:"options,omitempty"`
	Version       string                  `json:"version"`
	Weight        *int32                  `json:"weight,omitempty"`
	Icon          string                  `json:"icon,omitempty"`
	DocsURL       string                  `json:"docsURL,omitempty"`
	// DocMarkDownUrl is superseded by DocsURL.
	DocMarkDownUrl string `json:"docMarkDownUrl,omitempty"` //nolint:stylecheck,revive // name fixed by the API
}

// PluginOptionType is the type of an option's value.
type PluginOptionType string

// The option types.
const (
	TypeBool   PluginOptionType = "bool"
	TypeInt    PluginOptionType = "int"
	TypeString PluginOptionType = "string"
	TypeList   PluginOptionType = "list"
	TypeMap    PluginOptionType = "map"
	TypeSecret PluginOptionType = "secret"
)

// PluginOption is one option a definition declares.
type PluginOption struct {
	Name        string           `json:"name"`
	Default     *json.RawMessage `json:"default,omitempty"`
	Description string           `json:"description,omitempty"`
	DisplayName string           `json:"displayName,omitempty"`
	Required    bool             `json:"required"`
	Type        PluginOptionType `json:"type"`
	// Regex is a pattern a value is checked against.
	Regex string `json:"regex,omitempty"`
}

// ReplicationStatusType is the outcome of copying a chart to a mirror.
type ReplicationStatusType string

// The replication outcomes.
const (
	ReplicationStatusReplicated ReplicationStatusType = "Replicated"
	ReplicationStatusFailed     ReplicationStatusType = "Failed"
	ReplicationStatusSkipped    ReplicationStatusType = "Skipped"
)

// LastSyncedArtifact is the chart last copied to a mirror registry.
type LastSyncedArtifact struct {
	Registry          string                `json:"registry"`
	ChartName         string                `json:"chartName"`
	Version           string                `json:"version"`
	Digest            string                `json:"digest,omitempty"`
	ReplicationStatus ReplicationStatusType `json:"replicationStatus"`
}

// PluginDefinitionStatus is what the controller reports about a
// PluginDefinition.
type PluginDefinitionStatus struct {
	StatusConditions   `json:"statusConditions,omitempty"`
	LastSyncedArtifact *LastSyncedArtifact `json:"lastSyncedArtifact,omitempty"`
}

// ClusterPluginDefinitionStatus is what the controller reports about a
// ClusterPluginDefinition.
type ClusterPluginDefinitionStatus struct {
	StatusConditions   `json:"statusConditions,omitempty"`
	LastSyncedArtifact *LastSyncedArtifact `json:"lastSyncedArtifact,omitempty"`
}

// Cluster is a cluster registered with Greenhouse.
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterSpec   `json:"spec,omitempty"`
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterSpec is how Greenhouse reaches a cluster.
type ClusterSpec struct {
	AccessMode ClusterAccessMode `json:"accessMode"`
	KubeConfig ClusterKubeConfig `json:"kubeConfig,omitempty"`
}

// ClusterAccessMode is how Greenhouse connects to a cluster.
type ClusterAccessMode string

// ClusterAccessModeDirect is the only access mode.
const ClusterAccessModeDirect ClusterAccessMode = "direct"

// ClusterKubeConfig tunes the kubeconfig Greenhouse keeps for a cluster.
type ClusterKubeConfig struct {
	// MaxTokenValidity is in hours.
	MaxTokenValidity int32 `json:"maxTokenValidity,omitempty"`
}

// ClusterStatus is what the controller reports about a cluster.
type ClusterStatus struct {
	KubernetesVersion              string      `json:"kubernetesVersion,omitempty"`
	BearerTokenExpirationTimestamp metav1.Time `json:"bearerTokenExpirationTimestamp,omitempty"`
	StatusConditions               `json:"statusConditions,omitempty"`
	Nodes                          *Nodes          `json:"nodes,omitempty"`
	DiscoveryCache                 *DiscoveryCache `json:"discoveryCache,omitempty"`
}

// DiscoveryCache summarises the API groups a cluster serves.
type DiscoveryCache struct {
	Hash   string   `json:"hash,omitempty"`
	Groups []string `json:"groups,omitempty"`
}

// Nodes counts a cluster's nodes by readiness.
type Nodes struct {
	Total    int          `json:"total,omitempty"`
	Ready    int          `json:"ready,omitempty"`
	NotReady []NodeStatus `json:"notReady,omitempty"`
}

// NodeStatus is one node that is not ready.
type NodeStatus struct {
	Name               string      `json:"name"`
	Message            string      `json:"message,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}
