// Package v1 holds the policy.example.strata.dev/v1 kinds that the manifests
// example loads from a directory: Policy and PolicyBinding.
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Policy is a named rule.
type Policy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PolicySpec `json:"spec"`
}

// PolicySpec is what a Policy says.
type PolicySpec struct {
	// Rule is the policy's rule; required.
	Rule string `json:"rule"`
}

// PolicyBinding applies a Policy.
type PolicyBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PolicyBindingSpec `json:"spec"`
}

// PolicyBindingSpec names the Policy a binding applies.
type PolicyBindingSpec struct {
	// PolicyName names a Policy in the same set; required.
	PolicyName string `json:"policyName"`
}
