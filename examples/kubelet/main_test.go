package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/stratacfg/strata/internal/watchtest"
)

const h = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

var pristine = utilfeature.DefaultMutableFeatureGate.DeepCopy()

// kubeletConfig runs the command as a fresh process would: feature gates
// at their defaults.
func kubeletConfig(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	utilfeature.DefaultMutableFeatureGate = pristine.DeepCopy()
	utilfeature.DefaultFeatureGate = utilfeature.DefaultMutableFeatureGate
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func files(t *testing.T, fs map[string]string) string {
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, fs)
	return dir
}

// printed decodes --print-config's output: one v1beta1
// KubeletConfiguration JSON object.
func printed(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&m); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if m["apiVersion"] != "kubelet.config.k8s.io/v1beta1" || m["kind"] != "KubeletConfiguration" {
		t.Fatalf("apiVersion %v kind %v", m["apiVersion"], m["kind"])
	}
	return m
}

func TestPrintConfig(t *testing.T) {
	dir := files(t, map[string]string{
		"kubelet.yaml":   h + "port: 9090\nstaticPodPath: manifests\n",
		"conf.d/10.conf": h + "readOnlyPort: 0\nkubeReserved: {cpu: 200m}\n",
	})
	for _, profile := range []string{"", "kubelet", "strata"} {
		args := []string{"--config", filepath.Join(dir, "kubelet.yaml"), "--config-dir", filepath.Join(dir, "conf.d"), "--max_pods=50", "--kube-reserved=memory=1Gi", "--print-config"}
		if profile != "" {
			args = append([]string{"--profile", profile}, args...)
		}
		code, out, errOut := kubeletConfig(t, args...)
		if code != 0 {
			t.Fatalf("profile %q: exit %d: %s", profile, code, errOut)
		}
		m := printed(t, out)
		if m["port"] != 9090.0 || m["maxPods"] != 50.0 || m["staticPodPath"] != filepath.Join(dir, "manifests") || m["readOnlyPort"] != nil {
			t.Errorf("profile %q: port %v maxPods %v staticPodPath %v readOnlyPort %v", profile, m["port"], m["maxPods"], m["staticPodPath"], m["readOnlyPort"])
		}
		if kr := m["kubeReserved"].(map[string]any); len(kr) != 1 || kr["memory"] != "1Gi" {
			t.Errorf("profile %q: kubeReserved %v: --kube-reserved replaces the map", profile, kr)
		}
		if eh, _ := m["evictionHard"].(map[string]any); eh["memory.available"] != "100Mi" {
			t.Errorf("profile %q: evictionHard %v, want kubelet's defaults", profile, eh)
		}
	}
}

// TestErrors: nothing on stdout, the file or flag and the problem on
// stderr, exit non-zero.
func TestErrors(t *testing.T) {
	dir := files(t, map[string]string{
		"bad-port.yaml":  h + "port: eighty\n",
		"invalid.yaml":   h + "imageGCHighThresholdPercent: 101\n",
		"conf.d/10.conf": "port: 1\n",
		"typo.yaml":      h + "prot: 1\n",
	})
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--config", filepath.Join(dir, "bad-port.yaml")}, 1, []string{"bad-port.yaml", "port"}},
		{[]string{"--config", filepath.Join(dir, "invalid.yaml")}, 1, []string{"invalid.yaml", "imageGCHighThresholdPercent"}},
		{[]string{"--config", filepath.Join(dir, "missing.yaml")}, 1, []string{"missing.yaml", "no such file"}},
		{[]string{"--config-dir", filepath.Join(dir, "conf.d")}, 1, []string{"10.conf", "kind"}},
		{[]string{"--image-gc-high-threshold=101"}, 1, []string{"--image-gc-high-threshold", "imageGCHighThresholdPercent"}},
		{[]string{"--no-such-flag"}, 1, []string{"unknown flag: --no-such-flag"}},
		{[]string{"--profile", "strata", "--config", filepath.Join(dir, "typo.yaml")}, 1, []string{"typo.yaml", `unknown field "prot"`}},
		{[]string{"--profile", "strata", "--no-such-flag"}, 2, []string{"unknown flag: --no-such-flag"}},
		{[]string{"--profile", "nope"}, 2, []string{`--profile "nope"`}},
	} {
		code, out, errOut := kubeletConfig(t, append(tc.args, "--print-config")...)
		if code != tc.code || out != "" {
			t.Errorf("%v: exit %d, stdout %q; want %d and nothing", tc.args, code, out, tc.code)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, errOut, w)
			}
		}
	}
	// The kubelet profile takes the file kubelet takes, with a warning.
	if code, out, errOut := kubeletConfig(t, "--config", filepath.Join(dir, "typo.yaml"), "--print-config"); code != 0 || out == "" || !strings.Contains(errOut, `unknown field "prot"`) {
		t.Errorf("kubelet profile, an unknown field: exit %d, stderr %q", code, errOut)
	}
}

// TestExplain names the layer behind each key.
func TestExplain(t *testing.T) {
	dir := files(t, map[string]string{
		"kubelet.yaml":   h + "port: 9090\n",
		"conf.d/10.conf": h + "maxPods: 20\n",
	})
	for _, profile := range []string{"kubelet", "strata"} {
		code, out, errOut := kubeletConfig(t, "--profile", profile, "--config", filepath.Join(dir, "kubelet.yaml"), "--config-dir", filepath.Join(dir, "conf.d"), "--read-only-port=0", "--explain")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", profile, code, errOut)
		}
		var e struct {
			Config     map[string]any `json:"config"`
			Provenance map[string]struct {
				Source string `json:"source"`
			} `json:"provenance"`
		}
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatal(err)
		}
		for key, want := range map[string]string{
			"/port":                          "file " + filepath.Join(dir, "kubelet.yaml"),
			"/maxPods":                       "drop-in " + filepath.Join(dir, "conf.d", "10.conf"),
			"/syncFrequency":                 "default",
			"/evictionHard/memory.available": "default",
		} {
			if got := e.Provenance[key].Source; !strings.HasPrefix(got, want) {
				t.Errorf("%s: %s from %q, want %q", profile, key, got, want)
			}
		}
		if _, ok := e.Config["readOnlyPort"]; ok {
			t.Errorf("%s: readOnlyPort %v", profile, e.Config["readOnlyPort"])
		}
	}
}

// TestProfilesDiffer shows, case by case, where the strata profile is
// stricter than kubelet (docs/KUBELET.md lists them).
func TestProfilesDiffer(t *testing.T) {
	for _, tc := range []struct {
		name          string
		files         map[string]string
		args          []string
		kubelet       func(m map[string]any) bool
		strata        func(m map[string]any) bool // nil: the strata profile refuses it
		strataRefuses string
	}{
		{name: "a relative path in a drop-in", files: map[string]string{"conf.d/10.conf": h + "staticPodPath: manifests\n"}, args: []string{"--config-dir", "$DIR/conf.d"},
			kubelet: func(m map[string]any) bool { return m["staticPodPath"] == "manifests" },
			strata: func(m map[string]any) bool {
				return strings.HasSuffix(m["staticPodPath"].(string), "/conf.d/manifests")
			}},
		{name: "a dot-file drop-in", files: map[string]string{"conf.d/.10.conf": h + "maxPods: 7\n"}, args: []string{"--config-dir", "$DIR/conf.d"},
			kubelet: func(m map[string]any) bool { return m["maxPods"] == 7.0 },
			strata:  func(m map[string]any) bool { return m["maxPods"] == 110.0 }},
		{name: "a drop-in in a subdirectory", files: map[string]string{"conf.d/sub/10.conf": h + "maxPods: 7\n"}, args: []string{"--config-dir", "$DIR/conf.d"},
			kubelet: func(m map[string]any) bool { return m["maxPods"] == 7.0 },
			strata:  func(m map[string]any) bool { return m["maxPods"] == 110.0 }},
		{name: "a mis-cased key in a drop-in", files: map[string]string{"conf.d/10.conf": h + "StaticPodPath: /etc/kubernetes/manifests\n"}, args: []string{"--config-dir", "$DIR/conf.d"},
			kubelet: func(m map[string]any) bool { return m["staticPodPath"] == "/etc/kubernetes/manifests" }, strataRefuses: `unknown field "StaticPodPath"`},
		{name: "a drop-in without apiVersion and kind", files: map[string]string{"conf.d/10.conf": "maxPods: 7\n"}, args: []string{"--config-dir", "$DIR/conf.d"},
			strata: func(m map[string]any) bool { return m["maxPods"] == 7.0 }},
		{name: "--vmodule over the file's", files: map[string]string{"kubelet.yaml": h + "logging: {vmodule: [{filePattern: a, verbosity: 1}]}\n"}, args: []string{"--config", "$DIR/kubelet.yaml", "--vmodule=b=2"},
			kubelet: func(m map[string]any) bool { return len(m["logging"].(map[string]any)["vmodule"].([]any)) == 2 },
			strata:  func(m map[string]any) bool { return len(m["logging"].(map[string]any)["vmodule"].([]any)) == 1 }},
		{name: "a derived default after a drop-in", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "nodeStatusUpdateFrequency: 20s\n"}, args: []string{"--config", "$DIR/kubelet.yaml", "--config-dir", "$DIR/conf.d"},
			kubelet: func(m map[string]any) bool { return m["nodeStatusReportFrequency"] == "5m0s" },
			strata:  func(m map[string]any) bool { return m["nodeStatusReportFrequency"] == "20s" }},
		{name: "hard eviction removed by a drop-in", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "evictionHard: null\n"}, args: []string{"--config", "$DIR/kubelet.yaml", "--config-dir", "$DIR/conf.d"},
			kubelet: func(m map[string]any) bool { return m["evictionHard"] == nil },
			strata:  func(m map[string]any) bool { return m["evictionHard"] != nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := files(t, tc.files)
			var args []string
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "$DIR", dir))
			}
			for _, p := range []struct {
				name  string
				check func(map[string]any) bool
			}{{"kubelet", tc.kubelet}, {"strata", tc.strata}} {
				code, out, errOut := kubeletConfig(t, append([]string{"--profile", p.name, "--print-config"}, args...)...)
				switch {
				case p.check == nil && p.name == "kubelet":
					if code == 0 {
						t.Errorf("kubelet profile took it")
					}
				case p.check == nil:
					if code == 0 || !strings.Contains(errOut, tc.strataRefuses) {
						t.Errorf("strata profile: exit %d, stderr %q; want a refusal naming %q", code, errOut, tc.strataRefuses)
					}
				case code != 0:
					t.Errorf("%s profile: exit %d: %s", p.name, code, errOut)
				case !p.check(printed(t, out)):
					t.Errorf("%s profile made another configuration:\n%s", p.name, out)
				}
			}
		})
	}
}
