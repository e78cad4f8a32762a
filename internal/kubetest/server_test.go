package kubetest

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestServer starts the servers, reaches them with client-go and kubectl,
// and checks that data survives an apiserver restart.
func TestServer(t *testing.T) {
	start := time.Now()
	s := Start(t)
	t.Logf("etcd and kube-apiserver ready in %s", time.Since(start))
	c := s.Client(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"}, Data: map[string]string{"a": "1"}}
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/usr/bin/kubectl", "--kubeconfig", s.Kubeconfig, "get", "configmap", "probe", "-n", "default", "-o", "jsonpath={.data.a}").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Fatalf("kubectl get: %v: %s", err, out)
	}
	s.StopAPIServer()
	if _, err := c.CoreV1().ConfigMaps("default").Get(ctx, "probe", metav1.GetOptions{}); err == nil {
		t.Fatal("the API server answered while stopped")
	}
	restart := time.Now()
	s.StartAPIServer(t)
	t.Logf("kube-apiserver restarted in %s", time.Since(restart))
	got, err := c.CoreV1().ConfigMaps("default").Get(ctx, "probe", metav1.GetOptions{})
	if err != nil || got.Data["a"] != "1" {
		t.Fatalf("after restart: %v, %v", got, err)
	}
}
