package configset_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/watch"
	"github.com/stratacfg/strata/watch/configset"
)

var opts = configset.Options{Namespace: "ci", Manifest: "ci-config", Parts: []string{"ci-config-0", "ci-config-1", "ci-config-2"}}

// writes lists the ConfigMaps a client created or updated since the last
// call, in order.
func writes(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		if w, ok := a.(k8stesting.CreateAction); ok && (a.GetVerb() == "create" || a.GetVerb() == "update") {
			out = append(out, a.GetVerb()+" "+w.GetObject().(*corev1.ConfigMap).Name)
		}
	}
	c.ClearActions()
	return out
}

func TestPartOfIsProwsRule(t *testing.T) {
	// Values computed apart from the code: the first byte of each name's
	// SHA-256 modulo n, prow's FilterChanges for PartitionedNames.
	for _, c := range []struct {
		key  string
		n    int
		want int
	}{
		{"openshift-release-master.yaml", 8, 4},
		{"openshift-release-master.yaml", 3, 2},
		{"kubernetes-kubernetes-main.yaml", 8, 0},
		{"kubernetes-kubernetes-main.yaml", 3, 1},
		{"config.yaml", 3, 0},
	} {
		if got := configset.PartOf(c.key, c.n); got != c.want {
			t.Errorf("PartOf(%q, %d) = %d, want %d", c.key, c.n, got, c.want)
		}
	}
}

func TestPublishWritesPartsThenManifest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 12 {
		files[fmt.Sprintf("org/repo%d/org-repo%d-main.yaml", i, i)] = fmt.Sprintf("n: %d\n", i)
	}
	files[".git/HEAD"] = "ref"
	files["README.md"] = "not published"
	if err := watchtest.WriteTree(dir, files); err != nil {
		t.Fatal(err)
	}
	o := opts
	o.Select = func(rel string) bool { return strings.HasSuffix(rel, ".yaml") }
	c := fake.NewClientset()
	m, err := configset.Publish(ctx, c.CoreV1(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	got := writes(c)
	want := []string{"create ci-config-0", "create ci-config-1", "create ci-config-2", "create ci-config"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("first publish wrote %v, want %v", got, want)
	}
	if m.Generation != 1 || len(m.Parts) != 3 {
		t.Fatalf("manifest %+v", m)
	}
	keys := 0
	for i, name := range o.Parts {
		cm, err := c.CoreV1().ConfigMaps("ci").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k := range cm.Data {
			if configset.PartOf(k, 3) != i {
				t.Errorf("key %s in part %d, want %d", k, i, configset.PartOf(k, 3))
			}
			keys++
		}
		if h := watch.ContentHash(watch.ReadOptions{}, watch.Mount{Path: "p", Data: cm.Data, BinaryData: cm.BinaryData}); h != m.Parts[name] {
			t.Errorf("part %s hashes %s, the manifest says %s", name, h, m.Parts[name])
		}
	}
	if keys != 12 {
		t.Errorf("%d keys published, want the 12 configurations", keys)
	}

	// The same tree again: nothing written, the same manifest.
	again, err := configset.Publish(ctx, c.CoreV1(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := writes(c); len(got) != 0 || again.Generation != 1 {
		t.Fatalf("an unchanged publish wrote %v, generation %d", got, again.Generation)
	}

	// One file changed: its part, then the manifest.
	changed := "org/repo5/org-repo5-main.yaml"
	watchtest.WriteFiles(t, dir, map[string]string{changed: "n: 55\n"})
	m2, err := configset.Publish(ctx, c.CoreV1(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	part := o.Parts[configset.PartOf("org-repo5-main.yaml", 3)]
	if got, want := writes(c), []string{"update " + part, "update ci-config"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("a one-file change wrote %v, want %v", got, want)
	}
	if m2.Generation != 2 {
		t.Fatalf("generation %d after a change, want 2", m2.Generation)
	}
	for name, h := range m.Parts {
		if (m2.Parts[name] != h) != (name == part) {
			t.Errorf("part %s: hash %s → %s", name, h, m2.Parts[name])
		}
	}
}

func TestPublishGzipsLargeFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	big := strings.Repeat("key: value\n", 10_000)
	watchtest.WriteFiles(t, dir, map[string]string{"big.yaml": big, "small.yaml": "a: 1\n"})
	c := fake.NewClientset()
	o := opts
	o.Parts = []string{"only"}
	o.GzipAbove = 1 << 10
	if _, err := configset.Publish(ctx, c.CoreV1(), dir, o); err != nil {
		t.Fatal(err)
	}
	cm, err := c.CoreV1().ConfigMaps("ci").Get(ctx, "only", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["small.yaml"] != "a: 1\n" {
		t.Errorf("small.yaml: %q", cm.Data["small.yaml"])
	}
	z, err := gzip.NewReader(bytes.NewReader(cm.BinaryData["big.yaml"]))
	if err != nil {
		t.Fatalf("big.yaml is not gzip'd: %v", err)
	}
	if b, _ := io.ReadAll(z); string(b) != big {
		t.Error("big.yaml does not decompress to the file")
	}
}

func TestPublishRefusesBeforeWriting(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		files map[string]string
		link  bool
		o     func(*configset.Options)
		want  string
	}{
		{name: "two files one key", files: map[string]string{"a/x.yaml": "1", "b/x.yaml": "2"}, want: `would both be key "x.yaml"`},
		{name: "not a key", files: map[string]string{"a b.yaml": "1"}, want: `"a b.yaml" is not a ConfigMap key`},
		{name: "part too large", files: map[string]string{"a.yaml": strings.Repeat("x", 1<<20+1)}, o: func(o *configset.Options) { o.GzipAbove = -1 }, want: "give more parts"},
		{name: "file too large", files: map[string]string{"a.yaml": strings.Repeat("x", 4<<20+1)}, want: "larger than 4194304 bytes"},
		{name: "a link", files: map[string]string{"a.yaml": "1"}, link: true, want: "passwd: not a regular file (a link or a device): nothing was published"},
		{name: "no parts", o: func(o *configset.Options) { o.Parts = nil }, want: "Parts is required"},
		{name: "a part named twice", o: func(o *configset.Options) { o.Parts = []string{"p", "p"} }, want: `"p" is named twice`},
		{name: "the manifest as a part", o: func(o *configset.Options) { o.Parts = []string{"ci-config"} }, want: "named twice"},
		{name: "not a name", o: func(o *configset.Options) { o.Parts = []string{"Part_0"} }, want: "not a ConfigMap name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := watchtest.WriteTree(dir, c.files); err != nil {
				t.Fatal(err)
			}
			if c.link {
				if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
					t.Fatal(err)
				}
			}
			o := opts
			if c.o != nil {
				c.o(&o)
			}
			client := fake.NewClientset()
			_, err := configset.Publish(ctx, client.CoreV1(), dir, o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
			if w := writes(client); len(w) != 0 {
				t.Errorf("wrote %v before refusing", w)
			}
		})
	}
}

func TestPublishSkipsWhatSelectLeavesOut(t *testing.T) {
	dir := t.TempDir()
	// The largest file Publish reads: 4 MiB, gzip'd into a part.
	watchtest.WriteFiles(t, dir, map[string]string{"a.yaml": strings.Repeat("x", 4<<20)})
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "README")); err != nil {
		t.Fatal(err)
	}
	o := opts
	o.Select = func(rel string) bool { return strings.HasSuffix(rel, ".yaml") }
	if _, err := configset.Publish(context.Background(), fake.NewClientset().CoreV1(), dir, o); err != nil {
		t.Fatal(err)
	}
}

// TestPublishGoesOnAfterTheManifestIsDeleted: the parts remember the
// generation that wrote them, so a manifest published again after it was
// deleted is not taken for a rollback.
func TestPublishGoesOnAfterTheManifestIsDeleted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := fake.NewClientset()
	for i := range 3 {
		watchtest.WriteFiles(t, dir, map[string]string{"a.yaml": fmt.Sprint(i)})
		if _, err := configset.Publish(ctx, c.CoreV1(), dir, opts); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.CoreV1().ConfigMaps("ci").Delete(ctx, "ci-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	m, err := configset.Publish(ctx, c.CoreV1(), dir, opts)
	if err != nil || m.Generation != 4 {
		t.Fatalf("after the manifest was deleted: %+v %v, want generation 4", m, err)
	}
}

// TestPublishFindsARacingPart: another publish writes a part after this
// one wrote its own and before its manifest: the manifest lands, and the
// publish fails naming the part.
func TestPublishFindsARacingPart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"a.yaml": "1"})
	c := fake.NewClientset()
	if _, err := configset.Publish(ctx, c.CoreV1(), dir, opts); err != nil {
		t.Fatal(err)
	}
	part := opts.Parts[configset.PartOf("a.yaml", 3)]
	c.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).Name == "ci-config" {
			other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: part, Namespace: "ci"}, Data: map[string]string{"a.yaml": "3"}}
			if err := c.Tracker().Update(corev1.SchemeGroupVersion.WithResource("configmaps"), other, "ci"); err != nil {
				t.Error(err)
			}
		}
		return false, nil, nil
	})
	watchtest.WriteFiles(t, dir, map[string]string{"a.yaml": "2"})
	_, err := configset.Publish(ctx, c.CoreV1(), dir, opts)
	if err == nil || !strings.Contains(err.Error(), "part ci/"+part+" changed while generation 2 was published") {
		t.Fatalf("got %v", err)
	}
}

func TestPublishRacingManifestFails(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"a.yaml": "1"})
	c := fake.NewClientset()
	if _, err := configset.Publish(ctx, c.CoreV1(), dir, opts); err != nil {
		t.Fatal(err)
	}
	// Another publisher writes the manifest between this one's read of
	// it and its write.
	c.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).Name == "ci-config" {
			return true, nil, errors.New(`Operation cannot be fulfilled on configmaps "ci-config": the object has been modified`)
		}
		return false, nil, nil
	})
	watchtest.WriteFiles(t, dir, map[string]string{"a.yaml": "2"})
	_, err := configset.Publish(ctx, c.CoreV1(), dir, opts)
	if err == nil || !strings.Contains(err.Error(), "writing the manifest ConfigMap ci/ci-config (generation 2)") {
		t.Fatalf("got %v", err)
	}
}

func TestPublishRefusesABrokenManifest(t *testing.T) {
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"a.yaml": "1"})
	c := fake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "ci-config", Namespace: "ci"},
		Data:       map[string]string{configset.ManifestKey: `{"generation":"3"}`},
	})
	_, err := configset.Publish(context.Background(), c.CoreV1(), dir, opts)
	if err == nil || !strings.Contains(err.Error(), "ConfigMap ci/ci-config, key manifest.json: not a manifest") {
		t.Fatalf("got %v", err)
	}
}

// mounts are a set's ConfigMaps mounted each on its own, written by the
// Go AtomicWriter as kubelet writes them.
type mounts struct {
	root    string
	writers map[string]*watchtest.AtomicWriter
	client  *fake.Clientset
}

func newMounts(t *testing.T, names ...string) *mounts {
	m := &mounts{root: t.TempDir(), writers: map[string]*watchtest.AtomicWriter{}, client: fake.NewClientset()}
	for _, n := range names {
		dir := filepath.Join(m.root, n)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		m.writers[n] = watchtest.NewAtomicWriter(dir)
	}
	return m
}

func (m *mounts) path(name string) string { return filepath.Join(m.root, name) }

// project writes the ConfigMap name holds now into its mount, as kubelet
// does on its next sync.
func (m *mounts) project(t *testing.T, name string) {
	t.Helper()
	cm, err := m.client.CoreV1().ConfigMaps("ci").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.writers[name].TryWriteBinary(cm.Data, cm.BinaryData); err != nil {
		t.Fatal(err)
	}
}

// publish sets every file of tree to v, writes them into src and
// publishes src to the mounts' cluster.
func (m *mounts) publish(t *testing.T, src string, tree map[string]string, v string) {
	t.Helper()
	for k := range tree {
		tree[k] = v
	}
	watchtest.WriteFiles(t, src, tree)
	if _, err := configset.Publish(context.Background(), m.client.CoreV1(), src, opts); err != nil {
		t.Fatal(err)
	}
}

func (m *mounts) paths(names ...string) []string {
	var out []string
	for _, n := range names {
		out = append(out, m.path(n))
	}
	return out
}

func TestCheckServesOnlyWholeSets(t *testing.T) {
	all := append([]string{opts.Manifest}, opts.Parts...)
	m := newMounts(t, all...)
	src := t.TempDir()
	tree := map[string]string{}
	for i := range 30 {
		tree[fmt.Sprintf("c%d.yaml", i)] = ""
	}
	m.publish(t, src, tree, "v: 1\n")
	check := configset.Check(m.path(opts.Manifest))
	read := func() error {
		t.Helper()
		c, err := watch.ReadContents(m.paths(all...), watch.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return check(c)
	}
	if err := read(); err == nil || !strings.Contains(err.Error(), "holds no manifest.json") {
		t.Fatalf("nothing mounted yet: %v", err)
	}
	// The parts arrive before the manifest, then the manifest.
	for _, p := range opts.Parts {
		m.project(t, p)
		if err := read(); err == nil {
			t.Fatalf("served with part %s mounted and no manifest", p)
		}
	}
	m.project(t, opts.Manifest)
	if err := read(); err != nil {
		t.Fatalf("the whole set: %v", err)
	}

	// Generation 2 changes every part; kubelet brings the manifest first,
	// then the parts one by one: pending until the last.
	m.publish(t, src, tree, "v: 2\n")
	m.project(t, opts.Manifest)
	for i, p := range opts.Parts {
		err := read()
		if err == nil || !strings.Contains(err.Error(), "the manifest (generation 2) does not list") {
			t.Fatalf("%d of 3 parts updated: %v", i, err)
		}
		m.project(t, p)
	}
	if err := read(); err != nil {
		t.Fatalf("generation 2 whole: %v", err)
	}

	// Restoring generation 1 (a backup applied by hand) is refused.
	for _, n := range all {
		if err := m.writers[n].TryWriteBinary(nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	m.client = fake.NewClientset()
	m.publish(t, src, tree, "v: 1\n")
	for _, n := range all {
		m.project(t, n)
	}
	err := read()
	var rb *watch.RollbackError
	if !errors.As(err, &rb) || !rb.Refuse || rb.Rollbacks[0].From != "generation 2" || rb.Rollbacks[0].To != "generation 1" {
		t.Fatalf("a manifest gone back to generation 1: %v", err)
	}
}

func TestCheckNamesMountMistakes(t *testing.T) {
	ctx := context.Background()
	all := append([]string{opts.Manifest}, opts.Parts...)
	m := newMounts(t, all...)
	src := t.TempDir()
	watchtest.WriteFiles(t, src, map[string]string{"a.yaml": "1", "b.yaml": "2", ".hidden": "x"})
	if _, err := configset.Publish(ctx, m.client.CoreV1(), src, opts); err != nil {
		t.Fatal(err)
	}
	for _, n := range all {
		m.project(t, n)
	}
	for _, c := range []struct {
		name  string
		paths []string
		check func(*watch.Contents) error
		read  watch.ReadOptions
		want  string
	}{
		{"a part not mounted", m.paths(all[:3]...), configset.Check(m.path(opts.Manifest)), watch.ReadOptions{}, "lists 3 parts (ci-config-0, ci-config-1, ci-config-2), and 2 are mounted"},
		{"the manifest not watched", m.paths(opts.Parts...), configset.Check(m.path(opts.Manifest)), watch.ReadOptions{}, "is not one of the watched paths"},
		{"a part read in part", m.paths(all...), configset.Check(m.path(opts.Manifest)), watch.ReadOptions{Select: func(rel string) string {
			if rel == "a.yaml" {
				return "left out"
			}
			return ""
		}}, "a.yaml was left out of the read"},
		{"parts named", m.paths(all...), configset.Check(m.path(opts.Manifest), m.path(opts.Parts[0])), watch.ReadOptions{}, "lists 3 parts (ci-config-0, ci-config-1, ci-config-2), and 1 are mounted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			contents, err := watch.ReadContents(c.paths, c.read)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.check(contents); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// TestWatcherHoldsTornSets runs the check in a watcher: a set kubelet has
// updated in part is pending, never served, and a rollback is a failure
// that keeps the set in effect and is counted.
func TestWatcherHoldsTornSets(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	all := append([]string{opts.Manifest}, opts.Parts...)
	m := newMounts(t, all...)
	src := t.TempDir()
	tree := map[string]string{}
	for i := range 20 {
		tree[fmt.Sprintf("c%d.yaml", i)] = ""
	}
	m.publish(t, src, tree, "v: 1\n")
	for _, n := range all {
		m.project(t, n)
	}
	reloads := make(chan watch.Reload[string], 100)
	manifest := m.path(opts.Manifest)
	w, err := watch.New(watch.Options[string]{
		Paths:      m.paths(all...),
		Consistent: configset.Check(manifest),
		Load: func(_ context.Context, c *watch.Contents) (string, error) {
			// The set's version: every file must hold the same.
			seen := map[string]bool{}
			for _, g := range c.Generations {
				if g.Path == manifest {
					continue
				}
				for _, f := range g.Files {
					seen[string(f.Data)] = true
				}
			}
			if len(seen) != 1 {
				return "", fmt.Errorf("mixed set: %v", seen)
			}
			for v := range seen {
				return v, nil
			}
			return "", nil
		},
		OnReload: func(r watch.Reload[string]) { reloads <- r },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	next := func() watch.Reload[string] {
		t.Helper()
		select {
		case r := <-reloads:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no reload")
			return watch.Reload[string]{}
		}
	}
	if r := next(); r.Status != watch.StatusSuccess || r.Value != "v: 1\n" {
		t.Fatalf("first: %+v", r)
	}
	m.publish(t, src, tree, "v: 2\n")
	for _, n := range all {
		m.project(t, n)
		w.Resync()
		if n == all[len(all)-1] {
			break
		}
		if r := next(); r.Status != watch.StatusPending {
			t.Fatalf("after %s alone: %s %v", n, r.Status, r.Err)
		}
	}
	var r watch.Reload[string]
	for r = next(); r.Status == watch.StatusPending; r = next() {
	}
	if r.Status != watch.StatusSuccess || r.Value != "v: 2\n" {
		t.Fatalf("the whole set: %+v", r)
	}

	// Generation 1 restored by hand: refused, counted, generation 2 kept.
	m.client = fake.NewClientset()
	m.publish(t, src, tree, "v: 1\n")
	for _, n := range all {
		m.project(t, n)
	}
	w.Resync()
	for r = next(); r.Status == watch.StatusPending; r = next() {
	}
	if r.Status != watch.StatusFailure || len(r.Rollbacks) != 1 || r.Rollbacks[0].String() != m.path(opts.Manifest)+` went back from "generation 2" to "generation 1"` {
		t.Fatalf("a rollback: %s %v %v", r.Status, r.Err, r.Rollbacks)
	}
	if got := w.Current(); got != "v: 2\n" {
		t.Fatalf("current %q after a refused rollback", got)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"generation":3,"parts":{"a":"sha256:` + strings.Repeat("0", 64) + `"}}`))
	f.Add([]byte(`{"generation":0}`))
	f.Add([]byte(`{"generation":1,"parts":{"a":"sha256:x"},"extra":1}`))
	f.Add([]byte(`{} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := configset.Decode(data)
		if err != nil {
			return
		}
		if m.Generation < 1 || len(m.Parts) == 0 {
			t.Fatalf("accepted %+v", m)
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := configset.Decode(again)
		if err != nil || m2.Generation != m.Generation || len(m2.Parts) != len(m.Parts) {
			t.Fatalf("%s does not decode again: %v", again, err)
		}
	})
}

// TestPublishRefusesADirThatIsAFile: Publish of a dir that is a file (a
// careless --dir naming one configuration) is refused, naming it, and
// writes nothing: read as an empty directory, it would empty every part,
// and every replica would serve no configuration.
func TestPublishRefusesADirThatIsAFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"org-repo-main.yaml": "a: 1\n", "org-other-main.yaml": "b: 2\n"})
	c := fake.NewClientset()
	if _, err := configset.Publish(ctx, c.CoreV1(), dir, opts); err != nil {
		t.Fatal(err)
	}
	writes(c)
	file := filepath.Join(dir, "org-repo-main.yaml")
	m, err := configset.Publish(ctx, c.CoreV1(), file, opts)
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("Publish of %s, a file: %+v, %v; want an error naming it", file, m, err)
	}
	if w := writes(c); len(w) != 0 {
		t.Errorf("Publish of a file wrote %v: the set now holds no configuration", w)
	}
}

// TestPublishRefusesToEmptyASet: a directory that selects no file does
// not empty a set that holds some (a run against the wrong directory), and
// writes nothing, unless AllowEmpty says so.
func TestPublishRefusesToEmptyASet(t *testing.T) {
	ctx := context.Background()
	dir, empty := t.TempDir(), t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"org-repo-main.yaml": "a: 1\n"})
	watchtest.WriteFiles(t, empty, map[string]string{"README.md": "elsewhere\n"})
	c := fake.NewClientset()
	if _, err := configset.Publish(ctx, c.CoreV1(), dir, opts); err != nil {
		t.Fatal(err)
	}
	writes(c)
	o := opts
	o.Select = func(rel string) bool { return strings.HasSuffix(rel, ".yaml") }
	if m, err := configset.Publish(ctx, c.CoreV1(), empty, o); err == nil || !strings.Contains(err.Error(), empty) {
		t.Errorf("Publish of a directory that selects no file: %+v, %v; want an error naming it", m, err)
	}
	if w := writes(c); len(w) != 0 {
		t.Errorf("a refused publish wrote %v", w)
	}
	o.AllowEmpty = true
	if _, err := configset.Publish(ctx, c.CoreV1(), empty, o); err != nil {
		t.Errorf("Publish with AllowEmpty: %v", err)
	}
	if w := writes(c); len(w) == 0 {
		t.Error("Publish with AllowEmpty wrote nothing")
	}
}
