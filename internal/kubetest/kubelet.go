package kubetest

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/stratacfg/strata/internal/watchtest"
)

// Kubelet projects ConfigMaps into directories as kubelet does for a pod
// that mounts each as a volume of its own: it watches them through an
// informer (kubelet's Watch strategy for ConfigMaps) and updates each
// volume on its own, after a random delay up to MaxDelay (kubelet's sync
// of the pod), with kubelet's own AtomicWriter, writing what the
// ConfigMap holds when the volume's turn comes. Volumes are therefore
// updated in no set order, and a quick second change may be written
// without the first.
type Kubelet struct {
	// Paths are the volumes' directories, by ConfigMap name.
	Paths   map[string]string
	volumes map[string]*volume
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

type volume struct {
	w       *watchtest.KubeletWriter
	wake    chan struct{}
	written string // the resourceVersion written last
}

// NewKubelet starts projecting the ConfigMaps of namespace named in
// volumes, each into a directory of its own under a temporary one
// (Kubelet.Paths), until the test ends; a volume's updates each wait up
// to maxDelay.
func NewKubelet(tb testing.TB, client kubernetes.Interface, namespace string, volumes []string, maxDelay time.Duration) *Kubelet {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	k := &Kubelet{Paths: map[string]string{}, volumes: map[string]*volume{}, stop: cancel}
	root := tb.TempDir()
	for _, name := range volumes {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		k.Paths[name] = dir
		k.volumes[name] = &volume{w: watchtest.NewKubeletWriter(tb, dir), wake: make(chan struct{}, 1)}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	inf := factory.Core().V1().ConfigMaps()
	lister := inf.Lister().ConfigMaps(namespace)
	notify := func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			if v := k.volumes[cm.Name]; v != nil {
				select {
				case v.wake <- struct{}{}:
				default:
				}
			}
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj any) { notify(obj) },
	}); err != nil {
		tb.Fatal(err)
	}
	factory.Start(ctx.Done())
	for name, v := range k.volumes {
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			for {
				select {
				case <-v.wake:
				case <-ctx.Done():
					return
				}
				if maxDelay > 0 {
					select {
					case <-time.After(rand.N(maxDelay)):
					case <-ctx.Done():
						return
					}
				}
				cm, err := lister.Get(name)
				if err != nil || cm.ResourceVersion == v.written {
					continue
				}
				if err := v.w.TryWriteBinary(cm.Data, cm.BinaryData); err != nil {
					tb.Errorf("kubelet: volume of %s: %v", name, err)
					return
				}
				v.written = cm.ResourceVersion
			}
		}()
	}
	tb.Cleanup(k.Stop)
	return k
}

// Stop stops projecting; the volumes keep what they hold.
func (k *Kubelet) Stop() {
	k.stop()
	k.wg.Wait()
}
