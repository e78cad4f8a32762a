package target

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/stratacfg/strata/merge"
)

// adr is Greenhouse's ADR 007 ladder: no selector < clusters < plugin
// definitions < both.
var adr = Ladder{"none", "cluster", "definition", "both"}

func override(name, class string, created int, sel Selector, values map[string]string) *Layer {
	return &Layer{
		Layer:    &merge.Layer{Source: merge.Source{Origin: "PluginOverride", Name: name}, Values: values},
		Selector: sel, Class: class, Name: name,
		Created: time.Date(2026, 1, 1, 0, 0, created, 0, time.UTC),
	}
}

func ranked(l *Layer, rank int) *Layer {
	l.Rank = rank
	return l
}

// sel parses a label selector, as a selector ConfigMap's annotation is.
func sel(s string) labels.Selector {
	l, err := labels.Parse(s)
	if err != nil {
		panic(err)
	}
	return l
}

func names(ls []*Layer) string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return strings.Join(out, " ")
}

// TestLadderOrder applies overrides in the ladder's order whatever their
// creation, then by creation time, then by name, and leaves out those
// that do not select the target, each with why.
func TestLadderOrder(t *testing.T) {
	cluster := Target{Name: "eu-1", Labels: map[string]string{"region": "eu", "tier": "prod"}, Dimensions: map[string]string{"pluginDefinition": "kube-monitoring"}}
	prod := labels.SelectorFromSet(labels.Set{"tier": "prod"})
	monitoring := map[string][]string{"pluginDefinition": {"kube-monitoring", "logs"}}
	for _, tc := range []struct {
		name    string
		layers  []*Layer
		applied string
		ignored string
	}{
		{
			name: "classes before creation time",
			layers: []*Layer{
				override("both", "both", 1, Selector{Labels: prod, Dimensions: monitoring}, nil),
				override("definition", "definition", 2, Selector{Dimensions: monitoring}, nil),
				override("cluster", "cluster", 3, Selector{Names: []string{"eu-1"}}, nil),
				override("global", "none", 4, Selector{}, nil),
			},
			applied: "global cluster definition both",
		},
		{
			name: "ties by creation time, then by name",
			layers: []*Layer{
				override("b-new", "cluster", 9, Selector{Labels: prod}, nil),
				override("z-old", "cluster", 1, Selector{Labels: prod}, nil),
				override("b-same", "cluster", 5, Selector{Labels: prod}, nil),
				override("a-same", "cluster", 5, Selector{Labels: prod}, nil),
			},
			applied: "z-old a-same b-same b-new",
		},
		{
			name: "rank before creation time",
			layers: []*Layer{
				ranked(override("two-terms", "cluster", 1, Selector{Labels: sel("tier=prod,region=eu")}, nil), 2),
				ranked(override("one-term", "cluster", 9, Selector{Labels: prod}, nil), 1),
				ranked(override("unranked", "cluster", 5, Selector{}, nil), 0),
			},
			applied: "unranked one-term two-terms",
		},
		{
			name: "left out, each with why",
			layers: []*Layer{
				override("other-cluster", "cluster", 1, Selector{Names: []string{"us-1", "us-2"}}, nil),
				override("excluded", "cluster", 2, Selector{Labels: prod, ExcludeNames: []string{"eu-1"}}, nil),
				override("staging", "cluster", 3, Selector{Labels: sel("tier=staging")}, nil),
				override("us-only", "cluster", 4, Selector{Labels: sel("region in (us, ap)")}, nil),
				override("not-eu", "cluster", 5, Selector{Labels: sel("region notin (eu)")}, nil),
				override("needs-gpu", "cluster", 6, Selector{Labels: sel("gpu")}, nil),
				override("no-tier", "cluster", 7, Selector{Labels: sel("!tier")}, nil),
				override("other-plugin", "definition", 8, Selector{Dimensions: map[string][]string{"pluginDefinition": {"cert-manager"}}}, nil),
				override("no-such-dimension", "definition", 9, Selector{Dimensions: map[string][]string{"team": {"a"}}}, nil),
				override("eu", "cluster", 10, Selector{Labels: sel("region in (eu)")}, nil),
			},
			applied: "eu",
			ignored: "other-cluster: eu-1 is not among the names us-1, us-2 | " +
				"excluded: eu-1 is among the names left out | " +
				"staging: label tier=staging: it is prod | " +
				"us-only: label region in (ap,us): it is eu | " +
				"not-eu: label region notin (eu): it is eu | " +
				"needs-gpu: label gpu: not set | " +
				"no-tier: label !tier: it is prod | " +
				"other-plugin: pluginDefinition kube-monitoring is not among cert-manager | " +
				"no-such-dimension: eu-1 has no team",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			applied, ignored, err := adr.Select(cluster, tc.layers)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(applied); got != tc.applied {
				t.Errorf("applied %q, want %q", got, tc.applied)
			}
			var why []string
			for _, ig := range ignored {
				why = append(why, ig.Layer.Name+": "+ig.Reason)
			}
			if got := strings.Join(why, " | "); got != tc.ignored {
				t.Errorf("ignored\n%s\nwant\n%s", got, tc.ignored)
			}
			for _, l := range tc.layers {
				if l.Selector.Matches(cluster) != (l.Selector.Why(cluster) == "") {
					t.Errorf("%s: Matches %v, Why %q", l.Name, l.Selector.Matches(cluster), l.Selector.Why(cluster))
				}
			}
		})
	}
}

// TestLadderRefusesWhatItCannotPlace names a layer whose class is not on
// the ladder, and a malformed selector.
func TestLadderRefusesWhatItCannotPlace(t *testing.T) {
	for _, tc := range []struct {
		layer *Layer
		want  string
	}{
		{override("typo", "clsuter", 1, Selector{}, nil), `typo: class "clsuter" is not on the ladder (none < cluster < definition < both)`},
		{override("dim", "definition", 1, Selector{Dimensions: map[string][]string{"pluginDefinition": nil}}, nil), "dim: selector: dimension pluginDefinition: no values"},
	} {
		if _, _, err := adr.Select(Target{Name: "x"}, []*Layer{tc.layer}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.layer.Name, err, tc.want)
		}
	}
}

// TestMergeInLadderOrder merges the layers Select applied: the most
// specific wins each key, and every key says which override set it and
// which it shadowed.
func TestMergeInLadderOrder(t *testing.T) {
	target := Target{Name: "eu-1", Labels: map[string]string{"tier": "prod"}, Dimensions: map[string]string{"pluginDefinition": "logs"}}
	layers := []*Layer{
		override("both", "both", 1, Selector{Labels: sel("tier=prod"), Dimensions: map[string][]string{"pluginDefinition": {"logs"}}}, map[string]string{"/retention": `"30d"`}),
		override("global", "none", 2, Selector{}, map[string]string{"/retention": `"7d"`, "/replicas": "2"}),
		override("cluster", "cluster", 3, Selector{Names: []string{"eu-1"}}, map[string]string{"/replicas": "3", "/retention": `"14d"`}),
	}
	applied, _, err := adr.Select(target, layers)
	if err != nil {
		t.Fatal(err)
	}
	r := merge.Merge(Layers(applied)...)
	for key, want := range map[string]string{"/retention": `"30d" from both over cluster, global`, "/replicas": `3 from cluster over global`} {
		p, _ := r.Explain(key)
		var over []string
		for _, s := range p.Shadowed {
			over = append(over, s.Source.Name)
		}
		if got := fmt.Sprintf("%s from %s over %s", p.Value, p.Source.Name, strings.Join(over, ", ")); got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
	}
}

// TestNoDependencies keeps the package light: apimachinery for label
// selectors, no client-go and no API types.
func TestNoDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "k8s.io/client-go") || strings.HasPrefix(dep, "k8s.io/api/") {
			t.Errorf("target depends on %s", dep)
		}
	}
}

// TestContests reports a key only when layers of one class and rank set
// it to different values (or one removes what another sets), with the
// winner and every other value, nearest first.
func TestContests(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	layer := func(name, class string, rank, d int, values map[string]string) *Layer {
		return &Layer{Layer: &merge.Layer{Source: merge.Source{Origin: "override", Name: name}, Values: values}, Class: class, Rank: rank, Created: day(d), Name: name}
	}
	ladder := Ladder{"generic", "specific"}
	base := &merge.Layer{Source: merge.Source{Origin: "default"}, Values: map[string]string{"/a": "0", "/b": "0", "/gone": "1"}}
	applied, _, err := ladder.Select(Target{}, []*Layer{
		layer("g1", "generic", 0, 1, map[string]string{"/a": "1", "/b": "1", "/c": "1", "/gone": "1", "/m": `{"x":1,"y":2}`}),
		layer("g2", "generic", 0, 2, map[string]string{"/a": "2", "/b": "1.0", "/gone": "null", "/m": `{"y":2,"x":1}`}),
		layer("g3", "generic", 0, 3, map[string]string{"/a": "3"}),
		layer("g-ranked", "generic", 1, 4, map[string]string{"/c": "9"}),
		layer("s1", "specific", 0, 5, map[string]string{"/d": "1"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	r := merge.Merge(append([]*merge.Layer{base}, Layers(applied)...)...)
	var got []string
	for _, c := range Contests(applied, r) {
		s := c.Key + ": " + c.Winner.Source.Name + "=" + c.Winner.Value
		for _, o := range c.Others {
			s += " over " + o.Source.Name + "=" + o.Value
		}
		got = append(got, s)
	}
	want := []string{
		"/a: g3=3 over g2=2 over g1=1", // three of one class and rank; the default below does not count
		"/gone: g2=null over g1=1",     // a removal contests a value
	}
	// /b and /m: the same value, written otherwise; /c: another rank; /d:
	// one layer of its class.
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("contests:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c := Contests(applied[3:], merge.Merge(Layers(applied[3:])...)); c != nil {
		t.Errorf("no two layers tie, and %v", c)
	}
}

// TestContestsCompareNumbersExactly: two layers of one class and rank that
// set an integer key to two integers past 2^53 contest it (float64 took
// them for one); 1 and 1.0, and 1e3 and 1000, are still one value.
func TestContestsCompareNumbersExactly(t *testing.T) {
	layer := func(name string, d int, v string) *Layer {
		return &Layer{Layer: &merge.Layer{Source: merge.Source{Origin: "override", Name: name}, Values: map[string]string{"/id": v}},
			Class: "generic", Created: time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC), Name: name}
	}
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"9007199254740993", "9007199254740992", 1},
		{"1", "1.0", 0},
		{"1e3", "1000", 0},
		{`{"n":[1,2]}`, `{"n":[1,2.0]}`, 0},
	} {
		applied, _, err := Ladder{"generic"}.Select(Target{}, []*Layer{layer("a", 1, c.a), layer("b", 2, c.b)})
		if err != nil {
			t.Fatal(err)
		}
		if got := Contests(applied, merge.Merge(Layers(applied)...)); len(got) != c.want {
			t.Errorf("%s then %s: %d contests, want %d", c.a, c.b, len(got), c.want)
		}
	}
}

// TestSortNamesALayerBySource: a layer with no Name is named by its Source
// in Sort's errors.
func TestSortNamesALayerBySource(t *testing.T) {
	l := &Layer{Layer: &merge.Layer{Source: merge.Source{Origin: "namespace", Name: "team-a/overrides"}}, Class: "clsuter"}
	if _, err := (Ladder{"cluster"}).Sort([]*Layer{l}); err == nil || !strings.Contains(err.Error(), "team-a/overrides") {
		t.Errorf("%v, want the layer named by its source", err)
	}
}

// TestContestsOfAReplacedKey: a layer that removes (null) or replaces an
// object another layer of its class and rank sets a member of contests
// it, as a removal of the key itself does.
func TestContestsOfAReplacedKey(t *testing.T) {
	layer := func(name string, d int, values map[string]string) *Layer {
		return &Layer{Layer: &merge.Layer{Source: merge.Source{Origin: "override", Name: name}, Values: values},
			Class: "generic", Created: time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC), Name: name}
	}
	for _, top := range []string{"null", `"flat"`} {
		applied, _, err := Ladder{"generic"}.Select(Target{}, []*Layer{
			layer("a", 1, map[string]string{"/m/x": "1"}),
			layer("b", 2, map[string]string{"/m": top}),
		})
		if err != nil {
			t.Fatal(err)
		}
		c := Contests(applied, merge.Merge(Layers(applied)...))
		if len(c) != 1 || c[0].Key != "/m" || len(c[0].Others) != 1 || c[0].Others[0].Source.Name != "a" || c[0].Others[0].Value != "1" {
			t.Errorf("b sets /m=%s over a's /m/x=1: contests %+v, want one on /m, a's 1 losing", top, c)
		}
	}
}
