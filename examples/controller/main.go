// Command controller gives batch/v1 Jobs per-namespace defaults, the way
// Tekton's config-defaults does for TaskRuns: a cluster ConfigMap
// strata-defaults in strata-system, and a ConfigMap strata-overrides that a
// namespace owns (labelled app.kubernetes.io/part-of=strata-example and
// config.strata.dev/type=namespace), merged key by key under the operator's
// tenant policy.
//
//	controller resolve --namespace NS --from-dir DIR      # no cluster: ConfigMap manifests from files
//	controller resolve --namespace NS --kubeconfig FILE   # the API server's ConfigMaps
//	controller run --kubeconfig FILE [--mode lazy|informer] [--metrics-addr ADDR]
//
// resolve prints the namespace's effective configuration, where each key
// came from, and what the tenant policy refused, as one JSON object. run
// defaults every Job it sees and annotates it with
// config.strata.dev/resolved-hash and config.strata.dev/sources.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/stratacfg/strata/examples/controller/apis/defaults/v1alpha1"
	"github.com/stratacfg/strata/internal/httpserve"
	"github.com/stratacfg/strata/internal/kubeobjects"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
	"github.com/stratacfg/strata/scheme"
)

// Names the example uses.
const (
	SystemNamespace  = "strata-system"
	ClusterConfigMap = "strata-defaults"
	OverridesName    = "strata-overrides"
)

// OverrideLabels must be on a namespace's strata-overrides ConfigMap.
var OverrideLabels = map[string]string{
	"app.kubernetes.io/part-of": "strata-example",
	"config.strata.dev/type":    "namespace",
}

type resolver = namespaced.Resolver[*v1alpha1.JobDefaults]

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `Usage:
  controller resolve --namespace NS (--from-dir DIR | --kubeconfig FILE)
  controller run --kubeconfig FILE [--mode lazy|informer] [--metrics-addr ADDR]
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "resolve":
		return resolveCommand(ctx, args[1:], stdout, stderr)
	case "run":
		return runCommand(ctx, args[1:], stderr)
	default:
		fmt.Fprintf(stderr, "controller: unknown command %q\n%s", args[0], usage)
		return 2
	}
}

// options are the resolver options of the example.
func options(cacheSize int) (namespaced.Options[*v1alpha1.JobDefaults], error) {
	return optionsIn(SystemNamespace, cacheSize)
}

// optionsIn are options with the cluster ConfigMap in namespace system.
func optionsIn(system string, cacheSize int) (namespaced.Options[*v1alpha1.JobDefaults], error) {
	kind, err := v1alpha1.NewKind()
	if err != nil {
		return namespaced.Options[*v1alpha1.JobDefaults]{}, err
	}
	return namespaced.Options[*v1alpha1.JobDefaults]{
		Name:                "strata-example-controller",
		Kind:                kind,
		Namespace:           system,
		ClusterConfigMap:    ClusterConfigMap,
		NamespaceConfigMaps: []string{OverridesName},
		Labels:              OverrideLabels,
		CacheSize:           cacheSize,
		Tenancy: tenancy.Policy{
			GateKey: "enforced-config-level", GateOpen: v1alpha1.LevelNamespace, GateClosed: v1alpha1.LevelCluster,
			LockKey: "non-overridable-fields",
			// A tenant's timeout lies within the operator's maximum, or
			// the built-in one when the cluster sets none.
			Bounds: []tenancy.Bound{{
				Key:       "default-timeout-seconds",
				AtMostKey: "max-timeout-seconds", AtMost: strconv.FormatInt(v1alpha1.DefaultMaxTimeoutSeconds, 10),
				AtLeast: "1",
			}},
		},
	}, nil
}

// Modes of run: how namespace ConfigMaps are read.
const (
	ModeLazy     = "lazy"
	ModeInformer = "informer"
)

// newResolver builds the resolver of mode over client.
func newResolver(client kubernetes.Interface, mode string, o namespaced.Options[*v1alpha1.JobDefaults]) (*resolver, error) {
	switch mode {
	case ModeLazy:
		return namespaced.NewLazy(client, o)
	case ModeInformer:
		return namespaced.NewInformer(client, o)
	}
	return nil, fmt.Errorf("unknown mode %q: lazy or informer", mode)
}

// Output is what resolve prints.
type Output struct {
	Namespace  string                   `json:"namespace"`
	Config     json.RawMessage          `json:"config"`
	Provenance map[string]KeyProvenance `json:"provenance"`
	Rejected   []Rejected               `json:"rejected"`
	Ignored    []string                 `json:"ignored,omitempty"`
	Hash       string                   `json:"hash"`
	Sources    []string                 `json:"sources"`
	Overrides  []string                 `json:"overrides"`
}

// KeyProvenance says which layer set a key and which it shadowed.
type KeyProvenance = layers.KeyProvenance

// Rejected is a key the tenant policy dropped.
type Rejected struct {
	Source string `json:"source"`
	Key    string `json:"key"`
	Reason string `json:"reason"`
	// Field is the field under Key the reason is about, when Key holds
	// an object or a map.
	Field string `json:"field,omitempty"`
}

func resolveCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("controller resolve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ns := fs.String("namespace", "", "The namespace to resolve.")
	dir := fs.String("from-dir", "", "Read ConfigMap and Namespace manifests from the .yaml, .yml and .json files of this directory instead of a cluster.")
	kubeconfig := fs.String("kubeconfig", "", "Read the ConfigMaps from the API server this kubeconfig names.")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *ns == "" || (*dir == "") == (*kubeconfig == "") || fs.NArg() > 0 {
		fmt.Fprint(stderr, "controller resolve: --namespace and exactly one of --from-dir and --kubeconfig are required\n", usage)
		return 2
	}
	o, err := options(0)
	if err != nil {
		fmt.Fprintln(stderr, "controller:", err)
		return 1
	}
	var snap *namespaced.Snapshot[*v1alpha1.JobDefaults]
	if *dir != "" {
		objs, err := kubeobjects.ReadDir(*dir)
		if err != nil {
			fmt.Fprintln(stderr, "controller:", err)
			return 1
		}
		d, err := namespaced.NewDryRun(o)
		if err != nil {
			fmt.Fprintln(stderr, "controller:", err)
			return 1
		}
		snap, err = d.Resolve(*ns, objs)
		if err != nil {
			fmt.Fprintln(stderr, "controller:", err)
			return 1
		}
	} else {
		client, err := newClient(*kubeconfig)
		if err != nil {
			fmt.Fprintln(stderr, "controller:", err)
			return 1
		}
		o.NoEvents = true // a read-only command records nothing
		r, err := namespaced.NewDirect(client, o)
		if err == nil {
			err = r.Start(ctx)
		}
		if err == nil {
			snap, err = r.ForNamespace(ctx, *ns)
			r.Stop()
		}
		if err != nil {
			fmt.Fprintln(stderr, "controller:", err)
			return 1
		}
	}
	out, err := explain(o.Kind, *ns, snap)
	if err != nil {
		fmt.Fprintln(stderr, "controller:", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(stderr, "controller:", err)
		return 1
	}
	return 0
}

// explain builds resolve's output; keys are ConfigMap keys.
func explain(kind *scheme.Kind, ns string, snap *namespaced.Snapshot[*v1alpha1.JobDefaults]) (*Output, error) {
	doc, err := kind.Encode(snap.Object, v1alpha1.SchemeGroupVersion, scheme.JSON)
	if err != nil {
		return nil, err
	}
	out := &Output{
		Namespace: ns, Config: json.RawMessage(doc), Provenance: map[string]KeyProvenance{},
		Rejected: []Rejected{}, Hash: snap.Hash(), Overrides: []string{},
	}
	for k, p := range layers.Provenances(snap.Provenance()) {
		out.Provenance[snap.KeyName(k)] = p
	}
	for _, d := range snap.Rejected() {
		out.Rejected = append(out.Rejected, Rejected{Source: d.Source.String(), Key: d.Key, Reason: d.Why(), Field: d.Field})
	}
	for _, err := range snap.Ignored() {
		out.Ignored = append(out.Ignored, err.Error())
	}
	for _, s := range snap.Sources() {
		ref := s.Origin + ":" + s.Name // as the sources annotation names a layer
		if s.Version != "" {
			ref += "@" + s.Version
		}
		out.Sources = append(out.Sources, ref)
	}
	out.Overrides = append(out.Overrides, snap.Overrides()...)
	return out, nil
}

func newClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	return kubernetes.NewForConfig(cfg)
}

func runCommand(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("controller run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "The kubeconfig of the cluster.")
	mode := fs.String("mode", ModeLazy, "How namespace ConfigMaps are read: lazy (a bounded cache, one shared watch) or informer (one cluster-wide informer).")
	metricsAddr := fs.String("metrics-addr", "", "Serve /metrics on this address when set.")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *kubeconfig == "" || fs.NArg() > 0 || (*mode != ModeLazy && *mode != ModeInformer) {
		fmt.Fprint(stderr, "controller run: --kubeconfig is required and --mode is lazy or informer\n", usage)
		return 2
	}
	client, err := newClient(*kubeconfig)
	if err != nil {
		fmt.Fprintln(stderr, "controller:", err)
		return 1
	}
	if err := runController(ctx, client, *mode, *metricsAddr, stderr); err != nil {
		fmt.Fprintln(stderr, "controller:", err)
		return 1
	}
	return 0
}

// runController runs until ctx ends.
func runController(ctx context.Context, client kubernetes.Interface, mode string, metricsAddr string, stderr io.Writer) error {
	log := klog.Background().WithName("controller")
	cacheSize, err := clusterCacheSize(ctx, client)
	if err != nil {
		return err
	}
	o, err := options(cacheSize)
	if err != nil {
		return err
	}
	reg := metrics.NewKubeRegistry()
	o.Metrics = namespaced.NewMetrics("example_controller")
	if _, err := o.Metrics.Register(reg.Registerer()); err != nil {
		return err
	}
	r, err := newResolver(client, mode, o)
	if err != nil {
		return err
	}
	if err := r.Start(ctx); err != nil {
		return err
	}
	defer r.Stop()
	if metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.HandlerFor(reg, metrics.HandlerOpts{}))
		srv, l, err := httpserve.Listen(metricsAddr, mux)
		if err != nil {
			return err
		}
		go func() { _ = srv.Serve(l) }()
		defer srv.Close()
		fmt.Fprintf(stderr, "serving /metrics on %s\n", l.Addr())
	}

	factory := informers.NewSharedInformerFactory(client, 0)
	jobs := factory.Batch().V1().Jobs()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
	defer queue.ShutDown()
	enqueue := func(obj any) {
		if name, err := cache.DeletionHandlingObjectToName(obj); err == nil {
			queue.Add(name)
		}
	}
	if _, err := jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	factory.WaitForCacheSync(ctx.Done())
	fmt.Fprintln(stderr, "controller running")
	go func() { <-ctx.Done(); queue.ShutDown() }()
	for {
		name, quit := queue.Get()
		if quit {
			return nil
		}
		err := reconcile(ctx, client, r, jobs.Lister().Jobs(name.Namespace), name)
		if err != nil {
			log.Error(err, "Reconciling a Job failed; retrying", "job", name)
			queue.AddRateLimited(name)
		} else {
			queue.Forget(name)
		}
		queue.Done(name)
	}
}

// clusterCacheSize reads namespace-config-cache-size from the cluster
// ConfigMap; it takes effect at start.
func clusterCacheSize(ctx context.Context, client kubernetes.Interface) (int, error) {
	cm, err := client.CoreV1().ConfigMaps(SystemNamespace).Get(ctx, ClusterConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return int(v1alpha1.DefaultCacheSize), nil
	}
	if err != nil {
		return 0, err
	}
	o, err := options(0)
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

// reconcile defaults one Job with its namespace's configuration, once: a
// Job that carries a resolved hash was defaulted already.
func reconcile(ctx context.Context, client kubernetes.Interface, r *resolver, lister interface {
	Get(string) (*batchv1.Job, error)
}, name cache.ObjectName) error {
	job, err := lister.Get(name.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, done := job.Annotations[namespaced.AnnotationResolvedHash]; done {
		return nil
	}
	snap, err := r.ForNamespace(ctx, job.Namespace)
	if err != nil {
		return err
	}
	job = job.DeepCopy()
	Apply(job, snap.Object)
	snap.Annotate(job)
	// A conflict is retried: the informer brings the new version.
	_, err = client.BatchV1().Jobs(job.Namespace).Update(ctx, job, metav1.UpdateOptions{FieldManager: "strata-example-controller"})
	return err
}

// Apply gives an existing job the defaults of d where it has no value of
// its own: activeDeadlineSeconds, ttlSecondsAfterFinished and labels. A
// Job's pod template is immutable once created (the API server refuses
// the update), so default-service-account is applied by ApplyTemplate,
// which only a mutating admission webhook can call in time.
func Apply(job *batchv1.Job, d *v1alpha1.JobDefaults) {
	if job.Spec.ActiveDeadlineSeconds == nil && d.DefaultTimeoutSeconds != nil {
		job.Spec.ActiveDeadlineSeconds = new(*d.DefaultTimeoutSeconds)
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
}

// ApplyTemplate gives a Job that is being created the pod template's
// defaults of d: the service account, when the template names none.
func ApplyTemplate(job *batchv1.Job, d *v1alpha1.JobDefaults) {
	if job.Spec.Template.Spec.ServiceAccountName == "" && d.DefaultServiceAccount != "" {
		job.Spec.Template.Spec.ServiceAccountName = d.DefaultServiceAccount
	}
}
