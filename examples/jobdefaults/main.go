// Command jobdefaults gives batch/v1 Jobs per-namespace defaults at
// admission, the way Tekton's webhook gives TaskRuns theirs (TEP-0085), as
// a kubebuilder-style controller-runtime manager. The configuration is
// examples/controller's: a cluster ConfigMap strata-defaults in
// strata-system, and a ConfigMap strata-overrides that a namespace owns
// (labelled app.kubernetes.io/part-of=strata-example and
// config.strata.dev/type=namespace), merged key by key under the
// operator's tenant policy.
//
//	jobdefaults --kubeconfig FILE --webhook-host 127.0.0.1 --webhook-port PORT --cert-dir DIR
//	    [--metrics-bind-address ADDR] [--health-probe-bind-address ADDR] [--leader-elect]
//
// At start it writes a self-signed serving certificate into DIR if none is
// there, and creates or updates the MutatingWebhookConfiguration
// strata-jobdefaults for CREATE of batch/v1 Jobs, pointing at
// https://HOST:PORT/mutate-batch-v1-job with that certificate as its CA
// bundle. At admission a Job gets, where it leaves them unset,
// spec.activeDeadlineSeconds, spec.ttlSecondsAfterFinished, the default
// labels and spec.template.spec.serviceAccountName from its namespace's
// configuration. The reconciler annotates every Job with
// config.strata.dev/resolved-hash and config.strata.dev/sources, and
// annotates again the Jobs of a namespace whose configuration changed,
// among the namespaces it keeps resolved (the cluster ConfigMap's
// namespace-config-cache-size, read at start).
//
// --metrics-bind-address serves /metrics and the z-pages: /configz (a
// namespace's configuration with ?namespace=NS, every key with its
// source), /flagz and /statusz.
//
// Run as several replicas with --leader-elect: every replica resolves
// the configuration and serves the webhooks; the leader (a Lease in
// strata-system) alone reconciles and registers the webhook
// configurations. /readyz on --health-probe-bind-address fails until the
// replica's resolver has read the cluster ConfigMap.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/stratacfg/strata/examples/controller/apis/defaults/v1alpha1"
	"github.com/stratacfg/strata/integrations/stratacr"
	"github.com/stratacfg/strata/internal/servingcert"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
	"github.com/stratacfg/strata/layers/namespaced/webhook"
	"github.com/stratacfg/strata/zpages"
)

// Names the example uses, those of examples/controller.
const (
	SystemNamespace  = "strata-system"
	ClusterConfigMap = "strata-defaults"
	OverridesName    = "strata-overrides"
	// WebhookName names the MutatingWebhookConfiguration and its webhook.
	WebhookName = "strata-jobdefaults"
	// WebhookPath is where the webhook serves: controller-runtime's path
	// for batch/v1 Jobs.
	WebhookPath = "/mutate-batch-v1-job"
	// ConfigMapWebhookName names the ValidatingWebhookConfiguration of
	// the layer ConfigMaps; ConfigMapWebhookPath is where it serves.
	ConfigMapWebhookName = "configmaps.jobdefaults.config.strata.dev"
	ConfigMapWebhookPath = "/validate-configmaps"
	// FieldManager names the controller's writes.
	FieldManager = "strata-jobdefaults"
)

// OverrideLabels must be on a namespace's strata-overrides ConfigMap.
var OverrideLabels = map[string]string{
	"app.kubernetes.io/part-of": "strata-example",
	"config.strata.dev/type":    "namespace",
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

const usage = "Usage: jobdefaults --kubeconfig FILE --webhook-host 127.0.0.1 --webhook-port PORT --cert-dir DIR [--metrics-bind-address ADDR] [--health-probe-bind-address ADDR] [--leader-elect]\n"

// LeaseName names the Lease replicas elect a leader with, in
// SystemNamespace.
const LeaseName = "strata-jobdefaults"

// flags are the command line's values.
type flags struct {
	kubeconfig  string
	host        string
	port        int
	certDir     string
	metricsAddr string
	probeAddr   string
	leaderElect bool
	// set is the parsed command line, for /flagz.
	set *flag.FlagSet
}

func parse(args []string, stderr io.Writer) (*flags, error) {
	f := &flags{}
	fs := flag.NewFlagSet("jobdefaults", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "The kubeconfig of the cluster.")
	fs.StringVar(&f.host, "webhook-host", "", "The address the webhook serves on, and the API server calls.")
	fs.IntVar(&f.port, "webhook-port", 0, "The port the webhook serves on.")
	fs.StringVar(&f.certDir, "cert-dir", "", "The directory of the webhook's serving certificate (tls.crt, tls.key); a self-signed one is written there if none is.")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "0", `The address /metrics is served on; "0" serves none.`)
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", "0", `The address /healthz and /readyz are served on; "0" serves none.`)
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "Elect a leader among replicas: only the leader reconciles and registers the webhooks; every replica serves them.")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	f.set = fs
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case f.kubeconfig == "" || f.host == "" || f.certDir == "":
		return nil, errors.New("--kubeconfig, --webhook-host and --cert-dir are required")
	case f.port <= 0 || f.port > 65535:
		return nil, fmt.Errorf("--webhook-port must be a port number, not %d", f.port)
	}
	return f, nil
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	f, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "jobdefaults: %v\n%s", err, usage)
		return 2
	}
	if err := start(ctx, f); err != nil {
		fmt.Fprintln(stderr, "jobdefaults:", err)
		return 1
	}
	return 0
}

// options are the resolver's options: examples/controller's ConfigMaps,
// keys and tenant policy.
func options() (namespaced.Options[*v1alpha1.JobDefaults], error) {
	kind, err := v1alpha1.NewKind()
	if err != nil {
		return namespaced.Options[*v1alpha1.JobDefaults]{}, err
	}
	return namespaced.Options[*v1alpha1.JobDefaults]{
		Name:                "strata-jobdefaults",
		Kind:                kind,
		Namespace:           SystemNamespace,
		ClusterConfigMap:    ClusterConfigMap,
		NamespaceConfigMaps: []string{OverridesName},
		Labels:              OverrideLabels,
		Tenancy: tenancy.Policy{
			GateKey: "enforced-config-level", GateOpen: v1alpha1.LevelNamespace, GateClosed: v1alpha1.LevelCluster,
			LockKey: "non-overridable-fields",
		},
	}, nil
}

// clusterCacheSize reads namespace-config-cache-size from the cluster
// ConfigMap through c, the kind's default where there is none: it takes
// effect at start.
func clusterCacheSize(ctx context.Context, c client.Reader, o namespaced.Options[*v1alpha1.JobDefaults]) (int, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, types.NamespacedName{Namespace: SystemNamespace, Name: ClusterConfigMap}, cm)
	if apierrors.IsNotFound(err) {
		return int(v1alpha1.DefaultCacheSize), nil
	}
	if err != nil {
		return 0, err
	}
	d, err := namespaced.NewDryRun(o)
	if err != nil {
		return 0, err
	}
	snap, err := d.Resolve(SystemNamespace, []runtime.Object{cm})
	if err != nil {
		return 0, err
	}
	return int(*snap.Object.NamespaceConfigCacheSize), nil
}

// start runs the manager until ctx is done.
func start(ctx context.Context, f *flags) error {
	log := klog.Background().WithName("jobdefaults")
	ctrl.SetLogger(log)
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", f.kubeconfig, err)
	}
	// client-go's default of 5 requests a second would take half an hour
	// to annotate 10,000 Jobs; the API server's own fairness limits a
	// controller anyway.
	cfg.QPS, cfg.Burst = 100, 200
	caBundle, err := servingcert.Ensure(f.certDir, f.host, "strata jobdefaults")
	if err != nil {
		return fmt.Errorf("--cert-dir: %w", err)
	}
	o, err := options()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	webhooks := newWebhookServer(f.host, f.port, f.certDir)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// The manager's own metrics and health-probe servers are off:
		// addServer serves their paths under httpserve's limits.
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              LeaseName,
		LeaderElectionNamespace:       SystemNamespace,
		LeaderElectionReleaseOnCancel: true,
		// Only the ConfigMaps the resolver reads are cached.
		Cache:         cache.Options{ByObject: stratacr.CacheByObject(o)},
		WebhookServer: webhooks,
	})
	if err != nil {
		return err
	}
	if o.CacheSize, err = clusterCacheSize(ctx, mgr.GetAPIReader(), o); err != nil {
		return fmt.Errorf("reading namespace-config-cache-size: %w", err)
	}
	r, err := stratacr.New(mgr, o)
	if err != nil {
		return err
	}
	if f.metricsAddr != "0" {
		// The z-pages are served beside /metrics.
		pages := zpages.Handlers{}
		zpages.Install(pages, r.ZPages("jobdefaults", zpages.GoFlags(f.set)))
		if err := addServer(mgr, "metrics", f.metricsAddr, metricsHandler(pages)); err != nil {
			return err
		}
	}
	if f.probeAddr != "0" {
		probes := probeHandler(map[string]healthz.Checker{"ping": healthz.Ping}, map[string]healthz.Checker{"configuration": r.ReadyCheck})
		if err := addServer(mgr, "health probe", f.probeAddr, probes); err != nil {
			return err
		}
	}
	addWebhooks(mgr, r)
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("jobdefaults").
		For(&batchv1.Job{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		WatchesRawSource(r.Source(mgr.GetCache(), &batchv1.JobList{})).
		Complete(&reconciler{c: mgr.GetClient(), r: r}); err != nil {
		return err
	}
	// The API server is pointed at the webhook once it serves and the
	// configuration is loaded; with --leader-elect, by the leader (a
	// RunnableFunc runs on the leader alone).
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if err := r.WaitReady(ctx); err != nil {
			return err
		}
		started := mgr.GetWebhookServer().StartedChecker()
		for started(nil) != nil {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(20 * time.Millisecond):
			}
		}
		if err := registerWebhook(ctx, mgr.GetAPIReader(), mgr.GetClient(), f, caBundle, o); err != nil {
			return fmt.Errorf("registering the webhook: %w", err)
		}
		log.Info("Webhook registered", "configuration", WebhookName, "url", fmt.Sprintf("https://%s:%d%s", f.host, f.port, WebhookPath))
		return nil
	})); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// addWebhooks registers the webhooks on mgr's webhook server: the Jobs'
// defaults and the layer ConfigMaps' checks.
func addWebhooks(mgr ctrl.Manager, r *stratacr.Resolver[*v1alpha1.JobDefaults]) {
	mgr.GetWebhookServer().Register(WebhookPath, stratacr.Defaulter(r, applyDefaults))
	// The layer ConfigMaps are checked as they are written.
	mgr.GetWebhookServer().Register(ConfigMapWebhookPath, webhook.Handler(r))
}

// applyDefaults gives a Job being created its namespace's defaults, each
// only where the Job leaves it unset and from the snapshot alone, as
// stratacr.Defaulter asks: its webhook answers each request with a JSON
// patch found once per snapshot.
func applyDefaults(_ context.Context, job *batchv1.Job, snap *namespaced.Snapshot[*v1alpha1.JobDefaults]) error {
	d := snap.Object
	if job.Spec.ActiveDeadlineSeconds == nil && d.DefaultTimeoutSeconds != nil {
		t := *d.DefaultTimeoutSeconds
		if d.MaxTimeoutSeconds != nil && t > *d.MaxTimeoutSeconds {
			t = *d.MaxTimeoutSeconds
		}
		job.Spec.ActiveDeadlineSeconds = &t
	}
	if job.Spec.TTLSecondsAfterFinished == nil && d.DefaultTTLSecondsAfterFinished != nil {
		job.Spec.TTLSecondsAfterFinished = new(*d.DefaultTTLSecondsAfterFinished)
	}
	for k, v := range d.DefaultLabels {
		if _, ok := job.Labels[k]; !ok {
			if job.Labels == nil {
				job.Labels = map[string]string{}
			}
			job.Labels[k] = v
		}
	}
	if job.Spec.Template.Spec.ServiceAccountName == "" && d.DefaultServiceAccount != "" {
		job.Spec.Template.Spec.ServiceAccountName = d.DefaultServiceAccount
	}
	return nil
}

// reconciler annotates each Job with the configuration of its namespace:
// its hash and its sources.
type reconciler struct {
	c client.Client
	r interface {
		ForNamespace(context.Context, string) (*namespaced.Snapshot[*v1alpha1.JobDefaults], error)
	}
}

func (rc *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var job batchv1.Job
	if err := rc.c.Get(ctx, req.NamespacedName, &job); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	snap, err := rc.r.ForNamespace(ctx, job.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(job.DeepCopy())
	if !snap.Annotate(&job) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, rc.c.Patch(ctx, &job, patch, client.FieldOwner(FieldManager))
}
