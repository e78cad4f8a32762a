package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/stratacfg/strata/examples/controller/apis/defaults/v1alpha1"
	"github.com/stratacfg/strata/scheme/jsonschema"
)

// TestManifestsMatchTheSchema validates the data of every strata ConfigMap
// in testdata/manifests against the committed schema of JobDefaults, as a
// CI job of a cluster's operators would before applying them: team-c's
// negative TTL is the one problem, and a misspelt key and a wrong type
// fail.
func TestManifestsMatchTheSchema(t *testing.T) {
	k, err := v1alpha1.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("schemas", "defaults.example.strata.dev", "jobdefaults_v1alpha1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s spec.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/manifests/*.yaml")
	problems := map[string][]string{}
	n := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			var cm corev1.ConfigMap
			if err := dec.Decode(&cm); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			if cm.Kind != "ConfigMap" || (cm.Name != ClusterConfigMap && cm.Name != OverridesName) {
				continue
			}
			n++
			if p := jsonschema.ValidateConfigMap(&s, k, cm.Data); len(p) > 0 {
				problems[cm.Namespace+"/"+cm.Name] = p
			}
		}
	}
	if n < 4 {
		t.Fatalf("%d strata ConfigMaps in testdata/manifests", n)
	}
	if len(problems) != 1 || !strings.Contains(strings.Join(problems["team-c/"+OverridesName], ";"), "default-ttl-seconds-after-finished") {
		t.Errorf("problems %q, want team-c's TTL alone", problems)
	}
	for name, cm := range map[string]map[string]string{
		"default-timeout-second":      {"default-timeout-second": "60"},
		"default-timeout-seconds":     {"default-timeout-seconds": "an hour"},
		"namespace-config-cache-size": {"namespace-config-cache-size": "0"},
	} {
		if p := jsonschema.ValidateConfigMap(&s, k, cm); !strings.Contains(strings.Join(p, ";"), name) {
			t.Errorf("%v: problems %q, want one naming %s", cm, p, name)
		}
	}
}
