// Command perfdoc turns the output of the bench module's benchmarks into
// docs/PERFORMANCE.md: a table per case of ns/op, B/op and allocs/op with
// the ratio strata / peer, each goal marked met or missed, the machine,
// the Go version and the commands that reproduce the run.
//
//	perfdoc -in bin/bench.txt -notes bench/cmd/perfdoc/notes.md -out docs/PERFORMANCE.md
//
// A benchmark that ran several times (-count) is reported by its median.
// perfdoc fails when a case has no result, so that a broken run never
// produces a document.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

func main() {
	in := flag.String("in", "", "benchmark output (go test -bench -benchmem)")
	notes := flag.String("notes", "", "markdown file with the notes of each case")
	out := flag.String("out", "", "where to write the document")
	commit := flag.String("commit", "", "the commit measured")
	flag.Parse()
	if err := run(*in, *notes, *out, *commit); err != nil {
		fmt.Fprintln(os.Stderr, "perfdoc:", err)
		os.Exit(1)
	}
}

func run(in, notesPath, out, commit string) error {
	var res *results
	for i, path := range strings.Split(in, ",") {
		r, err := parseFile(path)
		if err != nil {
			return err
		}
		if i == 0 {
			res = r
			continue
		}
		for name, b := range r.bench {
			res.bench[name] = b
		}
		base := len(res.order)
		for group, n := range r.order {
			res.order[group] = base + n
		}
	}
	notes := map[string]string{}
	if notesPath != "" {
		data, err := os.ReadFile(notesPath)
		if err != nil {
			return err
		}
		notes = parseNotes(string(data))
	}
	var buf bytes.Buffer
	if err := write(&buf, res, notes, machine(res, commit)); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// parseFile parses the benchmark output in path.
func parseFile(path string) (*results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// result is one benchmark's medians over its runs.
type result struct {
	runs    int
	metrics map[string]float64 // unit → median
	// commit is the commit its output names ("commit: HASH"), if any: a
	// case measured apart from make bench says where it came from.
	commit string
}

// results holds every benchmark by name ("Case1Read/strata") and the
// header lines of the run (goos, goarch, cpu).
type results struct {
	bench  map[string]*result
	header map[string]string
	order  map[string]int // "Case5Watch/steady" → when that group first ran
}

// parse reads go test -bench output. Lines that are not benchmark results
// or headers are ignored.
func parse(r io.Reader) (*results, error) {
	samples := map[string]map[string][]float64{}
	header := map[string]string{}
	order := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if k, v, ok := strings.Cut(line, ": "); ok && (k == "goos" || k == "goarch" || k == "cpu" || k == "commit") {
			header[k] = strings.TrimSpace(v)
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue
		}
		name := strings.TrimPrefix(fields[0], "Benchmark")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		if i := strings.LastIndexByte(name, '/'); i > 0 {
			if _, seen := order[name[:i]]; !seen {
				order[name[:i]] = len(order)
			}
		}
		if samples[name] == nil {
			samples[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark %s: value %q: %w", name, fields[i], err)
			}
			samples[name][fields[i+1]] = append(samples[name][fields[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := &results{bench: map[string]*result{}, header: header, order: order}
	for name, units := range samples {
		r := &result{metrics: map[string]float64{}, commit: header["commit"]}
		for unit, vs := range units {
			slices.Sort(vs)
			r.metrics[unit] = vs[len(vs)/2]
			r.runs = max(r.runs, len(vs))
		}
		out.bench[name] = r
	}
	return out, nil
}

// parseNotes splits a markdown file into sections by "## key" headings.
func parseNotes(s string) map[string]string {
	out := map[string]string{}
	key := ""
	var b strings.Builder
	flush := func() {
		if key != "" {
			out[key] = strings.TrimSpace(b.String())
		}
		b.Reset()
	}
	for _, line := range strings.Split(s, "\n") {
		if k, ok := strings.CutPrefix(line, "## "); ok {
			flush()
			key = strings.TrimSpace(k)
			continue
		}
		b.WriteString(line + "\n")
	}
	flush()
	return out
}

// goal is one comparison the issue sets: strata's benchmark against a
// peer's, met when strata / peer is at most max (or below it, when strict),
// on unit (ns/op when empty).
type goal struct {
	text         string
	strata, peer string
	unit         string
	max          float64
	strict       bool
	// absolute compares strata's measurement itself with max: a goal
	// with no peer (heap per namespace).
	absolute bool
	// difference compares strata's measurement minus the peer's with max:
	// what strata adds over a floor.
	difference bool
}

// kase is one case of the comparison.
type kase struct {
	key, title string
	bench      string // the benchmark, "Case1Read"
	strata     string // strata's sub-benchmark(s)
	goals      []goal
	watch      bool     // a watch case: seen, missed and latency instead of time
	columns    []string // the units its table shows; ns/op, B/op and allocs/op when empty
	// compare are the units its table's ratios compare, the first a row
	// and strata's both measured, before ns/op (the wall time of a
	// once-run scenario says nothing).
	compare []string
	// apart is the make target that measures the case apart from make
	// bench, when it is one; without its output the case is reported as
	// not measured.
	apart string
}

// defaultColumns are the units a case's table shows unless it says.
var defaultColumns = []string{"ns/op", "B/op", "allocs/op"}

var cases = []kase{
	{key: "case1", title: "1. Read one value from the effective configuration", bench: "Case1Read", strata: "strata", goals: []goal{
		{text: "at least 10 times faster than viper", strata: "strata", peer: "viper", max: 0.1},
		{text: "at least 10 times faster than koanf", strata: "strata", peer: "koanf", max: 0.1},
		{text: "no slower than knative", strata: "strata", peer: "knative", max: 1},
	}},
	{key: "case2", title: "2. Rebuild the effective configuration after one layer changed", bench: "Case2Rebuild", strata: "strata", goals: []goal{
		{text: "no slower than the Tekton-style merge plus parse", strata: "strata", peer: "tekton-style", max: 1},
	}},
	{key: "case3", title: "3. Decode a component file strictly, with defaulting and conversion", bench: "Case3Decode", strata: "strata", goals: []goal{
		{text: "within 1.2 times of apimachinery's UniversalDecoder used directly", strata: "strata", peer: "apimachinery", max: 1.2},
		{text: "faster than kubelet's strict-then-lenient double decode", strata: "strata-warn-unknown-field", peer: "kubelet-double-decode-unknown-field", max: 1, strict: true},
	}},
	{key: "case4", title: "4. Per-namespace resolve with 10,000 namespaces cached", bench: "Case4Resolve", strata: "strata", goals: []goal{
		{text: "at least 50 times faster than re-merging per call", strata: "strata", peer: "tekton-style", max: 1.0 / 50},
	}},
	{key: "case5", title: "5. Watch detection on a ConfigMap mount written by kubelet's AtomicWriter", bench: "Case5Watch", strata: "strata", watch: true},
	{key: "case6", title: "6. A controller-runtime controller with 10,000 namespaces", bench: "Case6Controller", strata: "reconcile/strata",
		columns: []string{"ns/op", "p50-µs", "p99-µs", "handler-µs", "heap-MiB", "inuse-MiB"}, goals: []goal{
			{text: "a reconcile's configuration read faster than the hand-written reconciler's", strata: "reconcile/strata", peer: "reconcile/hand-written", max: 1, strict: true},
			{text: "a reconcile's configuration read alone at least 50 times faster than the hand-written Get, merge and parse", strata: "read/strata", peer: "reconcile/hand-written", max: 1.0 / 50},
			{text: "strata's webhook adds at most 0.5 ms at p50 to a Job create over a webhook that does nothing, in namespaces it has not resolved", strata: "admission/strata-webhook", peer: "admission/noop-webhook", unit: "p50-µs", max: 500, difference: true},
			{text: "strata's webhook adds at most 0.5 ms at p50 over a webhook that does nothing, in namespaces it has resolved", strata: "admission/strata-webhook-cached", peer: "admission/noop-webhook", unit: "p50-µs", max: 500, difference: true},
			{text: "strata's webhook adds at most 0.1 ms at p50 over a webhook setting the same fields from constants, in namespaces it has not resolved", strata: "admission/strata-webhook", peer: "admission/constants-webhook", unit: "p50-µs", max: 100, difference: true},
			{text: "strata's webhook adds at most 0.1 ms at p50 over a webhook setting the same fields from constants, in namespaces it has resolved", strata: "admission/strata-webhook-cached", peer: "admission/constants-webhook", unit: "p50-µs", max: 100, difference: true},
			{text: "the manager on strata holds no more live heap than the hand-written one", strata: "memory/strata", peer: "memory/hand-written", unit: "heap-MiB", max: 1},
			{text: "the manager on strata holds at most 0.6 times the hand-written one's live heap", strata: "memory/strata", peer: "memory/hand-written", unit: "heap-MiB", max: 0.6},
			{text: "the manager on strata holds no more heap in use (spans holding any object) than the hand-written one", strata: "memory/strata", peer: "memory/hand-written", unit: "inuse-MiB", max: 1},
		}},
	{key: "case7", title: "7. Tenant abuse at scale, against the real kube-apiserver", bench: "Case7Scale", strata: "lazy-10k/strata",
		columns: []string{"ns/op", "heap-B-per-ns", "goroutines-per-ns", "api-watches", "all-current-ms", "max-read-µs", "heap-MiB"},
		compare: []string{"heap-MiB"}, goals: []goal{
			{text: "a namespace cached in Lazy mode costs at most 4 KiB of heap", strata: "lazy-10k/strata", unit: "heap-B-per-ns", max: 4096, absolute: true},
			{text: "a namespace cached in Lazy mode costs at most one goroutine", strata: "lazy-10k/strata", unit: "goroutines-per-ns", max: 1, absolute: true},
			{text: "every snapshot current within 1 s of a cluster change, 10,000 cached", strata: "cluster-change/strata", unit: "all-current-ms", max: 1000, absolute: true},
			{text: "10,000 unlabelled tenant ConfigMaps grow the resolvers, all modes, by under 10 MiB", strata: "unlabelled/strata", unit: "heap-MiB", max: 10, absolute: true},
			{text: "a miss into a full cache of 10,000 within 1.5 times of one into 1,000 (eviction in constant time)", strata: "evict/cache=10000", peer: "evict/cache=1000", max: 1.5},
		}},
	{key: "case8", title: "8. CI configuration trees: reads during a reload, a change across shards, publish to serve", bench: "Case8Trees", strata: "reload/strata",
		columns: []string{"p50-µs", "p99-µs", "max-µs", "reload-ms", "reloads", "mixed-snapshots", "publish-ms"},
		compare: []string{"p99-µs", "publish-ms", "reloads"}, goals: []goal{
			{text: "a read while a 5,000-file, 50 MB tree reloads: p99 at least 100 times lower than ci-tools' pattern (its write lock held across the load)", strata: "reload/strata", peer: "reload/ci-tools-style", unit: "p99-µs", max: 0.01},
			{text: "one change across 8 shards is one reload", strata: "shards/strata", unit: "reloads", max: 1, absolute: true},
			{text: "one change across 8 shards serves no mixed snapshot", strata: "shards/strata", unit: "mixed-snapshots", max: 0, absolute: true},
			{text: "20 publishes of a set of 4 ConfigMaps to 3 replicas serve no mixed snapshot", strata: "publish/strata", unit: "mixed-snapshots", max: 0, absolute: true},
			{text: "a publish reaches every replica within 1 s (median)", strata: "publish/strata", unit: "publish-ms", max: 1000, absolute: true},
		}},
	{key: "case9", title: "9. The configuration a TaskRun admission reads, Tekton's own constructors", bench: "Case9Admission", strata: "strata", goals: []goal{
		{text: "at least 100 times faster than PR #9517's merge and parse per request", strata: "strata", peer: "pr-style", max: 1.0 / 100},
		{text: "a snapshot built on a cache miss no slower than PR #9517's merge and parse alone", strata: "strata-miss", peer: "pr-style-merge", max: 1},
		{text: "a TaskRun admitted by knative's defaulting controller through strataknative's entry no slower than behind PR #9517's", strata: "strata-webhook", peer: "pr-style-webhook", max: 1},
	}},
	{key: "case10", title: "10. Case 7 at 10,000, 30,000 and 100,000 namespaces", bench: "Case7Namespaces", strata: "namespaces=100000/lazy", apart: "bench-scale",
		columns: []string{"heap-B-per-ns", "goroutines-per-ns", "api-watches", "resolve-all-s", "heap-MiB", "all-current-ms", "miss-µs"},
		compare: []string{"miss-µs"}, goals: []goal{
			{text: "a namespace cached in Lazy mode costs at most 4 KiB of heap, 100,000 cached", strata: "namespaces=100000/lazy", unit: "heap-B-per-ns", max: 4096, absolute: true},
			{text: "a namespace cached in Lazy mode costs at most one goroutine, 100,000 cached", strata: "namespaces=100000/lazy", unit: "goroutines-per-ns", max: 1, absolute: true},
			{text: "every snapshot current within 1 s of a cluster change, 100,000 cached", strata: "namespaces=100000/cluster-change", unit: "all-current-ms", max: 1000, absolute: true},
			{text: "a miss into a full cache of 100,000 within 1.5 times of one into a full cache of 10,000", strata: "namespaces=100000/miss", peer: "namespaces=10000/miss", unit: "miss-µs", max: 1.5},
		}},
}

// write renders the document.
func write(w io.Writer, res *results, notes map[string]string, machine string) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("# Performance\n\n")
	p("<!-- Generated by `make bench` (bench/cmd/perfdoc) from one run; do not edit by hand. -->\n\n")
	if n := notes["intro"]; n != "" {
		p("%s\n\n", n)
	}
	p("## The run\n\n%s\n", machine)
	if n := notes["reproduce"]; n != "" {
		p("%s\n\n", n)
	}
	p("## Goals\n\n| case | goal | strata / peer | |\n| --- | --- | --- | --- |\n")
	for _, c := range cases {
		if c.watch {
			for _, sc := range scenarios(res, c.bench) {
				s, err := get(res, c.bench, sc+"/strata")
				if err != nil {
					return err
				}
				seen, of := s.metrics["seen"], s.metrics["updates"]
				p("| %s | strata sees the final state of every update (%s) | %s of %s | %s |\n", c.key[4:], sc, num(seen), num(of), mark(of > 0 && seen == of))
			}
			continue
		}
		for _, g := range c.goals {
			if c.apart != "" && !measured(res, c.bench, g) {
				p("| %s | %s | not measured: `make %s` | **not measured** |\n", c.key[4:], g.text, c.apart)
				continue
			}
			s, err := get(res, c.bench, g.strata)
			if err != nil {
				return err
			}
			if g.absolute {
				v := s.metrics[g.unit]
				p("| %s | %s | %s %s (at most %s) | %s |\n", c.key[4:], g.text, num(v), g.unit, num(g.max), mark(v <= g.max))
				continue
			}
			q, err := get(res, c.bench, g.peer)
			if err != nil {
				return err
			}
			unit := g.unit
			if unit == "" {
				unit = "ns/op"
			}
			if g.difference {
				d := s.metrics[unit] - q.metrics[unit]
				p("| %s | %s | %s %s more (at most %s) | %s |\n", c.key[4:], g.text, num(d), unit, num(g.max), mark(d <= g.max))
				continue
			}
			r := s.metrics[unit] / q.metrics[unit]
			met := r <= g.max
			if g.strict {
				met = r < g.max
			}
			p("| %s | %s | %s | %s |\n", c.key[4:], g.text, ratioIn(r, unit), mark(met))
		}
	}
	p("\n")
	for _, c := range cases {
		p("## %s\n\n", c.title)
		if n := notes[c.key]; n != "" {
			p("%s\n\n", n)
		}
		subs := subBenchmarks(res, c.bench)
		if len(subs) == 0 && c.apart != "" {
			p("Not measured in this run: `make %s` measures it, apart from `make bench`.\n\n", c.apart)
			continue
		}
		if len(subs) == 0 {
			return fmt.Errorf("no results for Benchmark%s", c.bench)
		}
		if c.apart != "" {
			p("Measured apart from the run above, by `make %s`", c.apart)
			if commit := res.bench[c.bench+"/"+subs[0]].commit; commit != "" {
				p(" at %s", commit)
			}
			p(".\n\n")
		}
		if c.watch {
			p("| scenario | library | updates shown | p50 after the Write | p99 after the Write |\n| --- | --- | --- | --- | --- |\n")
			for _, sub := range subs {
				m := res.bench[c.bench+"/"+sub].metrics
				lat := func(unit string) string {
					if v, ok := m[unit]; ok {
						return num(v) + " µs"
					}
					return "–"
				}
				sc, lib, _ := strings.Cut(sub, "/")
				p("| %s | %s | %s of %s | %s | %s |\n", sc, lib, num(m["seen"]), num(m["updates"]), lat("p50-µs"), lat("p99-µs"))
			}
			p("\n")
			continue
		}
		cols := c.columns
		if cols == nil {
			cols = defaultColumns
		}
		p("| benchmark | %s | strata / this |\n|%s\n", strings.Join(cols, " | "), strings.Repeat(" --- |", len(cols)+2))
		for _, sub := range subs {
			m := res.bench[c.bench+"/"+sub].metrics
			unit := "ns/op"
			for _, u := range c.compare {
				if m[u] != 0 {
					unit = u
					break
				}
			}
			if _, ok := m[unit]; !ok || m[unit] == 0 {
				unit = ""
				for _, col := range cols {
					if m[col] != 0 {
						unit = col
						break
					}
				}
			}
			r := "–"
			if strataSub := strataFor(c, sub, subs); strataSub != sub && unit != "" {
				if s, err := get(res, c.bench, strataSub); err == nil && m[unit] != 0 {
					r = ratioIn(s.metrics[unit]/m[unit], unit)
				}
			}
			cells := make([]string, len(cols))
			for i, col := range cols {
				cells[i] = "–"
				if v, ok := m[col]; ok && (v != 0 || col != "heap-MiB" && col != "inuse-MiB" && col != "ns/op") {
					cells[i] = num(v)
				}
			}
			p("| %s | %s | %s |\n", sub, strings.Join(cells, " | "), r)
		}
		p("\n")
	}
	// Sections of their own, measured apart from the cases (a note
	// "## section TITLE" is "## TITLE" here), in the order of their titles.
	for _, k := range slices.Sorted(maps.Keys(notes)) {
		if title, ok := strings.CutPrefix(k, "section "); ok {
			p("## %s\n\n%s\n\n", title, notes[k])
		}
	}
	if n := notes["outro"]; n != "" {
		p("%s\n", n)
	}
	return nil
}

// strataFor names strata's benchmark that sub is compared with: the one a
// goal pairs it with, strata's of the same group (the part before a "/")
// among subs, or the case's strata benchmark.
func strataFor(c kase, sub string, subs []string) string {
	if c.apart != "" {
		return sub // one measurement at several sizes: a row stands alone
	}
	for _, g := range c.goals {
		if g.peer == sub {
			return g.strata
		}
		if g.strata == sub {
			return sub
		}
	}
	group, name, grouped := strings.Cut(sub, "/")
	if !grouped {
		name = sub
	}
	if strings.HasPrefix(name, "strata") {
		return sub
	}
	if grouped {
		for _, o := range subs {
			if g, n, ok := strings.Cut(o, "/"); ok && g == group && strings.HasPrefix(n, "strata") {
				return o
			}
		}
	}
	return c.strata
}

// measured reports whether the run holds what goal g compares: a case
// measured apart may have run at other sizes than its goals name.
func measured(res *results, bench string, g goal) bool {
	_, s := res.bench[bench+"/"+g.strata]
	_, q := res.bench[bench+"/"+g.peer]
	return s && (g.absolute || q)
}

func get(res *results, bench, sub string) (*result, error) {
	r, ok := res.bench[bench+"/"+sub]
	if !ok {
		return nil, fmt.Errorf("no result for Benchmark%s/%s", bench, sub)
	}
	return r, nil
}

// subBenchmarks lists the sub-benchmarks of bench: grouped by the part
// before a "/" (a scenario) in the order they ran, strata's first in each
// group, then by name.
func subBenchmarks(res *results, bench string) []string {
	var out []string
	for name := range res.bench {
		if sub, ok := strings.CutPrefix(name, bench+"/"); ok {
			out = append(out, sub)
		}
	}
	group := func(s string) int {
		g, _, ok := strings.Cut(s, "/")
		if !ok {
			return 0
		}
		return res.order[bench+"/"+g]
	}
	slices.SortFunc(out, func(a, b string) int {
		if ga, gb := group(a), group(b); ga != gb {
			return ga - gb
		}
		la, lb := a[strings.LastIndexByte(a, '/')+1:], b[strings.LastIndexByte(b, '/')+1:]
		as, bs := strings.HasPrefix(la, "strata"), strings.HasPrefix(lb, "strata")
		if as != bs {
			if as {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

// scenarios lists the groups of bench's sub-benchmarks, in the order they
// ran.
func scenarios(res *results, bench string) []string {
	var out []string
	for _, sub := range subBenchmarks(res, bench) {
		if sc, _, ok := strings.Cut(sub, "/"); ok && !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out
}

func mark(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}

// ratioIn is ratio for a ratio of unit: of time, faster or slower; of
// memory, less or more.
func ratioIn(r float64, unit string) string {
	less, more := "less", "more"
	switch {
	case unit == "reloads" || unit == "mixed-snapshots":
		less = "fewer"
	case !strings.HasSuffix(unit, "-MiB") && !strings.HasPrefix(unit, "heap"):
		return ratio(r)
	}
	if r < 1 {
		return fmt.Sprintf("%s (%s× %s)", trim(r, 3), num(1/r), less)
	}
	return fmt.Sprintf("%s (%s× %s)", trim(r, 3), trim(r, 2), more)
}

// ratio prints strata / peer, and for ratios below one how many times
// faster strata is.
func ratio(r float64) string {
	if r < 1 {
		return fmt.Sprintf("%s (%s× faster)", trim(r, 3), num(1/r))
	}
	return fmt.Sprintf("%s (%s× slower)", trim(r, 3), trim(r, 2))
}

// num prints a measurement with three significant digits, with thousands
// separated.
func num(v float64) string {
	switch {
	case v == math.Trunc(v) && v < 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 1000:
		return group(strconv.FormatFloat(v, 'f', 0, 64))
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func trim(v float64, digits int) string { return strconv.FormatFloat(v, 'g', digits, 64) }

func group(s string) string {
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// machine describes where the run happened.
func machine(res *results, commit string) string {
	var b strings.Builder
	cpu := res.header["cpu"]
	if cpu == "" {
		cpu = "unknown"
	}
	fmt.Fprintf(&b, "| | |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| CPU | %s, %d cores |\n", cpu, runtime.NumCPU())
	if mem := memTotal(); mem != "" {
		fmt.Fprintf(&b, "| memory | %s |\n", mem)
	}
	fmt.Fprintf(&b, "| OS | %s/%s |\n", res.header["goos"], res.header["goarch"])
	fmt.Fprintf(&b, "| Go | %s |\n", runtime.Version())
	if commit != "" {
		fmt.Fprintf(&b, "| commit | %s |\n", commit)
	}
	runs := 0
	for _, r := range res.bench {
		runs = max(runs, r.runs)
	}
	fmt.Fprintf(&b, "| runs | each benchmark up to %d times; the tables give the median |\n", runs)
	return b.String()
}

func memTotal() string {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return ""
			}
			return fmt.Sprintf("%.0f GiB", kb/(1<<20))
		}
	}
	return ""
}
