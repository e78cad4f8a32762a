package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stratacfg/strata/scheme"
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

// NewKind returns the strata kind that decodes both kinds of the group
// (decode with scheme.DecodeOptions.AnyKind) and validates them; v1 is its
// own hub.
func NewKind() (*scheme.Kind, error) {
	return scheme.New(scheme.Config{
		Group: GroupName, Kind: "Policy", Hub: "v1",
		Versions: []scheme.Version{{Version: "v1", AddToScheme: AddToScheme}},
		Validate: Validate,
	})
}
