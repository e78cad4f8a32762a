package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the kinds' API group.
const GroupName = "policy.example.strata.dev"

// SchemeGroupVersion is policy.example.strata.dev/v1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// AddToScheme registers Policy and PolicyBinding.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &Policy{}, &PolicyBinding{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
