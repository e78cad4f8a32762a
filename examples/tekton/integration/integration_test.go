// Package integration runs tekton-config against the real kube-apiserver
// and etcd that `make tools` builds: the testdata's ConfigMaps created in
// the cluster, `tekton-config resolve --kubeconfig` must print exactly
// what `--from-dir` prints for the same objects, and an invalid cluster
// ConfigMap must fail it.
package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratacfg/strata/internal/kubeobjects"
	"github.com/stratacfg/strata/internal/kubetest"
)

var (
	server *kubetest.Server
	bin    string // the tekton-config command, built once
)

func TestMain(m *testing.M) {
	os.Exit(kubetest.MainWithCommand(m, &server, "..", "tekton-config", &bin))
}

// resolve runs tekton-config resolve for ns with the source args.
func resolve(t *testing.T, ns string, source ...string) (int, string, string) {
	t.Helper()
	return command(t, append([]string{"resolve", "--namespace", ns}, source...)...)
}

// command runs tekton-config with args.
func command(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}

func TestResolveFromTheCluster(t *testing.T) {
	ctx := context.Background()
	client := server.Client(t)
	objs, err := kubeobjects.ReadDir("../testdata/manifests")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ConfigMap:
			apply(t, client, o)
		case *corev1.Namespace:
			if _, err := client.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("testdata holds a %T", o)
		}
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, ns := range []string{"team-a", "team-b", "team-c", "team-canary", "kube-system", "tekton-pipelines", "nobody"} {
		code, live, stderr := resolve(t, ns, "--kubeconfig", server.Kubeconfig)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", ns, code, stderr)
		}
		code, offline, stderr := resolve(t, ns, "--from-dir", "../testdata/manifests")
		if code != 0 {
			t.Fatalf("%s --from-dir: exit %d: %s", ns, code, stderr)
		}
		if live != offline {
			t.Errorf("%s: --kubeconfig printed\n%s\n--from-dir printed\n%s", ns, live, offline)
		}
	}
	if _, live, _ := resolve(t, "team-a", "--kubeconfig", server.Kubeconfig); !strings.Contains(live, `"DefaultTimeoutMinutes": 30`) {
		t.Errorf("team-a's override is missing:\n%s", live)
	}

	// What tenants may set reads the same from the cluster.
	if code, live, stderr := command(t, "keys", "--kubeconfig", server.Kubeconfig); code != 0 {
		t.Errorf("keys: exit %d: %s", code, stderr)
	} else if _, offline, _ := command(t, "keys", "--from-dir", "../testdata/manifests"); live != offline || !strings.Contains(live, `"default-service-account"`) {
		t.Errorf("keys: --kubeconfig printed\n%s\n--from-dir printed\n%s", live, offline)
	}

	// The operator breaks feature-flags: nothing resolves, nothing is
	// printed, stderr says which ConfigMap and why.
	flags, err := client.CoreV1().ConfigMaps("tekton-pipelines").Get(ctx, "feature-flags", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	flags.Data["enable-api-fields"] = "gamma"
	if _, err := client.CoreV1().ConfigMaps("tekton-pipelines").Update(ctx, flags, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := resolve(t, "team-a", "--kubeconfig", server.Kubeconfig)
	if want := `cluster ConfigMap tekton-pipelines/feature-flags: invalid value for feature flag "enable-api-fields": "gamma"`; code != 1 || stdout != "" || !strings.Contains(stderr, want) {
		t.Errorf("an invalid cluster ConfigMap: exit %d, stdout %q, stderr %q; want 1, nothing, %q", code, stdout, stderr, want)
	}

	// An API server that cannot be reached is an error too.
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	b, err := os.ReadFile(server.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kc, bytes.ReplaceAll(b, []byte(server.Config.Host), []byte("https://127.0.0.1:1")), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := resolve(t, "team-a", "--kubeconfig", kc); code != 1 || stdout != "" || stderr == "" {
		t.Errorf("an unreachable API server: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
