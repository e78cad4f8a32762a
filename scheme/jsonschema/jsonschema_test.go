package jsonschema_test

import (
	"strings"
	"testing"

	configscheme "github.com/stratacfg/strata/internal/testkind/component/scheme"
	"github.com/stratacfg/strata/internal/testkind/component/v1beta1"
	"github.com/stratacfg/strata/scheme/jsonschema"
)

// TestSchemaOfTheTestKind builds the schema of the library tests' kind
// and checks what it says of each sort of field, and what it refuses.
func TestSchemaOfTheTestKind(t *testing.T) {
	k, err := configscheme.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := jsonschema.LoadDocs(k)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jsonschema.For(k, v1beta1.SchemeGroupVersion, docs)
	if err != nil {
		t.Fatal(err)
	}
	port := s.Properties["port"]
	if !port.Type.Contains("integer") || !port.Type.Contains("null") || !strings.HasPrefix(port.Description, "Port is the port") {
		t.Errorf("port: %+v", port.SchemaProps)
	}
	if sync := s.Properties["syncFrequency"]; !sync.Type.Contains("string") {
		t.Errorf("syncFrequency, a metav1.Duration: %+v", sync.SchemaProps)
	}
	if gates := s.Properties["featureGates"]; gates.AdditionalProperties == nil || !gates.AdditionalProperties.Schema.Type.Contains("boolean") {
		t.Errorf("featureGates: %+v", gates.SchemaProps)
	}
	if kc := s.Properties["clientConnection"].Properties["kubeconfig"]; kc.Extensions["x-strata-markers"] == nil {
		t.Errorf("clientConnection.kubeconfig has no markers: %+v", kc)
	}
	if s.Schema != "http://json-schema.org/draft-04/schema#" {
		t.Errorf("$schema %q", s.Schema)
	}
	const beta = "apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\n"
	if errs := jsonschema.Validate(s, []byte(beta+"port: null\nsyncFrequency: 30s\nfeatureGates: {A: true}\n")); len(errs) > 0 {
		t.Errorf("a valid document: %q", errs)
	}
	for doc, want := range map[string]string{
		beta + "porrt: 1\n":                 "porrt",
		beta + "port: \"1\"\n":              "port",
		beta + "featureGates: {A: 1}\n":     "featureGates.A",
		beta + "clientConnection: []\n":     "clientConnection",
		"apiVersion: v1\nkind: ConfigMap\n": "apiVersion",
	} {
		if errs := jsonschema.Validate(s, []byte(doc)); !strings.Contains(strings.Join(errs, ";"), want) {
			t.Errorf("%q: errors %q, want one naming %s", doc, errs, want)
		}
	}
}
