package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
	"github.com/stratacfg/strata/internal/httpserve"
	"github.com/stratacfg/strata/internal/servingcert"
	"github.com/stratacfg/strata/internal/text"
)

// runFlags are run's command line.
type runFlags struct {
	kubeconfig  string
	metricsAddr string
	webhookHost string
	webhookPort int
	certDir     string
}

// serve is `plugins run`: the controller and its webhooks until
// ctx ends.
func serve(ctx context.Context, args []string, stderr io.Writer) error {
	var f runFlags
	fs := flag.NewFlagSet("plugins run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "a kubeconfig of the cluster")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "0", "where to serve /metrics; 0 serves none")
	fs.StringVar(&f.webhookHost, "webhook-host", "127.0.0.1", "the address the webhooks listen on and the API server calls")
	fs.IntVar(&f.webhookPort, "webhook-port", 0, "the webhooks' port; 0 picks a free one")
	fs.StringVar(&f.certDir, "cert-dir", "", "where the webhook's serving certificate is, or is written; empty: a new temporary directory")
	settings := settingsFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case f.kubeconfig == "":
		return usagef("--kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", f.kubeconfig, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	c, err := newController(ctx, dyn, kube, *settings)
	if err != nil {
		return err
	}
	defer c.stop()
	if f.metricsAddr != "0" && f.metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.HandlerFor(c.reg, metrics.HandlerOpts{}))
		srv, ln, err := httpserve.Listen(f.metricsAddr, mux)
		if err != nil {
			return fmt.Errorf("--metrics-bind-address: %w", err)
		}
		go srv.Serve(ln) //nolint:errcheck // ends with Close
		defer srv.Close()
	}
	stopWebhook, err := c.startWebhook(ctx, f)
	if err != nil {
		return err
	}
	defer stopWebhook()
	klog.FromContext(ctx).Info("Running", "plugins", len(c.plugins()))
	c.run(ctx)
	return nil
}

// controller keeps Plugins' values effective.
type controller struct {
	dyn      dynamic.Interface
	kube     kubernetes.Interface
	factory  dynamicinformer.DynamicSharedInformerFactory
	listers  greenhouse.CacheReader
	queue    workqueue.TypedRateLimitingInterface[string]
	events   record.EventRecorder
	stopEvts func()
	log      klog.Logger

	reg        metrics.KubeRegistry
	reconciles *metrics.CounterVec
	readmitted *metrics.Counter
	admitted   *metrics.CounterVec

	settings greenhouse.Settings

	mu       sync.Mutex
	reported map[string]string // reportKey → the message last reported
	// contested holds, by Plugin (namespace/name), the keys of what was
	// reported of the PluginOverrides in its contests.
	contested map[string][]string
}

func newController(ctx context.Context, dyn dynamic.Interface, kube kubernetes.Interface, s greenhouse.Settings) (*controller, error) {
	c := &controller{
		settings: s,
		dyn:      dyn,
		kube:     kube,
		factory:  dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0),
		listers:  greenhouse.CacheReader{},
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		log:      klog.FromContext(ctx).WithName("plugins"),
		reg:      metrics.NewKubeRegistry(),
		reported: map[string]string{},
	}
	c.reconciles = metrics.NewCounterVec(&metrics.CounterOpts{Subsystem: "plugins", Name: "reconciles_total", Help: "Plugins reconciled, by result.", StabilityLevel: metrics.ALPHA}, []string{"result"})
	c.readmitted = metrics.NewCounter(&metrics.CounterOpts{Subsystem: "plugins", Name: "readmitted_total", Help: "Plugins the API server was asked to admit again, for the webhook to write what the overrides give now.", StabilityLevel: metrics.ALPHA})
	c.admitted = metrics.NewCounterVec(&metrics.CounterOpts{Subsystem: "plugins", Name: "admissions_total", Help: "Writes of Plugins the mutating webhook admitted, by result: mutated, unchanged, failed (admitted as written).", StabilityLevel: metrics.ALPHA}, []string{"result"})
	c.reg.MustRegister(c.reconciles, c.readmitted, c.admitted)

	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	c.events = broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "strata-plugins"})
	c.stopEvts = broadcaster.Shutdown

	served, err := servedResources(kube)
	if err != nil {
		return nil, err
	}
	for kind, gvr := range greenhouse.Resources {
		if !served[gvr.Resource] {
			c.log.Info("Not served by this cluster; none are read", "kind", kind)
			continue
		}
		inf := c.factory.ForResource(gvr)
		c.listers[gvr] = inf.Lister()
		if _, err := inf.Informer().AddEventHandler(c.handler(kind)); err != nil {
			return nil, err
		}
	}
	if !served[greenhouse.Resources[greenhouse.KindPlugin].Resource] {
		return nil, fmt.Errorf("the cluster serves no %s: install the CRDs (examples/plugins/config/crd)", greenhouse.Resources[greenhouse.KindPlugin])
	}
	c.factory.Start(ctx.Done())
	for gvr, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("the cache of %s did not sync", gvr)
		}
	}
	return c, nil
}

// servedResources returns the resources of greenhouse.sap/v1alpha1 the
// cluster serves.
func servedResources(kube kubernetes.Interface) (map[string]bool, error) {
	l, err := kube.Discovery().ServerResourcesForGroupVersion(greenhouse.Group.String())
	if apierrors.IsNotFound(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovering %s: %w", greenhouse.Group, err)
	}
	out := map[string]bool{}
	for _, r := range l.APIResources {
		out[r.Name] = true
	}
	return out, nil
}

// handler enqueues the Plugins a change of an object of kind may change:
// a Plugin itself; for anything else in a namespace, its Plugins; for a
// ClusterPluginDefinition, every Plugin.
func (c *controller) handler(kind string) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		switch kind {
		case greenhouse.KindPlugin:
			c.queue.Add(u.GetNamespace() + "/" + u.GetName())
		case greenhouse.KindClusterPluginDefinition:
			for _, p := range c.plugins() {
				c.queue.Add(p)
			}
		default:
			for _, p := range c.plugins() {
				if ns, _, _ := cut(p); ns == u.GetNamespace() {
					c.queue.Add(p)
				}
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
}

// plugins returns the keys of every cached Plugin.
func (c *controller) plugins() []string {
	l := c.listers[greenhouse.Resources[greenhouse.KindPlugin]]
	objs, err := l.List(labels.Everything())
	if err != nil {
		return nil
	}
	out := make([]string, len(objs))
	for i, o := range objs {
		u := o.(*unstructured.Unstructured)
		out[i] = u.GetNamespace() + "/" + u.GetName()
	}
	return out
}

func cut(key string) (string, string, bool) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}

// run works the queue with two workers until ctx ends.
func (c *controller) run(ctx context.Context) {
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				key, quit := c.queue.Get()
				if quit {
					return
				}
				if err := c.reconcile(ctx, key); err != nil {
					c.log.Error(err, "Reconciling a Plugin failed; retrying", "plugin", key)
					c.queue.AddRateLimited(key)
				} else {
					c.queue.Forget(key)
				}
				c.queue.Done(key)
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

func (c *controller) stop() {
	c.queue.ShutDown()
	c.factory.Shutdown()
	c.stopEvts()
}

// reconcile asks the API server to admit the Plugin key again when what
// the webhook would store differs from what is stored: an empty patch,
// which changes nothing itself, passes the Plugin through the webhook,
// which writes the values the PluginOverrides give now. The example never
// writes a Plugin's spec: Greenhouse's controller owns it, and the
// webhook layers the overrides over whatever it writes. Plugins whose
// values cannot be computed are reported (a Warning Event, once per
// problem) and left as they are.
func (c *controller) reconcile(ctx context.Context, key string) error {
	ns, name, _ := cut(key)
	gvr := greenhouse.Resources[greenhouse.KindPlugin]
	cur, err := c.listers.Get(ctx, gvr, ns, name)
	if err != nil {
		return err
	}
	if cur == nil { // deleted: what was reported of it, and of its contests, is forgotten
		c.mu.Lock()
		for _, reason := range []string{"InvalidOptionValues", "ContestedOption"} {
			delete(c.reported, reportKey(reason, greenhouse.KindPlugin, ns, name, ""))
		}
		for _, k := range c.contested[key] {
			delete(c.reported, k)
		}
		delete(c.contested, key)
		c.mu.Unlock()
		return nil
	}
	p, err := decodePlugin(cur)
	if err != nil {
		return err
	}
	a, err := greenhouse.Admit(greenhouse.Store{Ctx: ctx, R: c.listers}, p, c.settings)
	if err != nil {
		c.reconciles.WithLabelValues("invalid").Inc()
		c.report(cur, "InvalidOptionValues", err)
		return nil
	}
	var unchecked error // the writer's values kept as written: the overrides applied over the rest
	if len(a.Result.Unchecked) > 0 {
		unchecked = errors.New(strings.Join(a.Result.Unchecked, "\n"))
	}
	c.report(cur, "InvalidOptionValues", unchecked)
	c.reportContests(ctx, cur, a.Result)
	if len(plan(p, a)) == 0 {
		c.reconciles.WithLabelValues("unchanged").Inc()
		return nil
	}
	after, err := c.dyn.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte("{}"), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	c.readmitted.Inc()
	c.reconciles.WithLabelValues("readmitted").Inc()
	if p, err = decodePlugin(after); err != nil {
		return err
	}
	if len(plan(p, a)) != 0 {
		// The webhook did not run, or read older objects than the
		// informers: try again, later.
		return fmt.Errorf("admitted again, the Plugin does not hold what the webhook computes (is the MutatingWebhookConfiguration %s registered?)", webhookName)
	}
	c.log.V(1).Info("Plugin admitted again", "plugin", key, "appliedOverrides", a.Applied)
	return nil
}

// decodePlugin reads the fields of a Plugin the example reads.
func decodePlugin(u *unstructured.Unstructured) (*greenhouse.Plugin, error) {
	j, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	var p greenhouse.Plugin
	if err := json.Unmarshal(j, &p); err != nil {
		return nil, fmt.Errorf("decoding Plugin %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &p, nil
}

// report records err on obj as a Warning Event of reason, once until it
// changes; nil clears it.
func (c *controller) report(obj *unstructured.Unstructured, reason string, err error) {
	c.reportAs(reportKey(reason, obj.GetKind(), obj.GetNamespace(), obj.GetName(), ""), obj, reason, err)
}

// reportAs is report, what was reported remembered under key.
func (c *controller) reportAs(key string, obj *unstructured.Unstructured, reason string, err error) {
	msg := ""
	if err != nil {
		msg = text.Cut(err.Error(), 1024)
	}
	c.mu.Lock()
	same := c.reported[key] == msg
	if err == nil { // no problem: nothing to remember
		delete(c.reported, key)
	} else {
		c.reported[key] = msg
	}
	c.mu.Unlock()
	if same || err == nil {
		return
	}
	c.log.Info("Reported", "reason", reason, "object", obj.GetKind()+" "+obj.GetNamespace()+"/"+obj.GetName(), "message", msg)
	c.events.Event(obj, corev1.EventTypeWarning, reason, msg)
}

// reportKey is the key of what was reported of an object for reason,
// about the Plugin plugin ("": itself).
func reportKey(reason, kind, namespace, name, plugin string) string {
	return reason + " " + kind + " " + namespace + "/" + name + " " + plugin
}

// reportContests records the Plugin's contested options (a Warning Event
// ContestedOption) on the Plugin and on each PluginOverride involved, once
// until they change; none clears them.
func (c *controller) reportContests(ctx context.Context, p *unstructured.Unstructured, res *greenhouse.Result) {
	lines, involved := greenhouse.ContestLines(res)
	var err error
	if len(lines) > 0 {
		err = errors.New(strings.Join(lines, "; "))
	}
	c.report(p, "ContestedOption", err)
	plugin := p.GetNamespace() + "/" + p.GetName()
	var keys []string
	for _, name := range involved {
		ns, n, _ := cut(name)
		o, getErr := c.listers.Get(ctx, greenhouse.Resources[greenhouse.KindPluginOverride], ns, n)
		if getErr != nil || o == nil {
			continue
		}
		key := reportKey("ContestedOption", greenhouse.KindPluginOverride, ns, n, plugin)
		keys = append(keys, key)
		c.reportAs(key, o, "ContestedOption", fmt.Errorf("on Plugin %s: %w", plugin, err))
	}
	// What was reported of overrides no longer in this Plugin's contests
	// is forgotten, as the Plugin's own report is.
	c.mu.Lock()
	for _, k := range c.contested[plugin] {
		if !slices.Contains(keys, k) {
			delete(c.reported, k)
		}
	}
	if len(keys) > 0 {
		if c.contested == nil {
			c.contested = map[string][]string{}
		}
		c.contested[plugin] = keys
	} else {
		delete(c.contested, plugin)
	}
	c.mu.Unlock()
}

// admissionWarning is s as an admission warning the API server passes
// on: each control character written as \uXXXX (the API server drops a
// warning that holds one, and a writer's value may), valid UTF-8, at most
// 512 bytes.
func admissionWarning(s string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsControl(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return text.Cut(b.String(), 512)
}

// startWebhook serves the webhooks over TLS and registers them,
// and returns how to stop serving.
func (c *controller) startWebhook(ctx context.Context, f runFlags) (func(), error) {
	dir := f.certDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "strata-plugins-"); err != nil {
			return nil, err
		}
	}
	caBundle, err := servingcert.Ensure(dir, f.webhookHost, "strata plugins")
	if err != nil {
		return nil, fmt.Errorf("the webhook's certificate: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, servingcert.CertFile), filepath.Join(dir, servingcert.KeyFile))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	objs := greenhouse.Store{Ctx: ctx, R: c.listers}
	mux.Handle(webhookPath, (&validator{objs: objs, log: c.log, settings: c.settings, objects: objs.In}).handler())
	mux.Handle(mutatePath, (&mutator{objs: objs, log: c.log, admitted: c.admitted, settings: c.settings}).handler())
	srv, ln, err := httpserve.Listen(net.JoinHostPort(f.webhookHost, strconv.Itoa(f.webhookPort)), mux)
	if err != nil {
		return nil, fmt.Errorf("the webhook's listener: %w", err)
	}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	go srv.ServeTLS(ln, "", "") //nolint:errcheck // ends with Close
	port := ln.Addr().(*net.TCPAddr).Port
	if err := registerWebhooks(ctx, c.kube, f.webhookHost, port, caBundle); err != nil {
		srv.Close()
		return nil, err
	}
	return func() { srv.Close() }, nil
}
