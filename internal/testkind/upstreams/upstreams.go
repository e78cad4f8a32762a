// Package upstreams is a configuration kind with a list keyed by name
// (`strata:"list-map-key=name"`), a set (`strata:"list-type=set"`) and an
// appended list (`strata:"list-type=append"`), for the tests of lists in
// layers and in the JSON Schema.
package upstreams

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stratacfg/strata/scheme"
)

// Upstreams is the kind: a keyed list, a set, an appended list and a
// plain field.
type Upstreams struct {
	metav1.TypeMeta `json:",inline"`
	Upstreams       []Upstream `json:"upstreams,omitempty" strata:"list-map-key=name"`
	Tags            []string   `json:"tags,omitempty" strata:"list-type=set"`
	Hooks           []string   `json:"hooks,omitempty" strata:"list-type=append"`
	Retries         int32      `json:"retries,omitempty"`
}

// Upstream is an element of the keyed list.
type Upstream struct {
	Name    string `json:"name"`
	URL     string `json:"url,omitempty" strata:"not-path"`
	Weight  int32  `json:"weight,omitempty"`
	Enabled *bool  `json:"enabled,omitempty"`
}

// DeepCopyObject copies in.
func (in *Upstreams) DeepCopyObject() runtime.Object {
	out := *in
	out.Tags, out.Hooks = slices.Clone(in.Tags), slices.Clone(in.Hooks)
	out.Upstreams = make([]Upstream, len(in.Upstreams))
	for i, u := range in.Upstreams {
		out.Upstreams[i] = u
		if u.Enabled != nil {
			out.Upstreams[i].Enabled = new(*u.Enabled)
		}
	}
	return &out
}

// GroupVersion is the kind's one version.
var GroupVersion = schema.GroupVersion{Group: "lists.test.strata.dev", Version: "v1"}

// Config is the kind's scheme.Config; a test adds what it needs (Validate)
// before scheme.New.
func Config() scheme.Config {
	return scheme.Config{
		Group: GroupVersion.Group, Kind: "Upstreams", Hub: "v1",
		Versions: []scheme.Version{{Version: "v1", AddToScheme: func(s *runtime.Scheme) error {
			s.AddKnownTypeWithName(GroupVersion.WithKind("Upstreams"), &Upstreams{})
			return nil
		}}},
	}
}
