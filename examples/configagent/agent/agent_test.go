package agent_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/examples/configagent/agent"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/watch"
)

// ciConfig stands for ci-tools' api.ReleaseBuildConfiguration: its
// metadata and the one field the consumers below read.
type ciConfig struct {
	Metadata agent.Metadata `json:"zz_generated_metadata"`
	Image    string         `json:"image"`
}

// configAgent is ci-tools' pkg/load/agents ConfigAgent, declared here with
// the configuration type filled in, as a consumer written against it sees
// it.
type configAgent interface {
	GetMatchingConfig(metadata agent.Metadata) (ciConfig, error)
	GetAll() map[string]map[string][]ciConfig
	GetGeneration() int
	AddIndex(indexName string, indexFunc agent.IndexFn[ciConfig]) error
	GetFromIndex(indexName string, indexKey string) ([]*ciConfig, error)
	SubscribeToIndexChanges(indexName string) (<-chan agent.IndexDelta[ciConfig], error)
}

var _ configAgent = (*agent.Agent[ciConfig])(nil)

// resolve is what ci-tools' registry server does with a request: the
// configuration of a branch, or why there is none.
func resolve(configs configAgent, org, repo, branch, variant string) (string, error) {
	c, err := configs.GetMatchingConfig(agent.Metadata{Org: org, Repo: repo, Branch: branch, Variant: variant})
	if err != nil {
		return "", err
	}
	return c.Image, nil
}

// usersOf is an index consumer: the configurations that build an image.
func usersOf(configs configAgent, image string) []string {
	cfgs, err := configs.GetFromIndex("image", image)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, c := range cfgs {
		out = append(out, c.Metadata.String())
	}
	slices.Sort(out)
	return out
}

func doc(org, repo, branch, variant, image string) string {
	s := fmt.Sprintf("zz_generated_metadata:\n  org: %s\n  repo: %s\n  branch: %q\n", org, repo, branch)
	if variant != "" {
		s += "  variant: " + variant + "\n"
	}
	return s + "image: " + image + "\n"
}

func parse(_ string, data []byte) (ciConfig, agent.Metadata, error) {
	var c ciConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return c, c.Metadata, err
	}
	return c, c.Metadata, nil
}

type fixture struct {
	a       *agent.Agent[ciConfig]
	g       *watchtest.GitSync
	reloads chan watch.Reload[*agent.Snapshot[ciConfig]]
	indexed atomic.Int32 // calls of the image index's function
	cancel  context.CancelFunc
}

func start(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	f := &fixture{g: watchtest.NewGitSync(t.TempDir(), "link"), reloads: make(chan watch.Reload[*agent.Snapshot[ciConfig]], 100)}
	if err := f.g.Write(files); err != nil {
		t.Fatal(err)
	}
	var err error
	f.a, err = agent.New(agent.Options[ciConfig]{
		Watch:    watch.Options[*agent.Snapshot[ciConfig]]{Paths: []string{f.g.Path()}, Read: watch.ReadOptions{Tree: true}},
		Parse:    parse,
		OnReload: func(r watch.Reload[*agent.Snapshot[ciConfig]], _ int) { f.reloads <- r },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.a.AddIndex("image", func(c ciConfig) []string { f.indexed.Add(1); return []string{c.Image} }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	t.Cleanup(func() {
		cancel()
		<-f.a.Done()
	})
	if err := f.a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f.next(t)
	return f
}

// next waits for the next reload.
func (f *fixture) next(t *testing.T) watch.Reload[*agent.Snapshot[ciConfig]] {
	t.Helper()
	select {
	case r := <-f.reloads:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("no reload")
	}
	return watch.Reload[*agent.Snapshot[ciConfig]]{}
}

// write publishes files as the next revision and waits for its reload.
func (f *fixture) write(t *testing.T, files map[string]string) watch.Reload[*agent.Snapshot[ciConfig]] {
	t.Helper()
	if err := f.g.Write(files); err != nil {
		t.Fatal(err)
	}
	f.a.Watcher().Resync()
	return f.next(t)
}

var tree = map[string]string{
	"o/r/o-r-main.yaml":          doc("o", "r", "main", "", "img-a"),
	"o/r/o-r-main__e2e.yaml":     doc("o", "r", "main", "e2e", "img-b"),
	"o/r/o-r-release-4.yaml":     doc("o", "r", `release-4\.[0-9]+$`, "", "img-a"),
	"o/r/o-r-openshift-4.1.yaml": doc("o", "r", "openshift-4.1", "", "img-c"),
	"o/s/o-s-master.yaml":        doc("o", "s", "master", "", "img-c"),
}

func TestMatchesBranchesAsCITools(t *testing.T) {
	f := start(t, tree)
	for _, c := range []struct {
		repo, branch, variant, want string
	}{
		{"r", "main", "", "img-a"},
		{"r", "main-feature", "", "img-a"},   // a feature branch of main
		{"r", "main", "e2e", "img-b"},        // the variant's own
		{"r", "release-4.15", "", "img-a"},   // the pattern
		{"r", "openshift-4.1", "", "img-c"},  // dots are a branch name's, not a pattern's
		{"r", "maintenance", "", "error"},    // not main's feature branch
		{"r", "openshift-4x1", "", "error"},  // the dot matched literally
		{"r", "release-4.15-x", "", "error"}, // the pattern anchored where it says
		{"r", "main", "nightly", "error"},    // no such variant
		{"q", "main", "", "error"},           // no such repo
		{"s", "master-rc", "", "img-c"},
	} {
		got, err := resolve(f.a, "o", c.repo, c.branch, c.variant)
		if err != nil {
			got = "error"
		}
		if got != c.want {
			t.Errorf("o/%s@%s variant %q: %s (%v), want %s", c.repo, c.branch, c.variant, got, err, c.want)
		}
	}
	// Two configurations that serve one branch are an error naming both.
	more := map[string]string{"o/r/o-r-any.yaml": doc("o", "r", "main.*", "", "img-d")}
	for k, v := range tree {
		more[k] = v
	}
	if r := f.write(t, more); r.Status != watch.StatusSuccess {
		t.Fatal(r.Err)
	}
	_, err := resolve(f.a, "o", "r", "main", "")
	if err == nil || !strings.Contains(err.Error(), "found more than one matching config") || !strings.Contains(err.Error(), "o-r-any.yaml") {
		t.Fatalf("ambiguous: %v", err)
	}
	all := f.a.GetAll()
	if len(all["o"]["r"]) != 5 || len(all["o"]["s"]) != 1 {
		t.Errorf("GetAll: %v", all)
	}
}

func TestIndexesOncePerGeneration(t *testing.T) {
	f := start(t, tree)
	if g := f.a.GetGeneration(); g != 1 {
		t.Fatalf("generation %d", g)
	}
	if got := f.indexed.Load(); got != 5 {
		t.Fatalf("the index function ran %d times for 5 configurations", got)
	}
	for range 3 {
		if got := usersOf(f.a, "img-a"); fmt.Sprint(got) != `[o/r@main o/r@release-4\.[0-9]+$]` {
			t.Fatalf("img-a: %v", got)
		}
	}
	if got := f.indexed.Load(); got != 5 {
		t.Fatalf("reads ran the index function again: %d", got)
	}
	if got := usersOf(f.a, "none"); len(got) != 0 {
		t.Errorf("none: %v", got)
	}
	if err := f.a.AddIndex("image", nil); err == nil {
		t.Error("an index declared twice")
	}
	if _, err := f.a.GetFromIndex("variant", "e2e"); err == nil {
		t.Error("an undeclared index answered")
	}

	// An index declared after the load is computed on first use, once.
	var late atomic.Int32
	if err := f.a.AddIndex("variant", func(c ciConfig) []string { late.Add(1); return []string{c.Metadata.Variant} }); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		cfgs, err := f.a.GetFromIndex("variant", "e2e")
		if err != nil || len(cfgs) != 1 || cfgs[0].Image != "img-b" {
			t.Fatalf("variant e2e: %v %v", cfgs, err)
		}
	}
	if got := late.Load(); got != 5 {
		t.Fatalf("the late index ran %d times", got)
	}

	// An invalid revision changes nothing: generation, answers, indexes.
	bad := map[string]string{"o/r/o-r-main.yaml": "zz_generated_metadata: [\n"}
	if r := f.write(t, bad); r.Status != watch.StatusFailure || !strings.Contains(r.Err.Error(), "o-r-main.yaml") {
		t.Fatalf("bad revision: %s %v", r.Status, r.Err)
	}
	if g := f.a.GetGeneration(); g != 1 {
		t.Fatalf("generation %d after a refused revision", g)
	}
	if got, _ := resolve(f.a, "o", "r", "main", ""); got != "img-a" {
		t.Fatalf("after a refused revision: %s", got)
	}
	more := map[string]string{"o/t/o-t-main.yaml": doc("o", "t", "main", "", "img-t")}
	for k, v := range tree {
		more[k] = v
	}
	if r := f.write(t, more); r.Status != watch.StatusSuccess || f.a.GetGeneration() != 2 {
		t.Fatalf("good again: %s, generation %d", r.Status, f.a.GetGeneration())
	}
	// One snapshot answers several questions from one generation.
	s := f.a.Current()
	if s.Generation != 2 || s.Len() != 6 || !strings.HasPrefix(s.Hash, "sha256:") {
		t.Fatalf("snapshot %d %d %s", s.Generation, s.Len(), s.Hash)
	}
}

func TestSubscriptionsReportWhatChanged(t *testing.T) {
	f := start(t, tree)
	ch, err := f.a.SubscribeToIndexChanges("image")
	if err != nil {
		t.Fatal(err)
	}
	// As with ci-tools, a subscription to an index not declared yet is
	// sent its whole content when it is.
	early, err := f.a.SubscribeToIndexChanges("repo")
	if err != nil {
		t.Fatal(err)
	}
	receive := func() map[string]string {
		t.Helper()
		got := map[string]string{}
		for {
			select {
			case d := <-ch:
				var s []string
				for _, c := range d.Removed {
					s = append(s, "-"+c.Metadata.String())
				}
				for _, c := range d.Added {
					s = append(s, "+"+c.Metadata.String())
				}
				got[d.IndexKey] = strings.Join(s, " ")
			case <-time.After(500 * time.Millisecond): // a quiet channel: what was sent has been read
				return got
			}
		}
	}
	// main moves from img-a to img-x; s changes without changing image;
	// the rest is as it was.
	next := map[string]string{}
	for k, v := range tree {
		next[k] = v
	}
	next["o/r/o-r-main.yaml"] = doc("o", "r", "main", "", "img-x")
	next["o/s/o-s-master.yaml"] = doc("o", "s", "master", "", "img-c") + "# a comment\n"
	f.write(t, next)
	got := receive()
	if err := f.a.AddIndex("repo", func(c ciConfig) []string { return []string{c.Metadata.Repo} }); err != nil {
		t.Fatal(err)
	}
	initial := map[string]int{}
	for len(initial) < 2 {
		select {
		case d := <-early:
			initial[d.IndexKey] = len(d.Added) - len(d.Removed)
		case <-time.After(10 * time.Second):
			t.Fatalf("the initial content of an index declared after the subscription: %v", initial)
		}
	}
	if initial["r"] != 4 || initial["s"] != 1 {
		t.Fatalf("initial content %v, want 4 configurations of r and 1 of s", initial)
	}
	want := map[string]string{"img-a": "-o/r@main", "img-x": "+o/r@main", "img-c": "-o/s@master +o/s@master"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("deltas %v, want %v", got, want)
	}

	// A subscriber that does not read through two revisions is sent what
	// differs from the newest, not each revision: main went to img-y and
	// back, and only a delta already under way can name it.
	third := map[string]string{}
	for k, v := range next {
		third[k] = v
	}
	third["o/r/o-r-main.yaml"] = doc("o", "r", "main", "", "img-y")
	f.write(t, third)
	third["o/r/o-r-main.yaml"] = doc("o", "r", "main", "", "img-x")
	delete(third, "o/r/o-r-openshift-4.1.yaml")
	f.write(t, third)
	got = receive()
	if got["img-c"] != "-o/r@openshift-4.1" || got["img-y"] != "" {
		t.Fatalf("deltas after two revisions: %v", got)
	}
	if x, ok := got["img-x"]; ok && x != "+o/r@main" { // the one under way, undone
		t.Fatalf("img-x: %q", x)
	}
	if len(got) > 2 {
		t.Fatalf("deltas after two revisions: %v", got)
	}

	f.cancel()
	select {
	case _, open := <-ch:
		for open {
			_, open = <-ch
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the channel stayed open after the agent stopped")
	}
}

// TestSubscribeBeforeStart subscribes before the agent has loaded
// anything: nothing breaks, the first load sends the index's content, and
// the channel closes when the agent stops.
func TestSubscribeBeforeStart(t *testing.T) {
	g := watchtest.NewGitSync(t.TempDir(), "link")
	if err := g.Write(tree); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Options[ciConfig]{
		Watch: watch.Options[*agent.Snapshot[ciConfig]]{Paths: []string{g.Path()}, Read: watch.ReadOptions{Tree: true}},
		Parse: parse,
	})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := a.SubscribeToIndexChanges("image")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddIndex("image", func(c ciConfig) []string { return []string{c.Image} }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for len(got) < 3 {
		select {
		case d := <-ch:
			got[d.IndexKey] += len(d.Added)
		case <-time.After(10 * time.Second):
			t.Fatalf("the first load's content: %v", got)
		}
	}
	if got["img-a"] != 2 || got["img-b"] != 1 || got["img-c"] != 2 {
		t.Fatalf("the first load's content: %v", got)
	}
	cancel()
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not stop")
	}
	if _, open := <-ch; open {
		t.Fatal("the channel is open after the agent stopped")
	}
}
