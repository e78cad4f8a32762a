package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stratacfg/strata/examples/controller/apis/defaults/v1alpha1"
	"github.com/stratacfg/strata/integrations/stratacr"
	"github.com/stratacfg/strata/internal/servingcert"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers/namespaced"
)

// loadNamespaces is how many namespaces case 6 runs with.
const loadNamespaces = 10000

// BenchmarkCase6Controller measures jobdefaults against the real
// kube-apiserver (envtest over bin/), with 10,000 namespaces that each have
// an override ConfigMap, an unrelated 4 KiB ConfigMap and a Job:
//
//   - admission: Jobs created through jobdefaults' webhook in
//     namespaces it has not resolved and in namespaces it has, through a
//     webhook that does nothing (the floor of any webhook), through one
//     that answers with the patch of the same fields made once (the floor
//     of any webhook that sets them), through one that sets them from
//     constants on controller-runtime's defaulting path, and in
//     namespaces no webhook sees: all four webhooks served by one manager (one webhook server, TLS and API
//     server), the creates interleaved round-robin across the rows and
//     across namespaces, admissionRounds per row, no reconciler running;
//     p50 and p99;
//   - reconcile: the configuration read of one reconcile, strata's
//     ForNamespace against what a controller-runtime reconciler written by
//     hand does, a Get of the namespace's ConfigMap from the manager's
//     cache and a parse of its keys, each applied to a Job; read/strata is
//     strata's read alone;
//   - memory: the heap a manager holds once it has reconciled every Job,
//     with strata (the ConfigMap cache kept to labelled ConfigMaps, a
//     snapshot per namespace) against the hand-written one (the default
//     cache of every ConfigMap).
func BenchmarkCase6Controller(b *testing.B) {
	cl := startCluster(b)
	ctx := context.Background()
	names := populate(b, cl)

	// jobdefaults' reconciler would patch every Job created while the
	// creates are timed: it stops, and its webhook is served below, in a
	// manager wired as its own, beside the floors.
	stopJobdefaults(b, cl)
	creates, handlers, err := admissionRows(b, cl)
	if err != nil {
		b.Fatal(err)
	}
	for _, row := range admissionOrder {
		b.Run("admission/"+row, func(b *testing.B) {
			reportLatencies(b, creates[row])
			if h := handlers[row]; len(h) > 0 {
				b.ReportMetric(float64(percentile(h, 50).Nanoseconds())/1e3, "handler-µs")
			}
		})
	}

	stopStrata, r, err := strataManager(cl.cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("reconcile/strata", func(b *testing.B) {
		readLoop(b, names, func(ns string, job *batchv1.Job) error {
			snap, err := r.ForNamespace(ctx, ns)
			if err != nil {
				return err
			}
			return applyDefaults(ctx, job, snap)
		})
	})
	// The read alone: the snapshot, nothing applied.
	b.Run("read/strata", func(b *testing.B) {
		readLoop(b, names, func(ns string, _ *batchv1.Job) error {
			_, err := r.ForNamespace(ctx, ns)
			return err
		})
	})
	if err := stopStrata(); err != nil {
		b.Fatal(err)
	}
	stopHand, hand, err := handManager(cl.cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("reconcile/hand-written", func(b *testing.B) {
		readLoop(b, names, func(ns string, job *batchv1.Job) error { return hand.read(ctx, ns, job) })
	})
	if err := stopHand(); err != nil {
		b.Fatal(err)
	}
	// Each manager's heap in a process of its own: this one holds the
	// control plane's clients and jobdefaults besides.
	for _, which := range []string{"strata", "hand-written"} {
		b.Run("memory/"+which, func(b *testing.B) { heapOf(b, cl, which, len(names)) })
	}
}

// populate creates the namespaces, their ConfigMaps and a Job in each, in
// parallel, and returns the namespaces.
func populate(b *testing.B, cl *cluster) []string {
	b.Helper()
	ctx := context.Background()
	names := make([]string, loadNamespaces)
	for i := range names {
		names[i] = "load-" + strconv.Itoa(i)
	}
	filler := strings.Repeat("x", 4096)
	start := time.Now()
	work := make(chan string)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ns := range work {
				if err := createLoad(ctx, cl, ns, filler); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for _, ns := range names {
		work <- ns
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	b.Logf("created %d namespaces with two ConfigMaps and a Job each in %s", len(names), time.Since(start).Round(time.Millisecond))
	start = time.Now()
	// Let jobdefaults annotate every Job first: its patches would weigh on
	// the API server while the creates are timed.
	last := names[len(names)-1]
	eventuallyWithin(b, 10*time.Minute, "the annotation of the last Job", func() string {
		if cl.annotations(b, last, "job")[namespaced.AnnotationResolvedHash] == "" {
			return "not annotated"
		}
		return ""
	})
	b.Logf("jobdefaults annotated them in %s", time.Since(start).Round(time.Millisecond))
	return names
}

// createLoad creates namespace ns, labelled with the webhook whose
// admission row it serves, its ConfigMaps and a Job.
func createLoad(ctx context.Context, cl *cluster, ns, filler string) error {
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if hook := webhookOf(ns); hook != "" {
		n.Labels = map[string]string{benchWebhookLabel: hook}
	}
	if _, err := cl.c.CoreV1().Namespaces().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		return err
	}
	cms := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: OverridesName, Labels: OverrideLabels},
			Data: map[string]string{"default-timeout-seconds": strconv.Itoa(100 + len(ns)), "default-service-account": "builder"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-settings"}, Data: map[string]string{"settings": filler}},
	}
	for _, cm := range cms {
		if _, err := cl.c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	_, err := cl.c.BatchV1().Jobs(ns).Create(ctx, jobObject(ns, "job"), metav1.CreateOptions{})
	return err
}

// benchWebhookLabel, on a namespace, names the one webhook of the
// admission rows that sees its Jobs: "strata", "noop", "patch" or "constants".
const benchWebhookLabel = "bench.strata.dev/webhook"

// The admission rows, in the order each round creates a Job in each
// (starting one further each round), and how many Jobs each row creates.
var admissionOrder = []string{"strata-webhook", "strata-webhook-cached", "noop-webhook", "patch-webhook", "constants-webhook", "no-webhook"}

const (
	admissionRounds = 1000
	// hotNamespaces is how many namespaces the cached row creates its
	// Jobs in, in turn; each is resolved before the row starts.
	hotNamespaces = 100
)

// webhookOf returns the webhook that sees the Jobs of load namespace ns,
// by its number: a tenth each to strata's cold and cached rows (in the
// cached row's tenth, only the first hotNamespaces), the no-op webhook,
// the patch webhook, the constants webhook, and no webhook.
func webhookOf(ns string) string {
	i, err := strconv.Atoi(strings.TrimPrefix(ns, "load-"))
	if err != nil {
		return ""
	}
	switch i % 10 {
	case 0, 1:
		return "strata"
	case 2:
		return "noop"
	case 3:
		return "patch"
	case 4:
		return "constants"
	}
	return ""
}

// rowNamespaces returns the load namespaces of each admission row.
func rowNamespaces() map[string][]string {
	rows := map[string][]string{}
	tenth := []string{"strata-webhook", "strata-webhook-cached", "noop-webhook", "patch-webhook", "constants-webhook", "no-webhook"}
	for i := range loadNamespaces {
		if i%10 < len(tenth) {
			row := tenth[i%10]
			rows[row] = append(rows[row], "load-"+strconv.Itoa(i))
		}
	}
	rows["strata-webhook-cached"] = rows["strata-webhook-cached"][:hotNamespaces]
	return rows
}

// stopJobdefaults stops the jobdefaults the cluster runs and removes its
// webhook configurations; the cluster serves no test after it.
func stopJobdefaults(b *testing.B, cl *cluster) {
	cl.stop()
	code := <-cl.done
	cl.done <- code // for TestMain, which waits for it too
	if code != 0 {
		b.Fatalf("jobdefaults exited with %d:\n%s", code, cl.stderr.String())
	}
	sharedErr = errors.New("jobdefaults was stopped by BenchmarkCase6Controller")
	ctx := context.Background()
	regs := cl.c.AdmissionregistrationV1()
	if err := regs.MutatingWebhookConfigurations().Delete(ctx, WebhookName, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := regs.ValidatingWebhookConfigurations().Delete(ctx, ConfigMapWebhookName, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
}

// admissionRows serves jobdefaults' webhook, a no-op webhook, a patch
// webhook and a constants webhook from one manager, wired as jobdefaults
// wires its own but with no reconciler, and creates Jobs through them
// round-robin, admissionRounds in each row's namespaces. It returns each
// create's time and each handler's, by row.
func admissionRows(b *testing.B, cl *cluster) (creates, handlers map[string][]time.Duration, err error) {
	ctx := context.Background()
	const host = "127.0.0.1"
	certDir := b.TempDir()
	caBundle, err := servingcert.Ensure(certDir, host, "strata bench")
	if err != nil {
		return nil, nil, err
	}
	port := freePort(b)
	o, err := options()
	if err != nil {
		return nil, nil, err
	}
	o.Metrics = namespaced.NewMetrics("bench_admission") // jobdefaults' are registered already
	mgr, err := newManager(cl.cfg, ctrl.Options{Cache: cache.Options{ByObject: stratacr.CacheByObject(o)}, WebhookServer: newWebhookServer(host, port, certDir)})
	if err != nil {
		return nil, nil, err
	}
	r, err := stratacr.New(mgr, o)
	if err != nil {
		return nil, nil, err
	}
	rows := rowNamespaces()
	handled := &handlerTimes{rowOf: map[string]string{}, times: map[string][]time.Duration{}}
	for row, names := range rows {
		for _, ns := range names {
			handled.rowOf[ns] = row
		}
	}
	srv := mgr.GetWebhookServer()
	// jobdefaults' webhook, as addWebhooks registers it, timed.
	srv.Register(WebhookPath, handled.timed(stratacr.Defaulter(r, applyDefaults).Handler))
	srv.Register("/noop", handled.timed(cradmission.HandlerFunc(func(context.Context, cradmission.Request) cradmission.Response {
		return cradmission.Allowed("")
	})))
	// The floor of any webhook that sets the four fields: the JSON patch
	// that sets them, made once, sent back without reading the request.
	// What it adds over the no-op webhook is the API server's applying a
	// patch.
	srv.Register("/patch", handled.timed(cradmission.HandlerFunc(func(context.Context, cradmission.Request) cradmission.Response {
		resp := cradmission.Allowed("")
		resp.Patch, resp.PatchType = constantPatch, new(admissionv1.PatchTypeJSONPatch)
		return resp
	})))
	// controller-runtime's defaulting path, the same four fields set from
	// constants.
	srv.Register("/constants", handled.timed(cradmission.WithDefaulter[*batchv1.Job](mgr.GetScheme(), constantDefaults{}).Handler))
	stop, err := startManager(mgr)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err := stop(); err != nil {
			b.Error(err)
		}
	}()
	if err := r.WaitReady(ctx); err != nil {
		return nil, nil, err
	}
	started := srv.StartedChecker()
	watchtest.Until(time.Minute, func() bool { return started(nil) == nil })
	regs := cl.c.AdmissionregistrationV1().MutatingWebhookConfigurations()
	for hook, path := range map[string]string{"strata": WebhookPath, "noop": "/noop", "patch": "/patch", "constants": "/constants"} {
		w := webhookConfiguration(host, port, caBundle)
		w.Name = "bench-" + hook
		url := "https://" + net.JoinHostPort(host, strconv.Itoa(port)) + path
		w.Webhooks[0].Name, w.Webhooks[0].ClientConfig.URL = hook+".bench.config.strata.dev", &url
		w.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{benchWebhookLabel: hook}}
		if _, err := regs.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			return nil, nil, err
		}
		defer regs.Delete(ctx, w.Name, metav1.DeleteOptions{})
	}
	// Ready when a dry-run Job comes back from each row as its webhook
	// makes it; these also open the API server's connections to the
	// webhook server.
	for row, want := range map[string]bool{"strata-webhook-cached": true, "constants-webhook": true, "patch-webhook": true, "noop-webhook": false} {
		ns := rows[row][0]
		var probeErr error
		if !watchtest.Until(30*time.Second, func() bool {
			var job *batchv1.Job
			job, probeErr = cl.c.BatchV1().Jobs(ns).Create(ctx, jobObject(ns, "probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return probeErr == nil && (job.Spec.ActiveDeadlineSeconds != nil) == want
		}) {
			return nil, nil, fmt.Errorf("the webhook of row %s did not answer as it should (%v)", row, probeErr)
		}
	}
	for _, ns := range rows["strata-webhook-cached"] {
		if _, err := r.ForNamespace(ctx, ns); err != nil {
			return nil, nil, err
		}
	}
	handled.reset()
	lat := map[string][]time.Duration{}
	for i := range admissionRounds {
		for k := range admissionOrder {
			row := admissionOrder[(i+k)%len(admissionOrder)]
			names := rows[row]
			ns := names[i%len(names)]
			start := time.Now()
			if _, err := cl.c.BatchV1().Jobs(ns).Create(ctx, jobObject(ns, row+"-"+strconv.Itoa(i)), metav1.CreateOptions{}); err != nil {
				return nil, nil, fmt.Errorf("row %s: %w", row, err)
			}
			lat[row] = append(lat[row], time.Since(start))
		}
	}
	return lat, handled.times, nil
}

// handlerTimes records how long each webhook's handler took on each
// request, by the row of the request's namespace.
type handlerTimes struct {
	rowOf map[string]string // namespace → row
	mu    sync.Mutex
	times map[string][]time.Duration
}

// timed returns h as a webhook whose handler is timed.
func (t *handlerTimes) timed(h cradmission.Handler) *webhook.Admission {
	return &webhook.Admission{Handler: cradmission.HandlerFunc(func(ctx context.Context, req cradmission.Request) cradmission.Response {
		start := time.Now()
		resp := h.Handle(ctx, req)
		d := time.Since(start)
		t.mu.Lock()
		defer t.mu.Unlock()
		if row := t.rowOf[req.Namespace]; row != "" {
			t.times[row] = append(t.times[row], d)
		}
		return resp
	})}
}

func (t *handlerTimes) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.times)
}

// reportLatencies reports the mean, p50 and p99 of lat.
func reportLatencies(b *testing.B, lat []time.Duration) {
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	b.ReportMetric(float64(sum.Nanoseconds())/float64(len(lat)), "ns/op")
	b.ReportMetric(float64(percentile(lat, 50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 99).Microseconds()), "p99-µs")
}

// percentile returns the p-th percentile of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	ds = slices.Sorted(slices.Values(ds))
	return ds[len(ds)*p/100]
}

// readLoop times read over every namespace in turn, on a Job whose
// defaulted fields are cleared each time, after one round that is not
// timed (strata's first read of a namespace builds its snapshot: that is
// a cold resolve, not a reconcile's read).
func readLoop(b *testing.B, names []string, read func(ns string, job *batchv1.Job) error) {
	const rounds = 20
	j := jobObject("x", "job")
	for _, ns := range names {
		if err := read(ns, j); err != nil {
			b.Fatalf("%s: %v", ns, err)
		}
	}
	start := time.Now()
	for r := range rounds {
		for _, ns := range names {
			j.Namespace, j.Labels = ns, nil
			j.Spec.ActiveDeadlineSeconds, j.Spec.TTLSecondsAfterFinished, j.Spec.Template.Spec.ServiceAccountName = nil, nil, ""
			if err := read(ns, j); err != nil {
				b.Fatalf("round %d, %s: %v", r, ns, err)
			}
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(rounds*len(names)), "ns/op")
}

func newManager(cfg *rest.Config, opts ctrl.Options) (ctrl.Manager, error) {
	opts.Scheme = clientgoscheme.Scheme
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	return ctrl.NewManager(cfg, opts)
}

// startManager starts mgr, waits for its cache, and returns how to stop it.
func startManager(mgr ctrl.Manager) (stop func() error, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop = func() error {
		cancel()
		return <-done
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		stop()
		return nil, fmt.Errorf("the cache did not sync")
	}
	return stop, nil
}

// constantPatch is the JSON patch constantDefaults makes of a Job of
// jobObject's.
var constantPatch = []byte(`[{"op":"add","path":"/metadata/labels","value":{"team":"bench"}},` +
	`{"op":"add","path":"/spec/activeDeadlineSeconds","value":600},{"op":"add","path":"/spec/ttlSecondsAfterFinished","value":300},` +
	`{"op":"add","path":"/spec/template/spec/serviceAccountName","value":"builder"}]`)

// constantDefaults sets the fields jobdefaults' webhook sets, from
// constants.
type constantDefaults struct{}

func (constantDefaults) Default(_ context.Context, job *batchv1.Job) error {
	if job.Spec.ActiveDeadlineSeconds == nil {
		job.Spec.ActiveDeadlineSeconds = new(int64(600))
	}
	if job.Spec.TTLSecondsAfterFinished == nil {
		job.Spec.TTLSecondsAfterFinished = new(int32(300))
	}
	if _, ok := job.Labels["team"]; !ok {
		if job.Labels == nil {
			job.Labels = map[string]string{}
		}
		job.Labels["team"] = "bench"
	}
	if job.Spec.Template.Spec.ServiceAccountName == "" {
		job.Spec.Template.Spec.ServiceAccountName = "builder"
	}
	return nil
}

// strataManager starts a manager wired as jobdefaults wires its own,
// without the webhook, caching every namespace.
func strataManager(cfg *rest.Config) (stop func() error, r *stratacr.Resolver[*v1alpha1.JobDefaults], err error) {
	o, err := options()
	if err != nil {
		return nil, nil, err
	}
	o.CacheSize = loadNamespaces
	o.Metrics = namespaced.NewMetrics("bench")
	mgr, err := newManager(cfg, ctrl.Options{Cache: cache.Options{ByObject: stratacr.CacheByObject(o)}})
	if err != nil {
		return nil, nil, err
	}
	if r, err = stratacr.New(mgr, o); err != nil {
		return nil, nil, err
	}
	// The Jobs, as the reconciler's For(&batchv1.Job{}) caches them.
	if _, err := mgr.GetCache().GetInformer(context.Background(), &batchv1.Job{}); err != nil {
		return nil, nil, err
	}
	if stop, err = startManager(mgr); err != nil {
		return nil, nil, err
	}
	if err := r.WaitReady(context.Background()); err != nil {
		stop()
		return nil, nil, err
	}
	return stop, r, nil
}

// handWritten is the pattern users write by hand: read the namespace's
// ConfigMap from the manager's cache on every reconcile and parse it.
type handWritten struct {
	c client.Reader
}

// handManager starts a manager with controller-runtime's default cache,
// which holds every ConfigMap, and the Jobs.
func handManager(cfg *rest.Config) (stop func() error, h *handWritten, err error) {
	mgr, err := newManager(cfg, ctrl.Options{})
	if err != nil {
		return nil, nil, err
	}
	for _, obj := range []client.Object{&batchv1.Job{}, &corev1.ConfigMap{}} {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return nil, nil, err
		}
	}
	if stop, err = startManager(mgr); err != nil {
		return nil, nil, err
	}
	return stop, &handWritten{c: mgr.GetClient()}, nil
}

// read gives job its namespace's defaults as such a reconciler does: the
// cluster ConfigMap and the namespace's, each read from the cache, the
// namespace's keys over the cluster's when the cluster allows it.
func (h *handWritten) read(ctx context.Context, ns string, job *batchv1.Job) error {
	var cluster, own corev1.ConfigMap
	if err := h.c.Get(ctx, types.NamespacedName{Namespace: SystemNamespace, Name: ClusterConfigMap}, &cluster); err != nil {
		return err
	}
	data := map[string]string{}
	for k, v := range cluster.Data {
		data[k] = v
	}
	if err := h.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: OverridesName}, &own); err == nil && data["enforced-config-level"] == "namespace" {
		for _, k := range []string{"default-timeout-seconds", "default-ttl-seconds-after-finished", "default-service-account"} {
			if v, ok := own.Data[k]; ok {
				data[k] = v
			}
		}
	}
	if v, ok := data["default-timeout-seconds"]; ok && job.Spec.ActiveDeadlineSeconds == nil {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("default-timeout-seconds: %w", err)
		}
		job.Spec.ActiveDeadlineSeconds = &n
	}
	if v, ok := data["default-ttl-seconds-after-finished"]; ok && job.Spec.TTLSecondsAfterFinished == nil {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return fmt.Errorf("default-ttl-seconds-after-finished: %w", err)
		}
		job.Spec.TTLSecondsAfterFinished = new(int32(n))
	}
	if v, ok := data["default-service-account"]; ok && job.Spec.Template.Spec.ServiceAccountName == "" {
		job.Spec.Template.Spec.ServiceAccountName = v
	}
	return nil
}

// heapEnv names, in the process heapOf starts, the manager to measure.
const heapEnv = "JOBDEFAULTS_HEAP_OF"

// heapOf runs this test binary again, as managerHeap, for the manager
// which, and reports the heap it holds.
func heapOf(b *testing.B, cl *cluster, which string, namespaces int) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), heapEnv+"="+which, "JOBDEFAULTS_KUBECONFIG="+cl.kubeconfig, "JOBDEFAULTS_NAMESPACES="+strconv.Itoa(namespaces))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("measuring %s: %v\n%s", which, err, out)
	}
	found := 0
	for _, line := range strings.Split(string(out), "\n") {
		for prefix, unit := range map[string]string{"heap-bytes ": "heap-MiB", "inuse-bytes ": "inuse-MiB"} {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(n/(1<<20), unit)
				found++
			}
		}
	}
	if found == 2 {
		b.ReportMetric(0, "ns/op")
		return
	}
	b.Fatalf("measuring %s: no heap-bytes and inuse-bytes lines in\n%s", which, out)
}

// managerHeap is the process heapOf starts (TestMain runs it when heapEnv
// is set): one manager against the cluster the environment names, every
// namespace's configuration read through it as its reconciles would, and
// the heap it holds beyond what the process held before, on stdout.
func managerHeap(which string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("JOBDEFAULTS_KUBECONFIG"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 100, 200
	n, err := strconv.Atoi(os.Getenv("JOBDEFAULTS_NAMESPACES"))
	if err != nil {
		return err
	}
	beforeLive, beforeInuse := heapInUse()
	ctx := context.Background()
	var read func(ns string) error
	var stop func() error
	switch which {
	case "strata":
		var r *stratacr.Resolver[*v1alpha1.JobDefaults]
		if stop, r, err = strataManager(cfg); err != nil {
			return err
		}
		read = func(ns string) error {
			_, err := r.ForNamespace(ctx, ns)
			return err
		}
	case "hand-written":
		var h *handWritten
		if stop, h, err = handManager(cfg); err != nil {
			return err
		}
		read = func(ns string) error { return h.read(ctx, ns, jobObject(ns, "x")) }
	default:
		return fmt.Errorf("%s=%q", heapEnv, which)
	}
	defer stop()
	for i := range n {
		if err := read("load-" + strconv.Itoa(i)); err != nil {
			return err
		}
	}
	live, inuse := heapInUse()
	fmt.Printf("heap-bytes %d\ninuse-bytes %d\n", live-beforeLive, inuse-beforeInuse)
	// JOBDEFAULTS_HEAP_PROFILE_DIR keeps a heap profile of each manager,
	// to see what the heap holds (go tool pprof -sample_index=inuse_space).
	if dir := os.Getenv("JOBDEFAULTS_HEAP_PROFILE_DIR"); dir != "" {
		f, err := os.Create(filepath.Join(dir, which+".heap"))
		if err != nil {
			return err
		}
		defer f.Close()
		return pprof.WriteHeapProfile(f)
	}
	return nil
}

// heapInUse returns, after two garbage collections, the live heap (the
// bytes of the objects the collection found reachable) and the heap in
// use (the spans that hold any object, so also their free slots).
func heapInUse() (live, inuse uint64) {
	runtime.GC()
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return sample[0].Value.Uint64(), m.HeapInuse
}
