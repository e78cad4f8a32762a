package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratacfg/strata/internal/kubetest"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/watch/configset"
)

// The publish round of case 8: a checkout of PublishFiles configurations
// published PublishRounds times to the real kube-apiserver as PublishParts
// ConfigMaps (a merge that changes every configuration, so that a mixed
// snapshot shows), read by PublishReplicas replicas whose kubelets update
// each volume on its own after a random delay up to PublishDelay.
const (
	PublishFiles    = 40
	PublishParts    = 4
	PublishRounds   = 20
	PublishReplicas = 3
	PublishDelay    = 100 * time.Millisecond
	// PublishSettle is configagent's --settle, for prow's producer read
	// with MarkersMove.
	PublishSettle = time.Second
)

var publishParts = func() []string {
	var out []string
	for i := range PublishParts {
		out = append(out, fmt.Sprintf("ci-config-%d", i))
	}
	return out
}()

// producer publishes the checkout src as generation gen.
type producer func(b *testing.B, ns, src string, gen int)

// configsetProducer is watch/configset's: the parts, then the manifest.
func configsetProducer(b *testing.B, ns, src string, _ int) {
	o := configset.Options{Namespace: ns, Manifest: "ci-config", Parts: publishParts}
	if _, err := configset.Publish(context.Background(), server.Client(b).CoreV1(), src, o); err != nil {
		b.Fatal(err)
	}
}

// prowProducer is prow's own updateconfig (bin/prow-updateconfig): each
// merge's files into the partitions they hash to, VERSION set to its
// commit in those; the first publish bootstraps.
func prowProducer(b *testing.B, ns, src string, gen int) {
	args := []string{"-kubeconfig", server.Kubeconfig, "-namespace", ns, "-root", src, "-partitions", strings.Join(publishParts, ","), "-sha", "sha" + strconv.Itoa(gen)}
	if gen == 1 {
		args = append(args, "-bootstrap")
	} else {
		entries, err := os.ReadDir(src)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range entries {
			args = append(args, e.Name())
		}
	}
	if out, err := exec.Command(watchtest.Tool(b, "prow-updateconfig"), args...).CombinedOutput(); err != nil {
		b.Fatalf("prow-updateconfig: %v\n%s", err, out)
	}
}

var publishNamespaces atomic.Int64

// notServing says, for each server not serving generation gen of every
// id, how many it serves and at which generations, and the reloads it
// failed, if it counts them.
func notServing(servers []TreeServer, ids []CIIdentity, gen int) string {
	var out []string
	for i, s := range servers {
		gens := map[int]int{}
		for _, id := range ids {
			data, ok := s.Get(id)
			if !ok {
				gens[-1]++
				continue
			}
			gens[GenerationOf(data)]++
		}
		if gens[gen] == len(ids) {
			continue
		}
		msg := fmt.Sprintf("replica %d serves generations %v (-1: missing)", i, gens)
		if f, ok := s.(interface{ Failed() int64 }); ok {
			msg += fmt.Sprintf(", %d reloads failed", f.Failed())
		}
		out = append(out, msg)
	}
	return strings.Join(out, "; ")
}

func benchPublish(b *testing.B, publish producer, start func(TreeOptions) (TreeServer, error), o TreeOptions, manifest bool) {
	ctx := context.Background()
	client := server.Client(b)
	ns := fmt.Sprintf("publish-%d", publishNamespaces.Add(1))
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	src := b.TempDir()
	var ids []CIIdentity
	write := func(gen int) {
		for i := range PublishFiles {
			org, repo := fmt.Sprintf("org%d", i%4), fmt.Sprintf("repo%d", i)
			name := fmt.Sprintf("%s-%s-main.yaml", org, repo)
			if gen == 1 {
				ids = append(ids, CIIdentity{Org: org, Repo: repo, Branch: "main"})
			}
			if err := os.WriteFile(filepath.Join(src, name), []byte(CIConfig(org, repo, "main", gen, 2000)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	write(1)
	publish(b, ns, src, 1)

	volumes := slices.Clone(publishParts)
	if manifest {
		volumes = append(volumes, "ci-config")
	}
	var mu sync.Mutex
	var snapshots, mixed int
	var servers []TreeServer
	// The keys of each volume's ConfigMap: a volume is mounted once each
	// is there. kubelet's AtomicWriter swaps ..data first and links the
	// keys beside it afterwards, so a reader that starts between the two
	// sees some of them, and no later ..data swap tells it of the rest.
	keys := map[string][]string{}
	for _, name := range volumes {
		cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		keys[name] = append(slices.Collect(maps.Keys(cm.Data)), slices.Collect(maps.Keys(cm.BinaryData))...)
	}
	for range PublishReplicas {
		paths := kubetest.NewKubelet(b, client, ns, volumes, PublishDelay).Paths
		if !watchtest.Until(20*time.Second, func() bool {
			for name, p := range paths {
				for _, key := range append(keys[name], "..data") {
					if _, err := os.Lstat(filepath.Join(p, key)); err != nil {
						return false
					}
				}
			}
			return true
		}) {
			b.Fatal("kubelet did not mount every volume")
		}
		ro := o
		ro.Roots = nil
		for _, p := range publishParts {
			ro.Roots = append(ro.Roots, paths[p])
		}
		if manifest {
			ro.Manifest = paths["ci-config"]
		}
		ro.Published = func(cs CIConfigs) {
			mu.Lock()
			defer mu.Unlock()
			snapshots++
			if _, err := Generations(cs); err != nil {
				mixed++
			}
		}
		s, err := start(ro)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Stop()
		servers = append(servers, s)
	}
	serving := func(gen int) bool {
		for _, s := range servers {
			for _, id := range ids {
				if data, ok := s.Get(id); !ok || GenerationOf(data) != gen {
					return false
				}
			}
		}
		return true
	}
	if !watchtest.Until(30*time.Second, func() bool { return serving(1) }) {
		b.Fatalf("the first publish was not served: %s", notServing(servers, ids, 1))
	}
	mu.Lock()
	snapshots, mixed = 0, 0
	mu.Unlock()
	var took []time.Duration
	for gen := 2; gen <= PublishRounds+1; gen++ {
		write(gen)
		publish(b, ns, src, gen)
		begin := time.Now()
		if !watchtest.Until(30*time.Second, func() bool { return serving(gen) }) {
			b.Fatalf("publish %d did not reach every replica in 30s", gen)
		}
		took = append(took, time.Since(begin))
	}
	slices.Sort(took)
	mu.Lock()
	defer mu.Unlock()
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "publish-ms")
	b.ReportMetric(float64(mixed), "mixed-snapshots")
	b.ReportMetric(float64(snapshots), "reloads")
}
