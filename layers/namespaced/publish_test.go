package namespaced

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// gatedReader is an objectReader whose calls of ConfigMaps for namespace
// "team" (numbered from 1) each wait for their gate, when it has one.
type gatedReader struct {
	*objectReader
	mu      sync.Mutex
	n       int
	entered chan int
	gates   map[int]chan struct{}
}

func (g *gatedReader) ConfigMaps(ctx context.Context, ns string, sel labels.Selector) ([]*corev1.ConfigMap, error) {
	out, err := g.objectReader.ConfigMaps(ctx, ns, sel)
	if ns != "team" {
		return out, err
	}
	g.mu.Lock()
	g.n++
	n, gate := g.n, g.gates[g.n]
	g.mu.Unlock()
	g.entered <- n
	if gate != nil {
		select {
		case <-gate:
		case <-time.After(10 * time.Second):
		}
	}
	return out, err
}

// TestOneChangeToldOnce: two reconciles resolve namespace team at once
// (both miss); the first publishes, then the tenant edits its ConfigMap.
// The second miss, its build now stale, builds the edit again while the
// worker the edit queued builds it too: one publishes, and the other,
// built from the same inputs, does not, so a subscriber is told of the
// edit once (it was told 5->7, then 7->7).
func TestOneChangeToldOnce(t *testing.T) {
	objs := newObjectReader(configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "100"}),
		tenantCM("team", map[string]string{"timeout": "5"}))
	g := &gatedReader{objectReader: objs, entered: make(chan int, 16),
		gates: map[int]chan struct{}{1: make(chan struct{}), 2: make(chan struct{}), 3: make(chan struct{})}}
	r := cachedReader(t, g, nil) // a, b and c, none of them gated
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	var told []string
	calls := make(chan struct{}, 16)
	defer r.Subscribe(func(ns string, old, new *Snapshot[*tenantConfig]) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, fmt.Sprintf("%s:%d->%d", ns, *old.Object.Timeout, *new.Object.Timeout))
		calls <- struct{}{}
	})()
	wait := func(want int) {
		t.Helper()
		select {
		case n := <-g.entered:
			if n != want {
				t.Fatalf("read %d, want %d", n, want)
			}
		case <-ctx.Done():
			t.Fatalf("read %d never came", want)
		}
	}
	resolve := func() chan *Snapshot[*tenantConfig] {
		c := make(chan *Snapshot[*tenantConfig], 1)
		go func() {
			s, _ := r.ForNamespace(ctx, "team")
			c <- s
		}()
		return c
	}
	a := resolve()
	wait(1) // miss A reads
	b := resolve()
	wait(2) // miss B reads
	close(g.gates[1])
	<-a // A published timeout 5
	edited := tenantCM("team", map[string]string{"timeout": "7"})
	edited.ResourceVersion = "2"
	objs.set(edited)
	r.Invalidate(edited)
	wait(3) // the worker reads the edit
	close(g.gates[2])
	wait(4) // B, stale, reads again and publishes the edit
	if s := <-b; *s.Object.Timeout != 7 {
		t.Errorf("the second resolve gave timeout %d, want 7", *s.Object.Timeout)
	}
	select {
	case <-calls:
	case <-ctx.Done():
		t.Fatal("the edit was never told")
	}
	close(g.gates[3]) // the worker's build, of the same inputs, ends
	if err := r.WaitForSubscribers(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 {
		t.Errorf("one edit told %d times: %v", len(told), told)
	}
}
