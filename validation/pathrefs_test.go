package validation

import (
	"reflect"
	"testing"
)

// internalConfig mimics an internal type with no JSON tags and a function
// that lists its path fields, as kubelet's does.
type internalConfig struct {
	StaticPodPath string
	Name          string
	Auth          struct {
		X509 struct{ ClientCAFile string }
	}
}

type versionedConfig struct {
	StaticPodPath string `json:"staticPodPath,omitempty"`
	Name          string `json:"name"`
	Auth          struct {
		X509 *struct {
			ClientCAFile string `json:"clientCAFile"`
		} `json:"x509"`
	} `json:"authentication"`
}

func TestPathRefs(t *testing.T) {
	got, err := PathRefs(func(c *internalConfig) []*string {
		return []*string{&c.StaticPodPath, &c.Auth.X509.ClientCAFile}
	}, reflect.TypeFor[*versionedConfig]())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Marker{"/staticPodPath": Path, "/authentication/x509/clientCAFile": Path}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PathRefs = %v, want %v", got, want)
	}
	outside := "elsewhere"
	if _, err := PathRefs(func(*internalConfig) []*string { return []*string{&outside} }, reflect.TypeFor[versionedConfig]()); err == nil {
		t.Error("a reference outside the object was accepted")
	}
	type other struct{ Name string }
	if _, err := PathRefs(func(c *internalConfig) []*string { return []*string{&c.StaticPodPath} }, reflect.TypeFor[other]()); err == nil {
		t.Error("a field the versioned type lacks was accepted")
	}
}
