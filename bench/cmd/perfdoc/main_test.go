package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
cpu: Test CPU
BenchmarkCase1Read/strata-2   	1000	  5.0 ns/op	  0 B/op	  0 allocs/op
BenchmarkCase1Read/strata-2   	1000	  9.0 ns/op	  0 B/op	  0 allocs/op
BenchmarkCase1Read/strata-2   	1000	  6.0 ns/op	  0 B/op	  0 allocs/op
BenchmarkCase1Read/viper-2    	1000	100.0 ns/op	 32 B/op	  2 allocs/op
BenchmarkCase1Read/koanf-2    	1000	 50.0 ns/op	 21 B/op	  2 allocs/op
BenchmarkCase1Read/knative-2  	1000	  7.0 ns/op	  0 B/op	  0 allocs/op
BenchmarkCase2Rebuild/strata-2	1000	3000 ns/op
BenchmarkCase2Rebuild/tekton-style-2	1000	2000 ns/op
BenchmarkCase3Decode/strata-2	1000	50 ns/op
BenchmarkCase3Decode/apimachinery-2	1000	100 ns/op
BenchmarkCase3Decode/strata-warn-unknown-field-2	1000	60 ns/op
BenchmarkCase3Decode/kubelet-double-decode-unknown-field-2	1000	150 ns/op
BenchmarkCase4Resolve/strata-2	1000	10 ns/op
BenchmarkCase4Resolve/tekton-style-2	1000	2000 ns/op
BenchmarkCase5Watch/steady/strata-2	1	1 ns/op	 80 p50-µs	 300 p99-µs	 100 seen	 100 updates
BenchmarkCase5Watch/steady/viper-2	1	1 ns/op	 9 seen	 100 updates
BenchmarkCase6Controller/admission/strata-webhook-2	1	3000000 ns/op	 2900 p50-µs	 9000 p99-µs
BenchmarkCase6Controller/admission/strata-webhook-cached-2	1	2800000 ns/op	 2800 p50-µs	 8500 p99-µs
BenchmarkCase6Controller/admission/no-webhook-2	1	2000000 ns/op	 1900 p50-µs	 7000 p99-µs
BenchmarkCase6Controller/admission/noop-webhook-2	1	2500000 ns/op	 2600 p50-µs	 8000 p99-µs
BenchmarkCase6Controller/admission/constants-webhook-2	1	2700000 ns/op	 2700 p50-µs	 8200 p99-µs
BenchmarkCase6Controller/reconcile/strata-2	1	300 ns/op
BenchmarkCase6Controller/read/strata-2	1	60 ns/op
BenchmarkCase6Controller/memory/strata-2	1	0 ns/op	 40.5 heap-MiB	 60 inuse-MiB
BenchmarkCase6Controller/reconcile/hand-written-2	1	9000 ns/op
BenchmarkCase6Controller/memory/hand-written-2	1	0 ns/op	 81 heap-MiB	 90 inuse-MiB
BenchmarkCase7Scale/lazy-10k/strata-2	1	9000000000 ns/op	 2100 heap-B-per-ns	 0 goroutines-per-ns	 1 api-watches
BenchmarkCase7Scale/cluster-change/strata-2	1	200000000 ns/op	 180 all-current-ms	 900 max-read-µs
BenchmarkCase7Scale/unlabelled/strata-2	1	90000000000 ns/op	 0.4 heap-MiB
BenchmarkCase7Scale/unlabelled/unfiltered-informer-2	1	20000000000 ns/op	 1100 heap-MiB
BenchmarkCase7Scale/evict/cache=1000-2	1000000	600 ns/op	 190 B/op	 5 allocs/op
BenchmarkCase7Scale/evict/cache=10000-2	1000000	620 ns/op	 180 B/op	 5 allocs/op
BenchmarkCase8Trees/reload/strata-2	1	40000000000 ns/op	 360 max-µs	 1.0 p50-µs	 4.0 p99-µs	 70000 reads	 11000 reload-ms
BenchmarkCase8Trees/reload/ci-tools-style-2	1	40000000000 ns/op	 4700000 max-µs	 1900000 p50-µs	 4500000 p99-µs	 300000 reads	 10000 reload-ms
BenchmarkCase8Trees/shards/strata-2	1	1000000000 ns/op	 0 mixed-snapshots	 1 reloads
BenchmarkCase8Trees/shards/prow-style-2	1	900000000 ns/op	 7 mixed-snapshots	 8 reloads
BenchmarkCase8Trees/publish/strata-2	1	9000000000 ns/op	 0 mixed-snapshots	 60 publish-ms	 60 reloads
BenchmarkCase8Trees/publish/prow-style-2	1	9000000000 ns/op	 30 mixed-snapshots	 120 publish-ms	 300 reloads
BenchmarkCase9Admission/strata-2	1000	30 ns/op	 0 B/op	 0 allocs/op
BenchmarkCase9Admission/strata-miss-2	1000	58000 ns/op	 38000 B/op	 480 allocs/op
BenchmarkCase9Admission/pr-style-2	1000	117000 ns/op	 114000 B/op	 790 allocs/op
BenchmarkCase9Admission/pr-style-merge-2	1000	108000 ns/op	 112000 B/op	 770 allocs/op
BenchmarkCase9Admission/strata-webhook-2	1000	104000 ns/op	 38700 B/op	 630 allocs/op
BenchmarkCase9Admission/pr-style-webhook-2	1000	229000 ns/op	 151700 B/op	 1409 allocs/op
PASS
`

func TestWrite(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.bench["Case1Read/strata"].metrics["ns/op"]; got != 6 {
		t.Errorf("median of three runs: %v, want 6", got)
	}
	var b bytes.Buffer
	if err := write(&b, res, map[string]string{"case2": "Why case 2 is missed."}, machine(res, "abc")); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	for _, want := range []string{
		"| 1 | at least 10 times faster than koanf | 0.12 (8.33× faster) | **missed** |",
		"| 1 | no slower than knative | 0.857 (1.17× faster) | met |",
		"| 2 | no slower than the Tekton-style merge plus parse | 1.5 (1.5× slower) | **missed** |",
		"Why case 2 is missed.",
		"| 4 | at least 50 times faster than re-merging per call | 0.005 (200× faster) | met |",
		"| 5 | strata sees the final state of every update (steady) | 100 of 100 | met |",
		"| steady | viper | 9 of 100 | – | – |",
		"| 6 | a reconcile's configuration read faster than the hand-written reconciler's | 0.0333 (30× faster) | met |",
		"| admission/no-webhook | 2,000,000 | 1,900 | 7,000 | – | – | – | 1.5 (1.5× slower) |",
		"| 6 | a reconcile's configuration read alone at least 50 times faster than the hand-written Get, merge and parse | 0.00667 (150× faster) | met |",
		"| 6 | strata's webhook adds at most 0.5 ms at p50 to a Job create over a webhook that does nothing, in namespaces it has not resolved | 300 p50-µs more (at most 500) | met |",
		"| 6 | strata's webhook adds at most 0.1 ms at p50 over a webhook setting the same fields from constants, in namespaces it has resolved | 100 p50-µs more (at most 100) | met |",
		"| 6 | strata's webhook adds at most 0.1 ms at p50 over a webhook setting the same fields from constants, in namespaces it has not resolved | 200 p50-µs more (at most 100) | **missed** |",
		"| 6 | the manager on strata holds no more live heap than the hand-written one | 0.5 (2× less) | met |",
		"| 6 | the manager on strata holds no more heap in use (spans holding any object) than the hand-written one | 0.667 (1.50× less) | met |",
		"| 9 | at least 100 times faster than PR #9517's merge and parse per request | 0.000256 (3,900× faster) | met |",
		"| memory/hand-written | – | – | – | – | 81 | 90 | 0.5 (2× less) |",
		"| 7 | a namespace cached in Lazy mode costs at most 4 KiB of heap | 2,100 heap-B-per-ns (at most 4,096) | met |",
		"| 7 | every snapshot current within 1 s of a cluster change, 10,000 cached | 180 all-current-ms (at most 1,000) | met |",
		"| 7 | a miss into a full cache of 10,000 within 1.5 times of one into 1,000 (eviction in constant time) | 1.03 (1× slower) | met |",
		"| unlabelled/unfiltered-informer | 20,000,000,000 | – | – | – | – | – | 1,100 | 0.000364 (2,750× less) |",
		"| 8 | a read while a 5,000-file, 50 MB tree reloads: p99 at least 100 times lower than ci-tools' pattern (its write lock held across the load) | 8.89e-07 (1,125,000× faster) | met |",
		"| 8 | one change across 8 shards serves no mixed snapshot | 0 mixed-snapshots (at most 0) | met |",
		"| shards/prow-style | – | – | – | – | 8 | 7 | – | 0.125 (8× fewer) |",
		"| 8 | 20 publishes of a set of 4 ConfigMaps to 3 replicas serve no mixed snapshot | 0 mixed-snapshots (at most 0) | met |",
		"| publish/prow-style | – | – | – | – | 300 | 30 | 120 | 0.5 (2× faster) |",
		"| CPU | Test CPU,",
		"| commit | abc |",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the document lacks %q:\n%s", want, doc)
		}
	}
}

func TestWriteFailsOnAMissingCase(t *testing.T) {
	res, err := parse(strings.NewReader(strings.ReplaceAll(sample, "BenchmarkCase4Resolve/strata-2", "BenchmarkOther-2")))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := write(&b, res, nil, ""); err == nil || !strings.Contains(err.Error(), "Case4Resolve/strata") {
		t.Errorf("error %v, want one naming the missing benchmark", err)
	}
}

// TestWriteCaseMeasuredApart: a case measured by a target of its own is
// reported as not measured without its output, and with it says which
// commit it measured.
func TestWriteCaseMeasuredApart(t *testing.T) {
	dir := t.TempDir()
	main, scale := filepath.Join(dir, "bench.txt"), filepath.Join(dir, "bench-scale.txt")
	if err := os.WriteFile(main, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "PERFORMANCE.md")
	if err := run(main, "", out, "abc"); err != nil {
		t.Fatal(err)
	}
	doc, _ := os.ReadFile(out)
	for _, want := range []string{
		"| 10 | every snapshot current within 1 s of a cluster change, 100,000 cached | not measured: `make bench-scale` | **not measured** |",
		"Not measured in this run: `make bench-scale` measures it",
	} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("the document lacks %q", want)
		}
	}
	var b strings.Builder
	b.WriteString("commit: def\n")
	for _, n := range []string{"10000", "100000"} {
		fmt.Fprintf(&b, "BenchmarkCase7Namespaces/namespaces=%s/lazy-2\t1\t1 ns/op\t 3000 heap-B-per-ns\t 0 goroutines-per-ns\t 2 api-watches\n", n)
		fmt.Fprintf(&b, "BenchmarkCase7Namespaces/namespaces=%s/cluster-change-2\t1\t1 ns/op\t 800 all-current-ms\n", n)
		fmt.Fprintf(&b, "BenchmarkCase7Namespaces/namespaces=%s/miss-2\t1\t1 ns/op\t %s miss-µs\n", n, map[string]string{"10000": "1000", "100000": "2000"}[n])
	}
	if err := os.WriteFile(scale, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(main+","+scale, "", out, "abc"); err != nil {
		t.Fatal(err)
	}
	doc, _ = os.ReadFile(out)
	// The rows in the order they ran, whatever the files' merge.
	if i, j := strings.Index(string(doc), "| namespaces=10000/lazy |"), strings.Index(string(doc), "| namespaces=100000/lazy |"); i < 0 || j < i {
		t.Errorf("the rows of the case measured apart are out of the order they ran in:\n%s", doc)
	}
	for _, want := range []string{
		"| 10 | every snapshot current within 1 s of a cluster change, 100,000 cached | 800 all-current-ms (at most 1,000) | met |",
		"| 10 | a miss into a full cache of 100,000 within 1.5 times of one into a full cache of 10,000 | 2 (2× slower) | **missed** |",
		"| namespaces=10000/miss | – | – | – | – | – | – | 1,000 | – |",
		"Measured apart from the run above, by `make bench-scale` at def.",
	} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("the document lacks %q:\n%s", want, doc)
		}
	}
	// Run at other sizes than the goals name: those goals are not
	// measured, and the document is still written.
	if err := os.WriteFile(scale, []byte(strings.ReplaceAll(b.String(), "namespaces=100000/", "namespaces=50000/")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(main+","+scale, "", out, "abc"); err != nil {
		t.Fatal(err)
	}
	doc, _ = os.ReadFile(out)
	if want := "| 10 | every snapshot current within 1 s of a cluster change, 100,000 cached | not measured: `make bench-scale` | **not measured** |"; !strings.Contains(string(doc), want) {
		t.Errorf("the document lacks %q", want)
	}
}
