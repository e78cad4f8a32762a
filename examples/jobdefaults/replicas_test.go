package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/internal/httpserve/httpservetest"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers/namespaced"
)

// replica is a jobdefaults process run with --leader-elect.
type replica struct {
	name        string
	cmd         *exec.Cmd
	webhookPort int
	probeAddr   string
	out         *watchtest.Buffer
	exited      chan struct{}
}

// startReplica runs bin against cl as one replica.
func startReplica(t *testing.T, bin, name string, cl *cluster) *replica {
	t.Helper()
	r := &replica{name: name, webhookPort: freePort(t), probeAddr: "127.0.0.1:" + strconv.Itoa(freePort(t)), out: &watchtest.Buffer{}, exited: make(chan struct{})}
	r.cmd = exec.Command(bin, "--kubeconfig", cl.kubeconfig, "--webhook-host", "127.0.0.1", "--webhook-port", strconv.Itoa(r.webhookPort),
		"--cert-dir", filepath.Join(t.TempDir(), "webhook"), "--leader-elect", "--health-probe-bind-address", r.probeAddr)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.cmd.Wait(); close(r.exited) }() //nolint:errcheck // a killed replica's exit is the test's doing
	t.Cleanup(func() {
		r.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may be gone
		select {
		case <-r.exited:
		case <-time.After(20 * time.Second):
			r.cmd.Process.Kill() //nolint:errcheck // it may be gone
		}
		if t.Failed() {
			t.Logf("replica %s:\n%s", r.name, r.out.String())
		}
	})
	eventuallyWithin(t, 60*time.Second, "replica "+name+" ready", func() string {
		select {
		case <-r.exited:
			t.Fatalf("replica %s exited:\n%s", name, r.out.String())
		default:
		}
		resp, err := http.Get("http://" + r.probeAddr + "/readyz")
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.Status
		}
		return ""
	})
	return r
}

// deadline asks replica r's own webhook to default a Job created in ns,
// and returns the activeDeadlineSeconds its patch sets (0 for none).
func (r *replica) deadline(t *testing.T, ns string) int64 {
	t.Helper()
	job, err := json.Marshal(jobObject(ns, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "1", Namespace: ns, Operation: admissionv1.Create,
			Kind:   metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"},
			Object: runtime.RawExtension{Raw: job}},
	})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test's self-signed loopback server
	resp, err := client.Post(fmt.Sprintf("https://127.0.0.1:%d%s", r.webhookPort, WebhookPath), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("replica %s's webhook: %v", r.name, err)
	}
	defer resp.Body.Close()
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil || review.Response == nil || !review.Response.Allowed {
		t.Fatalf("replica %s's webhook answered %+v (%v)", r.name, review.Response, err)
	}
	var patch []struct {
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(review.Response.Patch, &patch); err != nil {
		t.Fatal(err)
	}
	for _, op := range patch {
		if op.Path == "/spec/activeDeadlineSeconds" {
			d, _ := strconv.ParseInt(string(op.Value), 10, 64)
			return d
		}
	}
	return 0
}

// TestReplicas runs two replicas with --leader-elect against their own
// control plane: both serve the webhook and follow a tenant's edit within
// a second; the leader alone registers the webhooks and reconciles; once
// it is killed, the other takes the Lease over, and every Job gets the
// annotation of the configuration changed meanwhile.
func TestReplicas(t *testing.T) {
	cl, certDir, err := newControlPlane(t)
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() {
		cl.env.Stop() //nolint:errcheck // the test is ending
		os.RemoveAll(certDir)
	})
	bin := filepath.Join(t.TempDir(), "jobdefaults")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building jobdefaults: %v\n%s", err, out)
	}
	a := startReplica(t, bin, "a", cl)
	// A client holding idle and half-sent connections does not keep a
	// probe from the health endpoint.
	httpservetest.Siege(t, a.probeAddr, nil, "/healthz", http.StatusOK)
	// a is the leader once it has pointed the API server at itself.
	eventually(t, "replica a registering the webhook", func() string {
		if url := webhookURL(t, cl); !strings.Contains(url, ":"+strconv.Itoa(a.webhookPort)+"/") {
			return "the webhook calls " + url
		}
		return ""
	})
	b := startReplica(t, bin, "b", cl)

	// A tenant's edit reaches both replicas' webhooks within a second.
	team := cl.namespace(t, "team")
	cl.overrides(t, team, map[string]string{"default-timeout-seconds": "123"})
	edited := time.Now()
	for _, r := range []*replica{a, b} {
		eventuallyWithin(t, time.Second-time.Since(edited), "replica "+r.name+" serving the edit", func() string {
			if d := r.deadline(t, team); d != 123 {
				return fmt.Sprintf("deadline %d", d)
			}
			return ""
		})
	}

	// Jobs admitted through the API server, annotated by the leader.
	var names []string
	for i := range 5 {
		names = append(names, cl.create(t, jobObject(team, "job-"+strconv.Itoa(i))).Name)
	}
	hashes := func() map[string]string {
		out := map[string]string{}
		for _, n := range names {
			out[n] = cl.annotations(t, team, n)[namespaced.AnnotationResolvedHash]
		}
		return out
	}
	var before string
	eventually(t, "the leader annotating every Job", func() string {
		h := hashes()
		before = h[names[0]]
		for n, v := range h {
			if v == "" || v != before {
				return fmt.Sprintf("%s: %q", n, v)
			}
		}
		return ""
	})

	// b, not the leader, has left the webhooks pointing at a.
	if url := webhookURL(t, cl); !strings.Contains(url, ":"+strconv.Itoa(a.webhookPort)+"/") {
		t.Fatalf("while a leads, the webhook calls %s", url)
	}
	holder := leaseHolder(t, cl)
	if holder == "" {
		t.Fatal("no replica holds the Lease")
	}

	// The leader dies without a word; the configuration changes while b
	// waits for the Lease to expire; b then reconciles every Job.
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	cl.overrides(t, team, map[string]string{"default-timeout-seconds": "124"})
	eventuallyWithin(t, 5*time.Second, "replica b serving the edit", func() string {
		if d := b.deadline(t, team); d != 124 {
			return fmt.Sprintf("deadline %d", d)
		}
		return ""
	})
	eventuallyWithin(t, 60*time.Second, "replica b re-annotating every Job", func() string {
		for n, v := range hashes() {
			if v == before || v == "" {
				return fmt.Sprintf("%s still has %q", n, v)
			}
		}
		return ""
	})
	if h := leaseHolder(t, cl); h == holder || h == "" {
		t.Errorf("the Lease is held by %q, before by %q", h, holder)
	}
	eventually(t, "replica b registering the webhook", func() string {
		if url := webhookURL(t, cl); !strings.Contains(url, ":"+strconv.Itoa(b.webhookPort)+"/") {
			return "the webhook calls " + url
		}
		return ""
	})
	if got := cl.create(t, jobObject(team, "after")); got.Spec.ActiveDeadlineSeconds == nil || *got.Spec.ActiveDeadlineSeconds != 124 {
		t.Errorf("a Job admitted after the takeover: %v", got.Spec.ActiveDeadlineSeconds)
	}
}

// webhookURL is where the API server sends Jobs to be defaulted, "" when
// no webhook is registered yet.
func webhookURL(t *testing.T, cl *cluster) string {
	t.Helper()
	hook, err := cl.c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), WebhookName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return *hook.Webhooks[0].ClientConfig.URL
}

// leaseHolder is the identity of the replica that leads.
func leaseHolder(t *testing.T, cl *cluster) string {
	t.Helper()
	lease, err := cl.c.CoordinationV1().Leases(SystemNamespace).Get(context.Background(), LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}
