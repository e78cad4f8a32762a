package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stratacfg/strata/internal/watchtest"
)

// configMapList is the ConfigMap shard-0 holding files as `kubectl get
// configmap -o yaml` prints a List of it, the gzip'd value in binaryData.
func configMapList(t *testing.T, files map[string]string, zipped map[string][]byte) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: shard-0\n    namespace: ci\n    resourceVersion: \"42\"\n  data:\n")
	for k, v := range files {
		b.WriteString("    " + k + ": |\n")
		for _, line := range strings.Split(strings.TrimSuffix(v, "\n"), "\n") {
			b.WriteString("      " + line + "\n")
		}
	}
	if len(zipped) > 0 {
		b.WriteString("  binaryData:\n")
		for k, v := range zipped {
			b.WriteString("    " + k + ": " + base64.StdEncoding.EncodeToString(v) + "\n")
		}
	}
	return b.String()
}

// TestVerifyReplicas runs three replicas on one ConfigMap, each pod's
// volume written by its own kubelet: after an update two have it and the
// third's volume is not updated yet. verify names the one behind and
// exits 1, and 0 once every replica serves the ConfigMap's content.
func TestVerifyReplicas(t *testing.T) {
	old := map[string]string{"o-r-main.yaml": ciConfig("o", "r", "main", "", 1), "VERSION": "sha1\n"}
	next := map[string]string{"o-r-main.yaml": ciConfig("o", "r", "main", "", 2), "VERSION": "sha2\n"}
	zipped := map[string][]byte{"o-r-dev.yaml.gz": compressed(t, ciConfig("o", "r", "dev", "", 2))}
	var replicas []*agentRun
	var volumes []*watchtest.AtomicWriter
	for range 3 {
		dir := filepath.Join(t.TempDir(), "shard-0")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		w := watchtest.NewAtomicWriter(dir)
		w.Write(t, old)
		volumes = append(volumes, w)
		replicas = append(replicas, startAgent(t, "--source", dir, "--version-key", "VERSION", "--poll-interval", "50ms", "--settle", "0s"))
	}
	for _, a := range replicas {
		a.waitFor(t, "/readyz", 200)
	}
	manifest := filepath.Join(t.TempDir(), "shard-0.yaml")
	if err := os.WriteFile(manifest, []byte(configMapList(t, next, zipped)), 0o644); err != nil {
		t.Fatal(err)
	}
	verify := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		for _, a := range replicas {
			args = append(args, "--replica", a.base+"/metrics")
		}
		code := run(context.Background(), append([]string{"verify", "--source", "/etc/ci/shard-0=shard-0", "--version-key", "VERSION"}, args...),
			strings.NewReader(stdin), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	// Two kubelets have projected the update; the third has not yet.
	for _, w := range volumes[:2] {
		if err := w.TryWriteBinary(next, zipped); err != nil {
			t.Fatal(err)
		}
	}
	behind := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(replicas[2].base) + `/metrics behind: serves sha256:[0-9a-f]{64} since \d{4}-\d\d-\d\dT`)
	var out string
	watchtest.Eventually(t, 10*time.Second, func() string {
		var code int
		code, out, _ = verify("", "--configmaps", manifest)
		if code != 1 || strings.Count(out, " current since ") != 2 || !behind.MatchString(out) {
			return fmt.Sprintf("verify: exit %d\n%s", code, out)
		}
		return ""
	})
	t.Logf("one replica behind:\n%s", out)

	// Its kubelet catches up: every replica is current, read from stdin
	// as kubectl prints the ConfigMap.
	if err := volumes[2].TryWriteBinary(next, zipped); err != nil {
		t.Fatal(err)
	}
	watchtest.Eventually(t, 10*time.Second, func() string {
		code, out, stderr := verify(configMapList(t, next, zipped), "--configmaps", "-")
		if code != 0 || strings.Count(out, " current since ") != 3 {
			return fmt.Sprintf("verify: exit %d\n%s%s", code, out, stderr)
		}
		return ""
	})

	// A replica that cannot be asked, or a ConfigMap that is not there,
	// is not current.
	if code, out, _ := verify("", "--configmaps", manifest, "--replica", "http://127.0.0.1:1/metrics"); code != 1 || !strings.Contains(out, "http://127.0.0.1:1/metrics unknown: ") {
		t.Errorf("an unreachable replica: exit %d\n%s", code, out)
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"verify", "--source", "/etc/ci/shard-1=shard-1", "--configmaps", manifest, "--replica", replicas[0].base + "/metrics"},
		nil, &bytes.Buffer{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "no ConfigMap shard-1") {
		t.Errorf("a ConfigMap not given: exit %d, %s", code, stderr.String())
	}
	for _, args := range [][]string{
		{"verify"},
		{"verify", "--source", "/a=b", "--replica", "http://x/metrics"},
		{"verify", "--source", "/a=b", "--configmaps", manifest, "--kubeconfig", "k", "--replica", "http://x/metrics"},
		{"verify", "--source", "nope", "--configmaps", manifest, "--replica", "http://x/metrics"},
		{"verify", "--source", "/a=b", "--configmaps", manifest, "--replica", "x:1"},
		{"verify", "--source", "/a=b", "--kubeconfig", "k", "--replica", "http://x/metrics"},
	} {
		var stderr bytes.Buffer
		if code := run(context.Background(), args, nil, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "usage: configagent verify") {
			t.Errorf("%q: exit %d, %s", args, code, stderr.String())
		}
	}
}

// TestPathAndConfigMap: --source and --manifest split at the last "=":
// a mount path may hold one, a ConfigMap's name may not.
func TestPathAndConfigMap(t *testing.T) {
	for in, want := range map[string]source{
		"/etc/ci=ci-0":         {"/etc/ci", "ci-0"},
		"/mnt/a=b/config=ci-1": {"/mnt/a=b/config", "ci-1"},
	} {
		if got, err := pathAndConfigMap(in); err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "/etc/ci", "=ci-0", "/etc/ci="} {
		if got, err := pathAndConfigMap(in); err == nil {
			t.Errorf("%q: %+v, want an error", in, got)
		}
	}
}
