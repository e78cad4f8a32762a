package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratacfg/strata/internal/httpserve/httpservetest"
	"github.com/stratacfg/strata/internal/kubetest"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers/namespaced"
)

var manifests = filepath.Join("testdata", "manifests")

// kubectl runs /usr/bin/kubectl against the server.
func kubectl(t *testing.T, s *kubetest.Server, args ...string) string {
	t.Helper()
	out, err := exec.Command("/usr/bin/kubectl", append([]string{"--kubeconfig", s.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func resolveJSON(t *testing.T, args ...string) Output {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append([]string{"resolve"}, args...), &stdout, &stderr); code != 0 {
		t.Fatalf("resolve %v: exit %d: %s", args, code, stderr.String())
	}
	var out Output
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestController applies the shipped manifests with kubectl, runs the
// controller, and checks the Jobs it defaults; resolve against the cluster
// must agree with resolve from the files, and the controller's /metrics
// answers behind idle and half-sent connections.
func TestController(t *testing.T) {
	kubectl(t, server, "apply", "-f", manifests)
	for _, ns := range []string{"team-a", "team-b", "team-c"} {
		fromDir := resolveJSON(t, "--namespace", ns, "--from-dir", manifests)
		live := resolveJSON(t, "--namespace", ns, "--kubeconfig", server.Kubeconfig)
		if string(fromDir.Config) != string(live.Config) || fromDir.Hash != live.Hash ||
			fmt.Sprint(fromDir.Provenance) != fmt.Sprint(live.Provenance) || fmt.Sprint(fromDir.Rejected) != fmt.Sprint(live.Rejected) {
			t.Errorf("%s: resolve --from-dir and --kubeconfig disagree:\n%+v\n%+v", ns, fromDir, live)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var logs watchtest.Buffer
	go func() { done <- runController(ctx, server.Client(t), ModeLazy, "127.0.0.1:0", &logs) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	}()
	// A client holding idle and half-sent connections does not keep a
	// probe from /metrics.
	served := regexp.MustCompile(`serving /metrics on (\S+)`)
	var metricsAddr string
	eventually(t, 10*time.Second, func() string {
		if m := served.FindStringSubmatch(logs.String()); m != nil {
			metricsAddr = m[1]
			return ""
		}
		return "the controller serves no /metrics; its log:\n" + logs.String()
	})
	httpservetest.Siege(t, metricsAddr, nil, "/metrics", http.StatusOK)

	c := server.Client(t)
	job := func(ns string) *batchv1.Job {
		j := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "work", Namespace: ns, Labels: map[string]string{"tier": "own"}},
			Spec: batchv1.JobSpec{
				Suspend: new(true),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "work", Image: "busybox"}},
				}},
			},
		}
		got, err := c.BatchV1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, tc := range []struct {
		ns      string
		timeout int64
		ttl     *int32
		labels  map[string]string
	}{
		{"team-a", 600, new(int32(300)), map[string]string{"tier": "own", "cost-center": "team-a"}},
		{"team-b", 1800, nil, map[string]string{"tier": "own", "cost-center": "platform"}},
		{"team-c", 1800, nil, map[string]string{"tier": "own", "cost-center": "platform"}},
	} {
		job(tc.ns)
		want := resolveJSON(t, "--namespace", tc.ns, "--from-dir", manifests)
		var got *batchv1.Job
		watchtest.Until(20*time.Second, func() bool {
			var err error
			got, err = c.BatchV1().Jobs(tc.ns).Get(context.Background(), "work", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, ok := got.Annotations[namespaced.AnnotationResolvedHash]
			return ok
		})
		if h := got.Annotations[namespaced.AnnotationResolvedHash]; h != want.Hash {
			t.Errorf("%s: resolved-hash %q, want %q; controller log:\n%s", tc.ns, h, want.Hash, logs.String())
			continue
		}
		if src := got.Annotations[namespaced.AnnotationSources]; !strings.HasPrefix(src, "cluster:strata-system/strata-defaults@") {
			t.Errorf("%s: sources %q", tc.ns, src)
		}
		if d := got.Spec.ActiveDeadlineSeconds; d == nil || *d != tc.timeout {
			t.Errorf("%s: activeDeadlineSeconds %v, want %d", tc.ns, d, tc.timeout)
		}
		if ttl := got.Spec.TTLSecondsAfterFinished; fmt.Sprint(ttl) != fmt.Sprint(tc.ttl) && (ttl == nil || tc.ttl == nil || *ttl != *tc.ttl) {
			t.Errorf("%s: ttlSecondsAfterFinished %v, want %v", tc.ns, ttl, tc.ttl)
		}
		for k, v := range tc.labels {
			if got.Labels[k] != v {
				t.Errorf("%s: label %s=%q, want %q", tc.ns, k, got.Labels[k], v)
			}
		}
		// The pod template is immutable once the Job exists: the
		// controller leaves it alone (ApplyTemplate is for admission).
		if sa := got.Spec.Template.Spec.ServiceAccountName; sa != "" {
			t.Errorf("%s: serviceAccountName %q; the controller must not touch the immutable template", tc.ns, sa)
		}
	}
}
