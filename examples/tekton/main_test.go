package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tektoncd/pipeline/pkg/apis/config"

	"github.com/stratacfg/strata/examples/tekton/tektonconfig"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
)

// resolveDir runs `tekton-config resolve --namespace ns --from-dir dir`.
func resolveDir(t *testing.T, ns, dir string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"resolve", "--namespace", ns, "--from-dir", dir}, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// decode parses the output strictly: one JSON object with exactly the
// contract's members.
func decode(t *testing.T, stdout string) output {
	t.Helper()
	var members map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &members); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	got := slices.Sorted(func(yield func(string) bool) {
		for k := range members {
			if !yield(k) {
				return
			}
		}
	})
	if want := []string{"defaults", "featureFlags", "hash", "namespace", "provenance", "rejected"}; !slices.Equal(got, want) {
		t.Fatalf("members %v, want %v", got, want)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	var out output
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value on stdout:\n%s", stdout)
	}
	return out
}

func TestResolveContract(t *testing.T) {
	code, stdout, stderr := resolveDir(t, "team-a", "testdata/manifests")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	out := decode(t, stdout)
	if out.Namespace != "team-a" || out.Defaults.DefaultTimeoutMinutes != 30 || out.Defaults.DefaultServiceAccount != "pipeline-runner" ||
		out.Defaults.DefaultPodTemplate == nil || out.Defaults.DefaultPodTemplate.NodeSelector["pool"] != "builds" ||
		out.FeatureFlags.Coschedule != config.CoscheduleDisabled || out.FeatureFlags.EnableAPIFields != config.BetaAPIFields || out.FeatureFlags.EnableKeepPodOnCancel {
		t.Errorf("configuration %+v %+v", out.Defaults, out.FeatureFlags)
	}
	wantProvenance := map[string]keyProvenance{
		"config-defaults/default-timeout-minutes":   {Source: "namespace team-a/tekton-config-defaults", Shadowed: []string{"cluster tekton-pipelines/config-defaults"}},
		"config-defaults/default-service-account":   {Source: "cluster tekton-pipelines/config-defaults", Shadowed: []string{}},
		"feature-flags/coschedule":                  {Source: "namespace team-a/tekton-feature-flags", Shadowed: []string{"cluster tekton-pipelines/feature-flags"}},
		"feature-flags/per-namespace-configuration": {Source: "cluster tekton-pipelines/feature-flags", Shadowed: []string{}},
	}
	for k, want := range wantProvenance {
		if got := out.Provenance[k]; !reflect.DeepEqual(got, want) {
			t.Errorf("provenance of %s: %+v, want %+v", k, got, want)
		}
	}
	if _, ok := out.Provenance["config-defaults/_example"]; ok {
		t.Error("_example is a key")
	}
	wantRejected := []rejected{
		{Source: "namespace team-a/tekton-config-defaults", Key: "config-defaults/default-service-account", Reason: "locked by the operator"},
		{Source: "namespace team-a/tekton-feature-flags", Key: "feature-flags/enable-api-fields", Reason: "tenant policy key: only the cluster layer sets it"},
		{Source: "namespace team-a/tekton-feature-flags", Key: "feature-flags/keep-pod-on-cancel", Reason: "locked by the operator"},
	}
	if !reflect.DeepEqual(out.Rejected, wantRejected) {
		t.Errorf("rejected %+v\nwant %+v", out.Rejected, wantRejected)
	}
	if !strings.HasPrefix(out.Hash, "sha256:") || len(out.Hash) != len("sha256:")+64 {
		t.Errorf("hash %q", out.Hash)
	}

	// The same configuration hashes the same; another, not.
	_, again, _ := resolveDir(t, "team-a", "testdata/manifests")
	_, other, _ := resolveDir(t, "team-b", "testdata/manifests")
	if decode(t, again).Hash != out.Hash || decode(t, other).Hash == out.Hash {
		t.Error("the hash does not follow the configuration")
	}
}

func TestResolveNamespaces(t *testing.T) {
	for _, tc := range []struct {
		ns       string
		timeout  int
		rejected []rejected
	}{
		// An invalid namespace ConfigMap is refused as a whole, with the
		// constructor's error; its other ConfigMap still applies.
		{"team-b", 50, []rejected{{Source: "namespace team-b/tekton-config-defaults",
			Reason: `config-defaults: failed parsing default config "default-timeout-minutes"`}}},
		{"team-c", 50, []rejected{}},      // lacks a label: no layer
		{"kube-system", 50, []rejected{}}, // a system namespace
		{"nobody", 50, []rejected{}},      // nothing of its own
		{"team-canary", 50, []rejected{}}, // the canary's selector ConfigMap, below
	} {
		code, stdout, stderr := resolveDir(t, tc.ns, "testdata/manifests")
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", tc.ns, code, stderr)
		}
		out := decode(t, stdout)
		if out.Defaults.DefaultTimeoutMinutes != tc.timeout || !reflect.DeepEqual(out.Rejected, tc.rejected) {
			t.Errorf("%s: timeout %d, rejected %+v; want %d, %+v", tc.ns, out.Defaults.DefaultTimeoutMinutes, out.Rejected, tc.timeout, tc.rejected)
		}
		if tc.ns == "team-b" && out.FeatureFlags.MaxResultSize != 8192 {
			t.Errorf("team-b's feature flags did not apply: %+v", out.FeatureFlags)
		}
		// The canary's flag, from the selector ConfigMap that selects
		// team-canary by its label, and no one else's.
		if src := out.Provenance["feature-flags/enable-kubernetes-sidecar"].Source; out.FeatureFlags.EnableKubernetesSidecar != (tc.ns == "team-canary") ||
			(tc.ns == "team-canary" && src != "selector tekton-pipelines/canary-kubernetes-sidecar") {
			t.Errorf("%s: enable-kubernetes-sidecar %v from %q", tc.ns, out.FeatureFlags.EnableKubernetesSidecar, src)
		}
	}
}

func TestResolveInvalidCluster(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"a feature flag", "coschedule: workspaces", "coschedule: sometimes",
			`cluster ConfigMap tekton-pipelines/feature-flags: invalid value for feature flag "coschedule": "sometimes"`},
		{"a default", `default-timeout-minutes: "50"`, `default-timeout-minutes: fifty`,
			`cluster ConfigMap tekton-pipelines/config-defaults: failed parsing default config "default-timeout-minutes"`},
		{"the gate", `per-namespace-configuration: "true"`, `per-namespace-configuration: "yes"`, `per-namespace-configuration`},
		{"a lock list naming no key", `keep-pod-on-cancel"`, `keep-pod-on-cancle"`, `"keep-pod-on-cancle" is no key of any section`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b, err := os.ReadFile("testdata/manifests/cluster.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b, []byte(tc.from)) {
				t.Fatalf("cluster.yaml holds no %q", tc.from)
			}
			b = bytes.Replace(b, []byte(tc.from), []byte(tc.to), 1)
			if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := resolveDir(t, "team-a", dir)
			if code != 1 || stdout != "" || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"explain"},
		{"resolve"},
		{"resolve", "--from-dir", "testdata/manifests"},
		{"resolve", "--namespace", "a"},
		{"resolve", "--namespace", "a", "--from-dir", "d", "--kubeconfig", "k"},
		{"resolve", "--namespace", "a", "--from-dir", "d", "extra"},
		{"resolve", "--nope"},
		{"keys"},
		{"keys", "--namespace", "a", "--from-dir", "testdata/manifests"},
		{"keys", "--from-dir", "d", "--kubeconfig", "k"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "usage: tekton-config resolve") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout.String(), stderr.String())
		}
	}
	// A directory that cannot be read is an error, not a usage error.
	if code, stdout, _ := resolveDir(t, "a", filepath.Join(t.TempDir(), "missing")); code != 1 || stdout != "" {
		t.Errorf("a missing directory: exit %d, stdout %q", code, stdout)
	}
}

// TestKeys publishes what tenants may set under testdata's cluster
// ConfigMaps, worked out by the policy: the overridable keys, the
// operator's lock list, and every other key with why; an invalid cluster
// ConfigMap is an error.
func TestKeys(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"keys", "--from-dir", "testdata/manifests"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var out keysOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if !out.Open || len(out.Sections) != 2 || out.Sections[0].Section != "config-defaults" || out.Sections[1].Section != "feature-flags" {
		t.Fatalf("%+v", out)
	}
	defaults, flags := out.Sections[0], out.Sections[1]
	// cluster.yaml locks default-service-account and keep-pod-on-cancel,
	// and allows beta: the alpha flags tenants could set are refused.
	if !slices.Equal(defaults.Locked, []string{"default-service-account"}) || !slices.Equal(flags.Locked, []string{"keep-pod-on-cancel"}) {
		t.Errorf("locked %v, %v", defaults.Locked, flags.Locked)
	}
	if !slices.Contains(defaults.Overridable, "default-timeout-minutes") || slices.Contains(defaults.Overridable, "default-service-account") ||
		!slices.Contains(flags.Overridable, "coschedule") || slices.Contains(flags.Overridable, "enable-artifacts") {
		t.Errorf("overridable %v, %v", defaults.Overridable, flags.Overridable)
	}
	reasons := map[string]string{}
	for _, r := range append(slices.Clip(defaults.Refused), flags.Refused...) {
		reasons[r.Key] = r.Reason
	}
	for k, want := range map[string]string{"default-forbidden-env": tenancy.ReasonNotOverridable, "enable-artifacts": tenancy.ReasonAlpha,
		"enable-api-fields": tenancy.ReasonPolicyKey, "per-namespace-configuration": tenancy.ReasonPolicyKey} {
		if reasons[k] != want {
			t.Errorf("%s: %q, want %q", k, reasons[k], want)
		}
	}
	if n := len(defaults.Overridable) + len(defaults.Locked) + len(defaults.Refused); n != len(tektonconfig.DefaultsKeys) {
		t.Errorf("config-defaults: %d keys published, %d declared", n, len(tektonconfig.DefaultsKeys))
	}
	if n := len(flags.Overridable) + len(flags.Locked) + len(flags.Refused); n != len(tektonconfig.FeatureFlagsKeys) {
		t.Errorf("feature-flags: %d keys published, %d declared", n, len(tektonconfig.FeatureFlagsKeys))
	}

	dir := t.TempDir()
	b, err := os.ReadFile("testdata/manifests/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), bytes.Replace(b, []byte("enable-api-fields: beta"), []byte("enable-api-fields: gamma"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), []string{"keys", "--from-dir", dir}, &stdout, &stderr); code != 1 || stdout.Len() != 0 || !strings.Contains(stderr.String(), `"gamma"`) {
		t.Errorf("an invalid cluster: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// TestResolveContested: two selector ConfigMaps as specific as each other
// that both select a namespace and set one key otherwise: resolve's
// provenance of the key lists the value that lost, and its layer.
func TestResolveContested(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"cluster.yaml", "namespaces.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata/manifests", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	contest := `apiVersion: v1
kind: ConfigMap
metadata:
  name: sidecar-off
  namespace: tekton-pipelines
  labels: {app.kubernetes.io/part-of: tekton-pipelines, tekton.dev/pipeline-config-selector: "true"}
  annotations:
    config.strata.dev/namespace-selector: tekton.dev/canary=true
    config.strata.dev/section: feature-flags
data:
  enable-kubernetes-sidecar: "false"
`
	if err := os.WriteFile(filepath.Join(dir, "contest.yaml"), []byte(contest), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := resolveDir(t, "team-canary", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := decode(t, stdout).Provenance["feature-flags/enable-kubernetes-sidecar"]
	want := keyProvenance{Source: "selector tekton-pipelines/sidecar-off", Shadowed: []string{"selector tekton-pipelines/canary-kubernetes-sidecar"},
		Contested: []contender{{Source: "selector tekton-pipelines/canary-kubernetes-sidecar", Value: `"true"`}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("provenance %+v\nwant %+v", got, want)
	}
}
