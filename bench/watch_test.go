package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	koanfyaml "github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/viper"

	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/watch"
)

// Updates is how many kubelet updates each scenario of the watch benchmark
// makes.
const Updates = 100

// SeenWithin is how long after an update's Write returned a library has to
// show it before the update counts as missed.
const SeenWithin = 250 * time.Millisecond

// settingsFile is the workload as a Settings file whose max-retries is
// generation.
func settingsFile(generation int) string {
	data := ClusterData()
	data["max-retries"] = fmt.Sprint(generation)
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: %s\nkind: Settings\n", GroupVersion)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, data[k])
	}
	return b.String()
}

// watched is one library watching the mount: generation returns the
// max-retries it currently shows.
type watched struct {
	generation func() int64
	stop       func()
}

// watchers are the libraries the watch benchmark compares.
var watchers = []struct {
	name  string
	start func(b *testing.B, path string) watched
}{
	{"strata", watchStrata},
	{"viper", watchViper},
	{"koanf", watchKoanf},
}

// BenchmarkCase5Watch updates a ConfigMap mount through kubelet's own
// AtomicWriter while a library watches the file config.yaml in it, each
// library alone against a mount of its own, in three scenarios:
//
//   - steady: Updates updates, each waited for: how many the library
//     showed within SeenWithin of the Write returning, and how long that
//     took;
//   - burst: Updates updates back to back, as fast as kubelet writes
//     them: whether the library shows the last one, and how long after
//     the last Write returned;
//   - key-removed: every tenth update drops config.yaml from the
//     ConfigMap (the key deleted, an optional ConfigMap deleted) and the
//     next one brings it back: how many of the updates that carry the key
//     the library showed. A library keeps its last configuration while
//     the key is gone.
//
// Run it with -benchtime=1x: one iteration is a whole scenario.
func BenchmarkCase5Watch(b *testing.B) {
	for _, sc := range []struct {
		name string
		run  func(b *testing.B, kw *watchtest.KubeletWriter, w watched)
	}{
		{"steady", watchSteady},
		{"burst", watchBurst},
		{"key-removed", watchKeyRemoved},
	} {
		for _, lib := range watchers {
			b.Run(sc.name+"/"+lib.name, func(b *testing.B) {
				for b.Loop() {
					dir := b.TempDir()
					kw := watchtest.NewKubeletWriter(b, dir)
					kw.Write(b, map[string]string{"config.yaml": settingsFile(0)})
					w := lib.start(b, filepath.Join(dir, "config.yaml"))
					sc.run(b, kw, w)
					w.stop()
				}
			})
		}
	}
}

// waitFor waits up to SeenWithin for w to show generation and returns how
// long it took, or false.
func waitFor(w watched, generation int, since time.Time) (time.Duration, bool) {
	for w.generation() != int64(generation) && time.Since(since) < SeenWithin {
		time.Sleep(50 * time.Microsecond) // the latency measured: peers announce nothing, so each is read
	}
	if w.generation() != int64(generation) {
		return 0, false
	}
	return time.Since(since), true
}

func reportSeen(b *testing.B, seen, of int, lat []time.Duration) {
	b.ReportMetric(float64(seen), "seen")
	b.ReportMetric(float64(of), "updates")
	if len(lat) > 0 {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[(len(lat)-1)*99/100].Microseconds()), "p99-µs")
	}
}

func watchSteady(b *testing.B, kw *watchtest.KubeletWriter, w watched) {
	var lat []time.Duration
	for i := 1; i <= Updates; i++ {
		kw.Write(b, map[string]string{"config.yaml": settingsFile(i)})
		if d, ok := waitFor(w, i, time.Now()); ok {
			lat = append(lat, d)
		}
	}
	reportSeen(b, len(lat), Updates, lat)
}

func watchBurst(b *testing.B, kw *watchtest.KubeletWriter, w watched) {
	for i := 1; i <= Updates; i++ {
		kw.Write(b, map[string]string{"config.yaml": settingsFile(i)})
	}
	var lat []time.Duration
	if d, ok := waitFor(w, Updates, time.Now()); ok {
		lat = append(lat, d)
	}
	reportSeen(b, len(lat), 1, lat)
}

func watchKeyRemoved(b *testing.B, kw *watchtest.KubeletWriter, w watched) {
	var lat []time.Duration
	carried := 0
	for i := 1; i <= Updates; i++ {
		if i%10 == 0 {
			kw.Write(b, map[string]string{"other.yaml": "the key config.yaml is gone"})
			continue
		}
		carried++
		kw.Write(b, map[string]string{"config.yaml": settingsFile(i)})
		if d, ok := waitFor(w, i, time.Now()); ok {
			lat = append(lat, d)
		}
	}
	reportSeen(b, len(lat), carried, lat)
}

// watchStrata watches the mount with strata's Watcher, its defaults
// unchanged, decoding the file strictly with the workload's codec.
func watchStrata(b *testing.B, path string) watched {
	codec, err := NewKind()
	if err != nil {
		b.Fatal(err)
	}
	w, err := watch.New(watch.Options[*Settings]{
		Paths: []string{filepath.Dir(path)},
		Load: func(_ context.Context, c *watch.Contents) (*Settings, error) {
			data, err := c.ReadFile(path)
			if err != nil {
				return nil, err
			}
			d, err := codec.Decode(data, scheme.DecodeOptions{Source: path})
			if err != nil {
				return nil, err
			}
			return d.Object.(*Settings), nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	return watched{generation: func() int64 { return *w.Current().MaxRetries }, stop: cancel}
}

// watchViper watches the file with viper's WatchConfig. The value is read
// in OnConfigChange, on viper's own goroutine, since viper is not safe for
// concurrent use.
func watchViper(b *testing.B, path string) watched {
	v := viper.New()
	v.SetConfigFile(path)
	if err := v.ReadInConfig(); err != nil {
		b.Fatal(err)
	}
	var gen atomic.Int64
	gen.Store(v.GetInt64("max-retries"))
	v.OnConfigChange(func(fsnotify.Event) { gen.Store(v.GetInt64("max-retries")) })
	v.WatchConfig()
	return watched{generation: gen.Load, stop: func() {}}
}

// watchKoanf watches the file with koanf's file provider and loads it
// again into a new instance on every callback.
func watchKoanf(b *testing.B, path string) watched {
	f := file.Provider(path)
	k := koanf.New(".")
	if err := k.Load(f, koanfyaml.Parser()); err != nil {
		b.Fatal(err)
	}
	var gen atomic.Int64
	gen.Store(k.Int64("max-retries"))
	var failed atomic.Bool
	err := f.Watch(func(_ any, err error) {
		if err != nil {
			// koanf calls back with an error when its watch ends.
			if !failed.Swap(true) {
				b.Logf("koanf's watch reported %q after generation %d", err, gen.Load())
			}
			return
		}
		next := koanf.New(".")
		if next.Load(f, koanfyaml.Parser()) == nil {
			gen.Store(next.Int64("max-retries"))
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	return watched{generation: gen.Load, stop: func() { _ = f.Unwatch() }}
}
