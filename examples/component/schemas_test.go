package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/scheme/jsonschema"
)

// loadSchema reads the committed schema of the example's kind in version.
func loadSchema(t *testing.T, version string) *spec.Schema {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("schemas", "component.example.strata.dev", "componentconfiguration_"+version+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var s spec.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// TestTestdataMatchesSchemas validates every configuration file of
// testdata against the committed schema of its version (a drop-in that
// names none, against the merge version's), and checks that the schema
// refuses what the component refuses: a misspelt field, a wrong type, a
// value out of range or outside an enum, a removed field.
func TestTestdataMatchesSchemas(t *testing.T) {
	schemas := map[string]*spec.Schema{}
	for _, v := range []string{"v1beta1", "v1alpha1"} {
		schemas["component.example.strata.dev/"+v] = loadSchema(t, v)
	}
	var files []string
	err := filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".conf")) {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) < 5 {
		t.Fatalf("%d testdata files: %v", len(files), err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := yaml.Unmarshal(data, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.APIVersion == "" {
			meta.APIVersion = "component.example.strata.dev/v1beta1"
		}
		s := schemas[meta.APIVersion]
		if s == nil {
			t.Errorf("%s: no schema for %s", f, meta.APIVersion)
			continue
		}
		if errs := jsonschema.Validate(s, data); len(errs) > 0 {
			t.Errorf("%s does not match the schema of %s: %s", f, meta.APIVersion, strings.Join(errs, "; "))
		}
	}

	v1beta1 := schemas["component.example.strata.dev/v1beta1"]
	for _, tc := range []struct{ doc, want string }{
		{beta + "prot: 9443\n", "prot"},
		{beta + "port: eighty\n", "port"},
		{beta + "port: 70000\n", "port"},
		{beta + "enableProfiling: \"yes\"\n", "enableProfiling"},
		{beta + "clientConnection:\n  qsp: 5\n", "qsp"},
		{beta + "cgroupDriver: sometimes\n", "cgroupDriver"},
		{beta + "clientConnection:\n  burst: -1\n", "burst"},
		{beta + "clientConnection:\n  burst: 3000000000\n", "burst"}, // over int32, which the decoder refuses
		{beta + "profiling: false\n", "profiling"},
		{beta + "featureGates:\n  AlphaThing: maybe\n", "AlphaThing"},
		{"apiVersion: component.example.strata.dev/v1alpha1\nkind: ComponentConfiguration\n", "apiVersion"},
	} {
		errs := jsonschema.Validate(v1beta1, []byte(tc.doc))
		if len(errs) == 0 || !strings.Contains(strings.Join(errs, "; "), tc.want) {
			t.Errorf("%q: schema errors %q, want one naming %s", tc.doc, errs, tc.want)
		}
	}
	// A null removes what a lower layer set, and is valid everywhere.
	if errs := jsonschema.Validate(v1beta1, []byte(beta+"port: null\nclientConnection:\n  qps: null\nallowedOrigins: []\n")); len(errs) > 0 {
		t.Errorf("nulls and an empty list: %q", errs)
	}
}
