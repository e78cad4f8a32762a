// Package v1alpha1 is the configuration of the example controller: the
// per-namespace defaults it gives batch/v1 Jobs, kept in flat ConfigMap keys
// as Tekton's config-defaults keeps the defaults of TaskRuns. The version is
// its own hub. The +k8s: tags of its fields are its declarative validation,
// which validation-gen generates (make generate).
//
// +k8s:validation-gen=TypesWithField=TypeMeta
package v1alpha1
