package namespaced

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/internal/pipeline"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/merge"
)

// stacks returns a stack over cluster that sets keys field by field and
// one that always decodes the whole configuration.
func stacks(t testing.TB, r *DryRun[*tenantConfig], cluster map[string]string) (fast, whole *pipeline.Stack[*tenantConfig], err error) {
	t.Helper()
	var lower []*merge.Layer
	if cluster != nil {
		l, _, err := r.c.configMapLayer(configMap("ops", "config", nil, cluster), OriginCluster)
		if err != nil {
			return nil, nil, err
		}
		lower = append(lower, l)
	}
	fast, _, _, err = pipeline.NewStack[*tenantConfig](r.c.model.(*kindModel[*tenantConfig]).kind, nil, lower...)
	if err != nil {
		return nil, nil, err
	}
	return fast, fast.Whole(), nil
}

// byPointer keys a ConfigMap's data by pointer, as the cluster policy
// reads it.
func byPointer(data map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range data {
		out[merge.Pointer(k)] = v
	}
	return out
}

// snapshotOf builds the snapshot of upper over st, as the resolver does.
func snapshotOf(st *pipeline.Stack[*tenantConfig], upper []*merge.Layer) (*Snapshot[*tenantConfig], error) {
	obj, res, sh, err := st.Build(upper)
	if err != nil {
		return nil, err
	}
	return newSnapshot(obj, res, sh, st.Sources(), upper, (&kindModel[*tenantConfig]{}).display), nil
}

// describeSnapshot is everything a snapshot says, to compare two.
func describeSnapshot(s *Snapshot[*tenantConfig], err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	obj, _ := json.Marshal(s.Object)
	fmt.Fprintf(&b, "object %s\n", obj)
	for _, k := range s.Provenance().Keys() {
		p, _ := s.Provenance().Explain(k)
		fmt.Fprintf(&b, "%s = %s from %v over %v\n", k, p.Value, p.Source, p.Shadowed)
	}
	fmt.Fprintf(&b, "hash %s\nsources %v\nrejected %v\n", s.Hash(), s.Sources(), s.Rejected())
	return b.String()
}

// TestStackMatchesWholeDecode checks that setting the changed keys on the
// cluster layer decoded once gives what decoding the whole configuration
// gives: the object, the provenance (defaults included), the hash, the
// rejected keys and the errors, over random cluster and namespace data.
func TestStackMatchesWholeDecode(t *testing.T) {
	r := newTestResolver(t, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	values := map[string][]string{
		"timeout": {"30", "0", "-1", "ten", " 7 "}, "retries": {"0", "3", "99999999999"}, "verbose": {"false", "true", "yes"},
		"log-dir": {"logs", ""}, "alpha-thing": {"true"}, "beta-thing": {"false"}, "quota": {"5"}, "internal": {"1"},
		"tenancy": {"on", "off"}, "locked": {"", "retries", "timeout,verbose"}, "stability": {"alpha", "beta", "stable"},
		"labels": {"{team: a}", "{}", "{a: b, c: d}", "[x]", "{a: 1}"}, "hosts": {"[a, b]", "[]", "x", "[[a]]"},
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	pick := func(n int) map[string]string {
		m := map[string]string{}
		for range n {
			k := keys[rng.IntN(len(keys))]
			m[k] = values[k][rng.IntN(len(values[k]))]
		}
		return m
	}
	// structured: fast stacks with a map or a list set in the cluster
	// layer; structuredAbove: kept builds with one set above it, which
	// only a build that set every key field by field keeps.
	fastUsed, structured, structuredAbove := 0, 0, 0
	for i := range 500 {
		cluster := pick(rng.IntN(6))
		cluster["tenancy"] = "on"
		fast, whole, err := stacks(t, r, cluster)
		if err != nil {
			continue // an invalid cluster layer fails both ways alike
		}
		if fast.FieldByField() {
			fastUsed++
			if cluster["labels"] != "" || cluster["hosts"] != "" {
				structured++
			}
		}
		nsData := pick(rng.IntN(5))
		ns, _, err := r.c.configMapLayer(tenantCM("team", nsData), OriginNamespace)
		if err != nil {
			continue
		}
		policy, err := policyFrom(&r.c.o.Tenancy, byPointer(cluster), r.c.model)
		if err != nil {
			continue
		}
		ns.Policy = policy.tenant
		msg, kept := compareStacks(fast, whole, ns)
		if msg != "" {
			t.Fatalf("case %d: cluster %v: %s", i, cluster, msg)
		}
		if kept && (nsData["labels"] != "" || nsData["hosts"] != "") {
			structuredAbove++
		}
	}
	if fastUsed < 100 || structured < 20 || structuredAbove < 20 {
		t.Errorf("only %d of the stacks set keys field by field, %d of them over a map or a list; %d builds setting a map or a list kept", fastUsed, structured, structuredAbove)
	}
}

// compareStacks returns how the snapshots of fast and whole with upper
// differ, or "", and whether the fast stack answered the last build with
// a kept object. It builds three times, the second and third from copies
// of upper under other names: the fast stack keeps the object of the
// second build and answers the third with it, and its hash with the
// second's.
func compareStacks(fast, whole *pipeline.Stack[*tenantConfig], upper ...*merge.Layer) (string, bool) {
	rounds := [][]*merge.Layer{upper}
	for _, name := range []string{"-again", "-kept"} {
		again := make([]*merge.Layer, len(upper))
		for i, l := range upper {
			cp := *l
			cp.Source.Name += name
			again[i] = &cp
		}
		rounds = append(rounds, again)
	}
	kept := false
	for _, layers := range rounds {
		fs, ferr := snapshotOf(fast, layers)
		ws, werr := snapshotOf(whole, layers)
		got, want := describeSnapshot(fs, ferr), describeSnapshot(ws, werr)
		if got != want || ferr == nil && !reflect.DeepEqual(fs.Object, ws.Object) {
			return fmt.Sprintf("upper %v from %v:\nfield by field:\n%s\nwhole:\n%s", layers[0].Values, layers[0].Source, got, want), false
		}
		kept = ferr == nil && fs.shared != nil
	}
	return "", kept
}

// FuzzStackMatchesWholeDecode feeds arbitrary namespace data through both
// decodes: whatever a tenant writes, setting the changed keys gives what
// the whole decode gives.
func FuzzStackMatchesWholeDecode(f *testing.F) {
	r := newTestResolver(f, nil)
	cluster := map[string]string{"tenancy": "on", "stability": "alpha", "timeout": "30", "verbose": "true", "log-dir": "logs"}
	fast, whole, err := stacks(f, r, cluster)
	if err != nil || !fast.FieldByField() {
		f.Fatalf("stack: %v", err)
	}
	policy, err := policyFrom(&r.c.o.Tenancy, byPointer(cluster), r.c.model)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("timeout", "45", "verbose", "false")
	f.Add("retries", "0", "alpha-thing", "true")
	f.Add("timeout", "-5", "beta-thing", "maybe")
	f.Add("log-dir", "x\"y", "retries", "2147483648")
	f.Add("labels", "{a: b}", "hosts", "[x, y]")
	f.Add("labels", "{A: 1}", "hosts", "[null]")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		ns, _, err := r.c.configMapLayer(tenantCM("team", map[string]string{k1: v1, k2: v2}), OriginNamespace)
		if err != nil {
			return // not a layer: ignored before either decode
		}
		ns.Policy = policy.tenant
		if msg, _ := compareStacks(fast, whole, ns); msg != "" {
			t.Fatal(msg)
		}
	})
}

// TestStackFallsBack checks the cases the field-by-field decode leaves to
// the whole decode.
func TestStackFallsBack(t *testing.T) {
	r := newTestResolver(t, nil)
	fast, _, err := stacks(t, r, map[string]string{"timeout": "30"})
	if err != nil || !fast.FieldByField() {
		t.Fatalf("a flat scalar cluster layer is not set field by field: %v", err)
	}
	// A nested key (a flag on a map member, say) is decoded whole.
	upper := &merge.Layer{Source: merge.Source{Origin: "flag"}, Values: map[string]string{"/timeout": "45", "/unknown/x": "1"}}
	if _, err := snapshotOf(fast, []*merge.Layer{upper}); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("a key that is no field: %v", err)
	}
	// A tombstone zeroes the member, and defaulting fills it again.
	upper = &merge.Layer{Source: merge.Source{Origin: "flag"}, Values: map[string]string{"/timeout": merge.Tombstone}}
	s, err := snapshotOf(fast, []*merge.Layer{upper})
	if err != nil || *s.Object.Timeout != 60 {
		t.Errorf("tombstone: %v, %v", s, err)
	}
	if src, _ := s.Provenance().SourceOf("/timeout"); src.Origin != layers.OriginDefault {
		t.Errorf("tombstoned key credited to %v, want default", src)
	}
	if s.Object.Kind != "tenantConfig" || s.Object.APIVersion != tenantGV.String() {
		t.Errorf("type meta %+v", s.Object.TypeMeta)
	}
}

// TestStackDefaultingWritesThroughPointers checks that a defaulting
// function writing through a pointer the cluster layer set, and a key set
// through one, change the snapshot built and nothing else: every build,
// concurrent ones included, starts from the cluster layer as decoded, and
// no build changes an object built before it.
func TestStackDefaultingWritesThroughPointers(t *testing.T) {
	r := newTestResolver(t, func(o *Options[*tenantConfig]) {
		o.Kind = tenantKindDefaulting(t, func(c *tenantConfig) {
			if c.Retries != nil {
				*c.Retries++
			}
		})
	})
	fast, _, err := stacks(t, r, map[string]string{"retries": "50", "verbose": "true", "timeout": "30"})
	if err != nil || !fast.FieldByField() {
		t.Fatalf("a flat scalar cluster layer is not set field by field: %v", err)
	}
	const builds = 50
	var built [4][builds]*tenantConfig
	var wg sync.WaitGroup
	for g := range built {
		wg.Go(func() {
			for i := range builds {
				// A timeout of its own each time: every build copies.
				upper := []*merge.Layer{{Source: merge.Source{Origin: "flag"}, Values: map[string]string{"/timeout": strconv.Itoa(1000*g + i + 1)}}}
				s, err := snapshotOf(fast, upper)
				if err != nil {
					t.Error(err)
					return
				}
				if *s.Object.Retries != 51 || !*s.Object.Verbose {
					t.Errorf("retries %d, verbose %t: want 51 and true every time", *s.Object.Retries, *s.Object.Verbose)
					return
				}
				built[g][i] = s.Object
			}
		})
	}
	wg.Wait()
	for g := range built {
		for i, obj := range built[g] {
			if want := int64(1000*g + i + 1); obj != nil && *obj.Timeout != want {
				t.Errorf("build %d of goroutine %d: timeout %d once every build was made, want %d", i, g, *obj.Timeout, want)
			}
		}
	}
	if s, err := snapshotOf(fast, nil); err != nil || *s.Object.Timeout != 30 || *s.Object.Retries != 51 {
		t.Errorf("the cluster layer alone, after the builds: %v, %v", s, err)
	}
}

// TestStackFlagsAboveAnInvalidClusterLayer checks that the cluster layer is
// validated with the flags above it, not alone: a flag that fixes what the
// cluster layer sets makes the configuration valid.
func TestStackFlagsAboveAnInvalidClusterLayer(t *testing.T) {
	r := newTestResolver(t, func(o *Options[*tenantConfig]) {
		o.Flags = &merge.Layer{Source: merge.Source{Origin: "flag", Name: "--timeout"}, Values: map[string]string{"/timeout": "45"}}
	})
	s, err := r.Resolve("team", []runtime.Object{configMap("ops", "config", nil, map[string]string{"timeout": "0", "tenancy": "on"})})
	if err != nil {
		t.Fatal(err)
	}
	if *s.Object.Timeout != 45 {
		t.Errorf("timeout %d, want the flag's 45", *s.Object.Timeout)
	}
	if src, _ := s.Provenance().SourceOf("/timeout"); src.Origin != "flag" {
		t.Errorf("timeout from %v", src)
	}
}

// TestOverridesOfARefilledValue: a key a namespace layer set and won is
// among the snapshot's overrides when defaulting refilled its value (a
// keyed list's element, a struct in one ConfigMap key) after the merge.
func TestOverridesOfARefilledValue(t *testing.T) {
	ns := merge.Source{Origin: OriginNamespace, Name: "team-a/overrides"}
	res := merge.Merge(
		&merge.Layer{Source: merge.Source{Origin: OriginCluster, Name: "ops/config"}, Values: map[string]string{"/a": "1"}},
		&merge.Layer{Source: ns, Values: map[string]string{"/whole": `{"burst":20}`, "/b": "2"}},
	)
	pipeline.Engine.Fill(res, merge.Source{Origin: pipeline.OriginDefault}, map[string]string{"/whole": `{"burst":20,"qps":5}`})
	s := newSnapshot(&tenantConfig{}, res, nil, nil, nil, (&kindModel[*tenantConfig]{}).display)
	if got := fmt.Sprint(s.Overrides()); got != "[b whole]" {
		t.Errorf("overrides %s; want [b whole]", got)
	}
}
