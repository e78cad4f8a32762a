package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/stratacfg/strata/internal/httpserve/httpservetest"
	"github.com/stratacfg/strata/internal/servingcert"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers/namespaced"
)

// cluster is an envtest control plane on the kube-apiserver and etcd that
// `make tools` builds into bin/, with jobdefaults running against it.
type cluster struct {
	env        *envtest.Environment
	cfg        *rest.Config
	c          kubernetes.Interface
	kubeconfig string
	stderr     *watchtest.Buffer
	done       chan int
	stop       context.CancelFunc
	// zpages is the base URL of the metrics server, which serves the
	// z-pages.
	zpages string
	// webhook is the address the webhook serves on, and webhookCerts
	// the directory of its serving certificate.
	webhook, webhookCerts string
}

var (
	shared     *cluster
	sharedOnce sync.Once
	sharedErr  error
)

func TestMain(m *testing.M) {
	if which := os.Getenv(heapEnv); which != "" { // the process heapOf starts
		if err := managerHeap(which); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if shared != nil {
		shared.stop()
		<-shared.done
		shared.env.Stop() //nolint:errcheck // the process is ending
	}
	os.Exit(code)
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// assets is where envtest finds kube-apiserver and etcd: KUBEBUILDER_ASSETS
// when set, the repository's bin/ otherwise.
func assets(t testing.TB) string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Dir(watchtest.Tool(t, "kube-apiserver"))
}

// startCluster starts the control plane, once per test binary, and
// jobdefaults against it. A control plane that cannot start fails the
// test and says why.
func startCluster(t testing.TB) *cluster {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = newCluster(t) })
	if sharedErr != nil {
		t.Fatalf("starting envtest and jobdefaults: %v", sharedErr)
	}
	return shared
}

// newControlPlane starts an envtest control plane with the cluster
// ConfigMap in place, and returns it with no jobdefaults running, and the
// directory of its certificates and kubeconfig.
func newControlPlane(t testing.TB) (*cluster, string, error) {
	dir := assets(t)
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return nil, "", fmt.Errorf("%s: %w (make tools builds it)", bin, err)
		}
	}
	certDir, err := os.MkdirTemp("", "jobdefaults-apiserver-")
	if err != nil {
		return nil, "", err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: dir,
		// A fixed port and certificate directory, so that the API server
		// can restart where clients expect it.
		ControlPlane: envtest.ControlPlane{APIServer: &envtest.APIServer{
			CertDir: certDir,
			// Open watches hold a graceful shutdown up to a minute; an
			// outage does not wait for them, and neither does the test.
			StopTimeout:   5 * time.Second,
			SecureServing: envtest.SecureServing{ListenAddr: envtest.ListenAddr{Address: "127.0.0.1", Port: strconv.Itoa(freePort(t))}},
		}},
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, "", err
	}
	user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		return nil, "", err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return nil, "", err
	}
	kubeconfig := filepath.Join(certDir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		return nil, "", err
	}
	c, err := kubernetes.NewForConfig(user.Config())
	if err != nil {
		return nil, "", err
	}
	ctxb := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctxb, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SystemNamespace}}, metav1.CreateOptions{}); err != nil {
		return nil, "", err
	}
	if _, err := c.CoreV1().ConfigMaps(SystemNamespace).Create(ctxb, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: SystemNamespace, Name: ClusterConfigMap},
		Data: map[string]string{
			"enforced-config-level":              "namespace",
			"default-timeout-seconds":            "600",
			"default-ttl-seconds-after-finished": "300",
			"default-service-account":            "job-runner",
			"default-labels":                     "{cost-center: shared}",
			"max-timeout-seconds":                "7200",
		},
	}, metav1.CreateOptions{}); err != nil {
		return nil, "", err
	}
	return &cluster{env: env, cfg: user.Config(), c: c, kubeconfig: kubeconfig}, certDir, nil
}

func newCluster(t testing.TB) (*cluster, error) {
	cl, certDir, err := newControlPlane(t)
	if err != nil {
		return nil, err
	}
	cl.stderr, cl.done = &watchtest.Buffer{}, make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cl.stop = cancel
	ctxb := context.Background()
	c, kubeconfig := cl.c, cl.kubeconfig
	metrics := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cl.zpages = "http://" + metrics
	port := freePort(t)
	cl.webhook, cl.webhookCerts = "127.0.0.1:"+strconv.Itoa(port), filepath.Join(certDir, "webhook")
	args := []string{"--kubeconfig", kubeconfig, "--webhook-host", "127.0.0.1", "--webhook-port", strconv.Itoa(port), "--cert-dir", cl.webhookCerts, "--metrics-bind-address", metrics}
	go func() { cl.done <- run(ctx, args, cl.stderr) }()
	// Ready when a dry-run Job comes back defaulted: the webhook is
	// registered and the API server calls it.
	probe := cl.namespace(t, "probe")
	var exited error
	if watchtest.Until(60*time.Second, func() bool {
		var job *batchv1.Job
		job, err = c.BatchV1().Jobs(probe).Create(ctxb, jobObject(probe, "probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		select {
		case code := <-cl.done:
			exited = fmt.Errorf("jobdefaults exited with %d:\n%s", code, cl.stderr.String())
			return true
		default:
		}
		return err == nil && job.Spec.ActiveDeadlineSeconds != nil
	}) {
		if exited != nil {
			return nil, exited
		}
		return cl, nil
	}
	return nil, fmt.Errorf("the webhook did not default a Job within 60s (last error %v):\n%s", err, cl.stderr.String())
}

func (cl *cluster) namespace(t testing.TB, name string) string {
	_, err := cl.c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

// overrides creates or replaces namespace ns's strata-overrides.
func (cl *cluster) overrides(t testing.TB, ns string, data map[string]string) *corev1.ConfigMap {
	t.Helper()
	ctx := context.Background()
	cms := cl.c.CoreV1().ConfigMaps(ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: OverridesName, Labels: OverrideLabels}, Data: data}
	got, err := cms.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, gerr := cms.Get(ctx, OverridesName, metav1.GetOptions{})
		if gerr != nil {
			t.Fatal(gerr)
		}
		cm.ResourceVersion = cur.ResourceVersion
		got, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func jobObject(ns, name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
		}}},
	}
}

// create creates a Job and returns what the create response holds.
func (cl *cluster) create(t testing.TB, job *batchv1.Job) *batchv1.Job {
	t.Helper()
	got, err := cl.c.BatchV1().Jobs(job.Namespace).Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Job %s/%s: %v", job.Namespace, job.Name, err)
	}
	return got
}

// eventually polls cond until it returns "" or 20 seconds pass.
func eventually(t testing.TB, what string, cond func() string) {
	t.Helper()
	eventuallyWithin(t, 20*time.Second, what, cond)
}

// eventuallyWithin polls cond until it returns "" or d passes.
func eventuallyWithin(t testing.TB, d time.Duration, what string, cond func() string) {
	t.Helper()
	var msg string
	if !watchtest.Until(d, func() bool { msg = cond(); return msg == "" }) {
		t.Fatalf("%s: %s", what, msg)
	}
}

func (cl *cluster) annotations(t testing.TB, ns, name string) map[string]string {
	t.Helper()
	job, err := cl.c.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return job.Annotations
}

// TestJobsDefaultedAtAdmission creates Jobs through the API server: its
// webhook gives them their namespace's defaults and keeps what they set,
// the reconciler annotates them, and a tenant's edit reaches both. The
// webhook answers behind idle and half-sent connections.
func TestJobsDefaultedAtAdmission(t *testing.T) {
	cl := startCluster(t)
	// A client holding idle and half-sent connections does not keep a
	// probe from the webhook: a GET, which carries no AdmissionReview, is answered
	// with an AdmissionReview that refuses it, in a 200.
	httpservetest.Siege(t, cl.webhook, httpservetest.Trusting(t, filepath.Join(cl.webhookCerts, servingcert.CertFile)), WebhookPath, http.StatusOK)
	a := cl.namespace(t, "team-a")
	cm := cl.overrides(t, a, map[string]string{"default-timeout-seconds": "120", "default-service-account": "builder", "default-labels": "{team: a}"})

	// The first Job may reach the webhook before the override reaches
	// the resolver.
	var job *batchv1.Job
	eventually(t, "the override", func() string {
		job = cl.create(t, jobObject(a, "first-"+strconv.FormatInt(time.Now().UnixNano(), 36)))
		if job.Spec.ActiveDeadlineSeconds == nil || *job.Spec.ActiveDeadlineSeconds != 120 {
			return fmt.Sprintf("activeDeadlineSeconds %v", job.Spec.ActiveDeadlineSeconds)
		}
		return ""
	})
	// Defaulted in the create response itself.
	if job.Spec.TTLSecondsAfterFinished == nil || *job.Spec.TTLSecondsAfterFinished != 300 {
		t.Errorf("ttlSecondsAfterFinished %v, want the cluster's 300", job.Spec.TTLSecondsAfterFinished)
	}
	if sa := job.Spec.Template.Spec.ServiceAccountName; sa != "builder" {
		t.Errorf("serviceAccountName %q, want the namespace's builder", sa)
	}
	if job.Labels["team"] != "a" {
		t.Errorf("labels %v, want team=a", job.Labels)
	}
	// What a Job sets stays.
	own := jobObject(a, "own")
	own.Spec.ActiveDeadlineSeconds = new(int64(42))
	own.Spec.Template.Spec.ServiceAccountName = "mine"
	own.Labels = map[string]string{"team": "mine"}
	got := cl.create(t, own)
	if *got.Spec.ActiveDeadlineSeconds != 42 || got.Spec.Template.Spec.ServiceAccountName != "mine" || got.Labels["team"] != "mine" {
		t.Errorf("a Job's own values were replaced: %+v %q %v", *got.Spec.ActiveDeadlineSeconds, got.Spec.Template.Spec.ServiceAccountName, got.Labels)
	}

	// The reconciler annotates the Job with the configuration's hash and
	// sources.
	var hash string
	eventually(t, "the annotations", func() string {
		an := cl.annotations(t, a, job.Name)
		hash = an[namespaced.AnnotationResolvedHash]
		src := an[namespaced.AnnotationSources]
		if !strings.HasPrefix(hash, "sha256:") || !strings.Contains(src, "namespace:"+a+"/"+OverridesName+"@"+cm.ResourceVersion) {
			return fmt.Sprintf("annotations %v", an)
		}
		return ""
	})

	// A tenant edit reaches new Jobs and annotates the existing ones
	// again, woken by the resolver, not a resync.
	cm = cl.overrides(t, a, map[string]string{"default-timeout-seconds": "90", "default-service-account": "builder", "default-labels": "{team: a}"})
	eventually(t, "the edit in the existing Job's annotations", func() string {
		an := cl.annotations(t, a, job.Name)
		if an[namespaced.AnnotationResolvedHash] == hash || !strings.Contains(an[namespaced.AnnotationSources], "@"+cm.ResourceVersion) {
			return fmt.Sprintf("annotations %v", an)
		}
		return ""
	})
	if got := cl.create(t, jobObject(a, "after-edit")); *got.Spec.ActiveDeadlineSeconds != 90 {
		t.Errorf("a Job created after the edit: activeDeadlineSeconds %d, want 90", *got.Spec.ActiveDeadlineSeconds)
	}
}

// overridesWithoutConfigMapWebhook writes the overrides ConfigMap of ns
// (cluster.overrides) with the ConfigMap webhook away, as when the
// controller is down: its configuration fails open, so an invalid layer
// can get in.
func (cl *cluster) overridesWithoutConfigMapWebhook(t *testing.T, ns string, data map[string]string) *corev1.ConfigMap {
	t.Helper()
	api := cl.c.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	ctx := context.Background()
	saved, err := api.Get(ctx, ConfigMapWebhookName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := api.Delete(ctx, ConfigMapWebhookName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		saved.ResourceVersion, saved.UID = "", ""
		if _, err := api.Create(ctx, saved, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}()
	// The API server learns of the deletion through a watch of its own:
	// until then it still calls the webhook. A dry run of the same create
	// reaches the webhook too (its side effects are None), and writes
	// nothing; one that fails for another reason (the ConfigMap exists)
	// was admitted.
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: OverridesName, Labels: OverrideLabels}, Data: data}
	eventually(t, "the API server to stop calling the ConfigMap webhook", func() string {
		_, err := cl.c.CoreV1().ConfigMaps(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "denied the request") {
			return err.Error()
		}
		return ""
	})
	return cl.overrides(t, ns, data)
}

// TestConfigMapAdmission writes layer ConfigMaps through the API server:
// an invalid tenant or cluster ConfigMap is denied with its problem, a
// tenant's refused keys come back as warnings, and other ConfigMaps of the
// tenant's namespace never reach the webhook.
func TestConfigMapAdmission(t *testing.T) {
	cl := startCluster(t)
	c := cl.namespace(t, "team-c")
	var warnings []string
	cfg := rest.CopyConfig(cl.cfg)
	cfg.WarningHandler = warningsTo(&warnings)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tenant := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c, Name: OverridesName, Labels: OverrideLabels}, Data: data}
	}
	_, err = client.CoreV1().ConfigMaps(c).Create(ctx, tenant(map[string]string{"default-timeout-seconds": "-5"}), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "denied the request") || !strings.Contains(err.Error(), "default-timeout-seconds") {
		t.Errorf("an invalid tenant ConfigMap: %v", err)
	}
	// A key the kind renamed is refused with its tombstone.
	_, err = client.CoreV1().ConfigMaps(c).Create(ctx, tenant(map[string]string{"default-timeout-minutes": "5"}), metav1.CreateOptions{})
	if want := `field "default-timeout-minutes" was renamed to "default-timeout-seconds" in v0.2: give the timeout in seconds`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a renamed key: %v, want %q", err, want)
	}
	if _, err := client.CoreV1().ConfigMaps(c).Create(ctx, tenant(map[string]string{"default-timeout-seconds": "60", "max-timeout-seconds": "99999"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a tenant ConfigMap with a refused key: %v", err)
	}
	if want := `namespace team-c/strata-overrides: key "max-timeout-seconds" not applied: cluster-only key`; !slices.Contains(warnings, want) {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
	warnings = nil
	if _, err := client.CoreV1().ConfigMaps(c).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c, Name: "app"}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{}); err != nil || len(warnings) > 0 {
		t.Errorf("an unrelated ConfigMap: %v, %q", err, warnings)
	}
	cur, err := client.CoreV1().ConfigMaps(SystemNamespace).Get(ctx, ClusterConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Data["enforced-config-level"] = "maybe"
	if _, err := client.CoreV1().ConfigMaps(SystemNamespace).Update(ctx, cur, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), `"maybe" is neither`) {
		t.Errorf("an invalid cluster ConfigMap: %v", err)
	}
}

// warningsTo returns a handler that collects the API server's warnings
// into w.
func warningsTo(w *[]string) rest.WarningHandler { return collector{w} }

type collector struct{ w *[]string }

func (c collector) HandleWarningHeader(_ int, _ string, text string) { *c.w = append(*c.w, text) }

func TestInvalidTenantConfigMapNeverRefusesAJob(t *testing.T) {
	cl := startCluster(t)
	b := cl.namespace(t, "team-b")
	bad := cl.overridesWithoutConfigMapWebhook(t, b, map[string]string{"default-timeout-seconds": "-5", "default-service-account": "Not_A_Name"})
	time.Sleep(500 * time.Millisecond) // for the manager's cache to hold it, which nothing outside the manager announces; the Job must pass either way
	job := cl.create(t, jobObject(b, "despite"))
	if job.Spec.ActiveDeadlineSeconds == nil || *job.Spec.ActiveDeadlineSeconds != 600 || job.Spec.Template.Spec.ServiceAccountName != "job-runner" {
		t.Errorf("Job with an invalid namespace ConfigMap: deadline %v, serviceAccountName %q; want the cluster's 600 and job-runner",
			job.Spec.ActiveDeadlineSeconds, job.Spec.Template.Spec.ServiceAccountName)
	}
	eventually(t, "the Warning Event on the ConfigMap", func() string {
		evs, err := cl.c.EventsV1().Events(b).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		for _, e := range evs.Items {
			if e.Reason == namespaced.ReasonInvalidConfiguration && e.Regarding.UID == bad.UID && strings.Contains(e.Note, "default-timeout-seconds") {
				return ""
			}
		}
		return fmt.Sprintf("%d events, none about %s/%s", len(evs.Items), b, OverridesName)
	})
}

func TestAPIServerRestartLosesNothing(t *testing.T) {
	cl := startCluster(t)
	c := cl.namespace(t, "team-c")
	cl.overrides(t, c, map[string]string{"default-timeout-seconds": "200"})
	eventually(t, "the override", func() string {
		if got := cl.create(t, jobObject(c, "before-"+strconv.FormatInt(time.Now().UnixNano(), 36))); *got.Spec.ActiveDeadlineSeconds != 200 {
			return fmt.Sprintf("deadline %d", *got.Spec.ActiveDeadlineSeconds)
		}
		return ""
	})
	api := cl.env.ControlPlane.APIServer
	if err := api.Stop(); err != nil && !strings.Contains(err.Error(), "timeout waiting") {
		t.Fatal(err) // a timeout is a kill, as in an outage
	}
	addr := api.SecureServing.ListenAddr.HostPort()
	eventually(t, "the API server's port to be free", func() string {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			return addr + " still answers"
		}
		return ""
	})
	if err := api.Start(); err != nil {
		t.Fatalf("restarting the API server: %v", err)
	}
	cm := cl.overrides(t, c, map[string]string{"default-timeout-seconds": "250"})
	var after *batchv1.Job
	eventually(t, "the edit after the restart", func() string {
		after = cl.create(t, jobObject(c, "after-"+strconv.FormatInt(time.Now().UnixNano(), 36)))
		if *after.Spec.ActiveDeadlineSeconds != 250 {
			return fmt.Sprintf("deadline %d", *after.Spec.ActiveDeadlineSeconds)
		}
		return ""
	})
	eventually(t, "the annotation after the restart", func() string {
		if src := cl.annotations(t, c, after.Name)[namespaced.AnnotationSources]; !strings.Contains(src, "@"+cm.ResourceVersion) {
			return "sources " + src
		}
		return ""
	})
}

func TestCommandLine(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--kubeconfig", "k", "--webhook-host", "127.0.0.1", "--cert-dir", "d"},
		{"--kubeconfig", "k", "--webhook-host", "127.0.0.1", "--webhook-port", "70000", "--cert-dir", "d"},
		{"--nope"},
	} {
		var out watchtest.Buffer
		if code := run(context.Background(), args, &out); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, out.String())
		}
	}
}
