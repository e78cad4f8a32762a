package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratacfg/strata/examples/manifests/admission"
	"github.com/stratacfg/strata/internal/watchtest"
)

// The service levels of a manifest directory: a set of sloPolicies
// policies and as many bindings loads at start-up within sloStartup, and
// a new set is in effect within sloReload of kubelet moving ..data. The
// benchmarks below measure them; the tests bound them only generously,
// ten times over, so that a loaded machine does not fail them.
const (
	sloPolicies = 100
	sloStartup  = time.Second
	sloReload   = 100 * time.Millisecond
)

// policies returns n policies and their bindings, one file each, the
// i-th binding's validation action told by action.
func policies(n int, action string) map[string]string {
	files := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("p%03d%s", i, admission.StaticSuffix)
		files[fmt.Sprintf("%03d.yaml", i)] = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: ` + name + `
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["configmaps"]
  validations:
  - expression: "!has(object.data) || !('forbidden-` + fmt.Sprint(i) + `' in object.data)"
    message: "key forbidden-` + fmt.Sprint(i) + ` is not allowed"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: ` + name + `
spec:
  policyName: ` + name + `
  validationActions: [` + action + `]
`
	}
	return files
}

// sloRun runs the command on a volume kubelet's AtomicWriter writes, with
// sloPolicies policies, and returns the writer, the lines, the time from
// start to the first line, and how to stop.
func sloRun(tb testing.TB) (*watchtest.KubeletWriter, *lines, time.Duration, func()) {
	dir := tb.TempDir()
	kw := watchtest.NewKubeletWriter(tb, dir)
	kw.Write(tb, policies(sloPolicies, "Deny"))
	out := newLines()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	stop := sync.OnceFunc(func() { cancel(); <-done })
	tb.Cleanup(stop)
	began := time.Now()
	go func() {
		done <- run(ctx, []string{"--dir", dir, "--plugin", admission.ValidatingAdmissionPolicy}, out, &strings.Builder{})
	}()
	var first line
	select {
	case first = <-out.ch:
	case <-time.After(30 * time.Second):
		tb.Fatal("no first line within 30s")
	}
	startup := time.Since(began)
	if first.Status != "success" || len(first.Objects) != 2*sloPolicies {
		tb.Fatalf("first load: %s, %d objects, %s", first.Status, len(first.Objects), first.Error)
	}
	return kw, out, startup, stop
}

// reloadLatency publishes a set that changes every binding and returns
// the time from kubelet moving ..data (the link's own time, which the
// rename keeps) to the line of the new set.
func reloadLatency(tb testing.TB, kw *watchtest.KubeletWriter, out *lines, action string) time.Duration {
	kw.Write(tb, policies(sloPolicies, action))
	fi, err := os.Lstat(filepath.Join(kw.Dir, "..data"))
	if err != nil {
		tb.Fatal(err)
	}
	moved := fi.ModTime()
	select {
	case l := <-out.ch:
		if l.Status != "success" {
			tb.Fatalf("reload: %s: %s", l.Status, l.Error)
		}
		return time.Since(moved)
	case <-time.After(30 * time.Second):
		tb.Fatal("no reload line within 30s")
		return 0
	}
}

// TestServiceLevels bounds start-up and reload, ten times their goals.
func TestServiceLevels(t *testing.T) {
	kw, out, startup, stop := sloRun(t)
	defer stop()
	if startup > 10*sloStartup {
		t.Errorf("%d policies and bindings loaded in %v at start-up; the goal is %v", sloPolicies, startup, sloStartup)
	}
	for i, action := range []string{"Warn", "Audit", "Deny"} {
		if d := reloadLatency(t, kw, out, action); d > 10*sloReload {
			t.Errorf("reload %d in effect %v after ..data moved; the goal is %v", i+1, d, sloReload)
		}
	}
}

// BenchmarkStartup measures the start-up of the service levels: the
// command's first load of sloPolicies policies and their bindings.
func BenchmarkStartup(b *testing.B) {
	var total time.Duration
	for range b.N {
		_, _, startup, stop := sloRun(b)
		total += startup
		stop()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-startup")
	b.ReportMetric(float64(sloStartup.Milliseconds()), "ms-goal")
}

// BenchmarkReload measures the reload of the service levels: from
// kubelet moving ..data to the new set in effect.
func BenchmarkReload(b *testing.B) {
	kw, out, _, stop := sloRun(b)
	defer stop()
	actions := []string{"Warn", "Deny"}
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		total += reloadLatency(b, kw, out, actions[i%2])
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-after-data-moves")
	b.ReportMetric(float64(sloReload.Milliseconds()), "ms-goal")
}
