// Package component holds the internal types of the library tests' versioned
// kind, ComponentConfiguration in group component.example.strata.dev: a
// copy of examples/component's kind as the library's tests were written
// against it, kept here so that the example may change (gain versions,
// defaults, markers) without changing what those tests check.
// Validation works on these types only; the versioned packages v1alpha1
// and v1beta1 hold what users write. Deep copies, defaults registration
// and conversions are generated (make generate).
//
// +k8s:deepcopy-gen=package
// +groupName=component.example.strata.dev
package component
