package integration

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"knative.dev/pkg/configmap/informer"

	"github.com/stratacfg/strata/examples/tekton/tektonconfig"
	"github.com/stratacfg/strata/integrations/strataknative"
	"github.com/stratacfg/strata/internal/watchtest"
)

// requestLog records the requests a client makes: method, path and the
// query that says how much a list reads (labelSelector, fieldSelector,
// limit, watch), the version a request asks for left out.
type requestLog struct {
	mu   sync.Mutex
	seen []string
	rt   http.RoundTripper
}

func (l *requestLog) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	var parts []string
	for _, k := range []string{"labelSelector", "fieldSelector", "limit", "watch"} {
		if v := q.Get(k); v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	l.mu.Lock()
	l.seen = append(l.seen, req.Method+" "+req.URL.Path+"?"+strings.Join(parts, "&"))
	l.mu.Unlock()
	return l.rt.RoundTrip(req)
}

func (l *requestLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(slices.Values(l.seen))
}

// startResolver starts strataknative's resolver for Tekton as a knative
// controller does, on the watcher of Tekton's namespace (the controller's
// own, not counted), and returns the requests the resolver made to start.
func startResolver(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &requestLog{}
	cfg := rest.CopyConfig(server.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { log.rt = rt; return log }
	counted, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmw := informer.NewInformedWatcher(server.Client(t), tektonconfig.SystemNamespace)
	r, err := strataknative.New(counted, cmw, tektonconfig.Options(tektonconfig.SystemNamespace))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- r.Start(ctx) }()
	if err := cmw.Start(ctx.Done()); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	// The shared watch starts in a goroutine of the resolver's.
	watchtest.Eventually(t, 10*time.Second, func() string {
		for _, req := range log.requests() {
			if strings.HasPrefix(req, "GET /api/v1/configmaps?") && strings.Contains(req, "watch=true") {
				return ""
			}
		}
		return "no shared watch yet"
	})
	// A GET of a cluster ConfigMap by name is made or not as the
	// watcher's deliveries race the start: it reads no tenant's.
	named := regexp.MustCompile(`^GET /api/v1/namespaces/` + tektonconfig.SystemNamespace + `/configmaps/[^/?]+\?$`)
	return slices.DeleteFunc(log.requests(), named.MatchString)
}

// TestStartListsNoTenant starts the knative route's resolver with no
// tenant ConfigMap in the cluster, then with 1,000 of them, both layers
// of 500 namespaces: start-up makes the same requests either way, and
// none reads more than one ConfigMap outside Tekton's namespace
// (TEP-0085's promise: a namespace's ConfigMaps are read on its first
// use).
func TestStartListsNoTenant(t *testing.T) {
	client := server.Client(t)
	for _, name := range []string{tektonconfig.DefaultsSection, tektonconfig.FeatureFlagsSection} {
		apply(t, client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tektonconfig.SystemNamespace, Name: name},
			Data: map[string]string{}})
	}
	before := startResolver(t)

	for i := range 500 {
		ns := fmt.Sprintf("startup-%03d", i)
		apply(t, client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tektonconfig.NamespaceDefaultsConfigMap, Labels: tektonconfig.Labels},
			Data: map[string]string{"default-timeout-minutes": "30"}})
		apply(t, client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tektonconfig.NamespaceFeatureFlagsConfig, Labels: tektonconfig.Labels},
			Data: map[string]string{"coschedule": "disabled"}})
	}
	after := startResolver(t)

	if !slices.Equal(before, after) {
		t.Errorf("start-up requests with no tenant ConfigMap:\n%s\nwith 1,000:\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
	for _, req := range after {
		// A cluster-wide ConfigMap request is the shared watch, or the
		// list of at most one ConfigMap that gives the version it
		// starts from.
		if strings.HasPrefix(req, "GET /api/v1/configmaps?") && !strings.Contains(req, "watch=true") && !strings.Contains(req, "limit=1") {
			t.Errorf("start-up lists tenants' ConfigMaps: %s", req)
		}
	}
	t.Logf("%d start-up requests, with 0 or 1,000 tenant ConfigMaps:\n%s", len(after), strings.Join(after, "\n"))
}
