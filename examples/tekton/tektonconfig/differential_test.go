package tektonconfig_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tektoncd/pipeline/pkg/apis/config"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/examples/tekton/tektonconfig"
	"github.com/stratacfg/strata/layers/namespaced"
)

// tektonTestdata returns the directory of Tekton's own test ConfigMaps in
// the pinned module, as the module proxy serves it.
func tektonTestdata(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/tektoncd/pipeline").Output()
	if err != nil {
		t.Fatalf("locating github.com/tektoncd/pipeline: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "pkg", "apis", "config", "testdata")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("Tekton's testdata: %v", err)
	}
	return dir
}

// TestTektonTestdata runs every config-defaults and feature-flags
// ConfigMap of Tekton's own tests through strata as the cluster layer, and
// requires what Tekton's constructor gives on the same data: the same
// struct, or an error in both.
func TestTektonTestdata(t *testing.T) {
	dir := tektonTestdata(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := namespaced.NewDryRun(tektonconfig.Options(tektonconfig.SystemNamespace))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".yaml")
		var section string
		switch {
		case strings.HasPrefix(base, "config-defaults"):
			section = tektonconfig.DefaultsSection
		case strings.HasPrefix(base, "feature-flags"):
			section = tektonconfig.FeatureFlagsSection
		default:
			continue // other constructors' files
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal(data, &cm); err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		cm.Namespace, cm.Name = tektonconfig.SystemNamespace, section

		var want any
		var wantErr error
		if section == tektonconfig.DefaultsSection {
			want, wantErr = config.NewDefaultsFromMap(cm.Data)
		} else {
			want, wantErr = config.NewFeatureFlagsFromMap(cm.Data)
		}
		s, err := r.Resolve("team", []runtime.Object{&cm})
		checked++
		switch {
		case wantErr != nil && err == nil:
			t.Errorf("%s: Tekton refuses it (%v), strata takes it", base, wantErr)
		case wantErr == nil && err != nil:
			t.Errorf("%s: Tekton takes it, strata refuses it: %v", base, err)
		case wantErr != nil:
			if !strings.Contains(err.Error(), wantErr.Error()) {
				t.Errorf("%s: strata's error %q does not carry Tekton's %q", base, err, wantErr)
			}
		default:
			var got any = s.Object.Defaults
			if section == tektonconfig.FeatureFlagsSection {
				got = s.Object.FeatureFlags
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: strata gives\n%+v\nTekton gives\n%+v", base, got, want)
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d of Tekton's test ConfigMaps checked", checked)
	}
	t.Logf("%d of Tekton's test ConfigMaps agree", checked)
}
