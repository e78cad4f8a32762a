package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stratacfg/strata/layers/namespaced"
)

// CachedNamespaces is how many namespaces the per-namespace benchmarks
// keep resolved.
const CachedNamespaces = 10000

// cluster is a resolver started against the real kube-apiserver with
// CachedNamespaces namespaces resolved and cached, each with its own
// 5-key overlay.
type cluster struct {
	r     *namespaced.Resolver[*Settings]
	names []string
}

var (
	clusterOnce sync.Once
	shared      *cluster
	clusterErr  error
)

// resolvedCluster sets up the cluster once per benchmark binary: the
// workload's cluster ConfigMap, CachedNamespaces namespaces with an
// overlay ConfigMap each, and an Informer-mode resolver that has resolved
// every one of them.
func resolvedCluster(b *testing.B) *cluster {
	b.Helper()
	clusterOnce.Do(func() { shared, clusterErr = setUpCluster(b) })
	if clusterErr != nil {
		b.Fatal(clusterErr)
	}
	return shared
}

// namespaceName is the name of the i-th tenant namespace; the first is
// TenantNamespace.
func namespaceName(i int) string {
	if i == 0 {
		return TenantNamespace
	}
	return fmt.Sprintf("tenant-%05d", i)
}

func setUpCluster(b *testing.B) (*cluster, error) {
	if server == nil {
		return nil, fmt.Errorf("no kube-apiserver: TestMain starts one when benchmarks run")
	}
	ctx := context.Background()
	c := server.Client(b)
	start := time.Now()
	if err := createSystem(ctx, c); err != nil {
		return nil, err
	}
	names := make([]string, CachedNamespaces)
	for i := range names {
		names[i] = namespaceName(i)
	}
	if err := createTenants(ctx, c, names); err != nil {
		return nil, err
	}
	b.Logf("created %d namespaces with overlays in %v", len(names), time.Since(start).Round(time.Millisecond))

	o, err := ResolverOptions()
	if err != nil {
		return nil, err
	}
	o.CacheSize = CachedNamespaces
	r, err := namespaced.NewInformer(c, o)
	if err != nil {
		return nil, err
	}
	if err := r.Start(ctx); err != nil {
		return nil, err
	}
	for _, ns := range names {
		s, err := r.ForNamespace(ctx, ns)
		if err != nil {
			return nil, err
		}
		if got := s.Object.Plain(); got != Expected(true) {
			return nil, fmt.Errorf("namespace %s resolved to %+v, want %+v", ns, got, Expected(true))
		}
	}
	return &cluster{r: r, names: names}, nil
}

// createSystem creates the component's namespace and its cluster
// ConfigMap.
func createSystem(ctx context.Context, c kubernetes.Interface) error {
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SystemNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	cm := ClusterConfigMap()
	cm.ResourceVersion = ""
	_, err := c.CoreV1().ConfigMaps(SystemNamespace).Create(ctx, cm, metav1.CreateOptions{})
	return err
}

// createTenants creates the namespaces names, each with its overlay, in
// parallel.
func createTenants(ctx context.Context, c kubernetes.Interface, names []string) error {
	return parallel(names, func(ns string) error {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		cm := NamespaceConfigMap(ns)
		cm.ResourceVersion = ""
		_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
}

// parallel runs fn for every name, sixteen at a time, and returns the
// first error.
func parallel(names []string, fn func(name string) error) error {
	work := make(chan string)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for name := range work {
				if err := fn(name); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for _, name := range names {
		select {
		case work <- name:
		case err = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}
