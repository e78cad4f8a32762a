package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stratacfg/strata/internal/watchtest"
)

// BenchmarkDetectionLatency measures, on the event path, the time from a
// completed AtomicWriter Write to the new value being published. It reports
// the median and the 99th percentile (goal: p99 under 50ms).
func BenchmarkDetectionLatency(b *testing.B) {
	dir := b.TempDir()
	kw := watchtest.NewAtomicWriter(dir)
	kw.Write(b, watchtest.Payload(0))
	published := make(chan int, 16)
	w, err := New(Options[int]{
		Paths:        []string{dir},
		PollInterval: time.Hour,
		Load:         func(_ context.Context, c *Contents) (int, error) { return generationOf(c.Generations[0]) },
		OnReload: func(r Reload[int]) {
			if r.Status == StatusSuccess {
				published <- r.Value
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	<-published
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		kw.Write(b, watchtest.Payload(i))
		start := time.Now()
		for gen := <-published; gen != i; gen = <-published {
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// tenFileMount is a ConfigMap mount of ten 2 KiB files.
func tenFileMount(b *testing.B) string {
	dir := b.TempDir()
	files := map[string]string{}
	for i := range 10 {
		files[fmt.Sprintf("file-%d.yaml", i)] = fmt.Sprintf("%02048d", i)
	}
	watchtest.NewAtomicWriter(dir).Write(b, files)
	return dir
}

// BenchmarkPollUnchanged is a poll that finds nothing new: resolve, read,
// hash, re-resolve, compare. It costs what BenchmarkReadMount costs.
func BenchmarkPollUnchanged(b *testing.B) {
	dir := tenFileMount(b)
	w, err := New(Options[int]{Paths: []string{dir}, Load: func(context.Context, *Contents) (int, error) { return 0, nil }})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	if err := w.check(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.check(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadMount is one consistent read of the same mount.
func BenchmarkReadMount(b *testing.B) {
	dir := tenFileMount(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(dir, ReadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadThroughLinks reads the same files the way a naive reader
// does, through the top-level links, with no hash: the floor, and a read
// that can tear.
func BenchmarkReadThroughLinks(b *testing.B) {
	dir := tenFileMount(b)
	b.ReportAllocs()
	for b.Loop() {
		for i := range 10 {
			if _, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("file-%d.yaml", i))); err != nil {
				b.Fatal(err)
			}
		}
	}
}
