package watch

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1 "github.com/stratacfg/strata/examples/manifests/apis/policy/v1"
	"github.com/stratacfg/strata/validation"
)

func policyOptions(t testing.TB) ManifestOptions {
	t.Helper()
	kind, err := policyv1.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	return ManifestOptions{Kind: kind, References: policyv1.References,
		Rules: validation.SetRules{NameSuffix: policyv1.NameSuffix}}
}

func policy(name string) string {
	return "apiVersion: policy.example.strata.dev/v1\nkind: Policy\nmetadata: {name: " + name + "}\nspec: {rule: r}\n"
}

func TestLoadManifestsProvenance(t *testing.T) {
	t.Parallel()
	s := &Generation{Path: "/m", Dir: true, Files: []Entry{
		{Name: "a.yaml", Data: []byte(policy("a.static.strata.dev") + "---\n" + policy("b.static.strata.dev"))},
		{Name: "b.json", Data: []byte(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"policy.example.strata.dev/v1","kind":"PolicyBinding","metadata":{"name":"c.static.strata.dev"},"spec":{"policyName":"a.static.strata.dev"}}]}`)},
		{Name: "c.yml", Data: []byte("# nothing yet\n")},
		{Name: "notes.txt", Data: []byte("not a manifest")},
	}, Hash: "sha256:x"}
	set, err := LoadManifests(s, policyOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range set.Objects {
		got = append(got, m.Kind+"/"+m.Name+" from "+m.Source().String())
	}
	want := []string{
		"Policy/a.static.strata.dev from manifest /m/a.yaml#1",
		"Policy/b.static.strata.dev from manifest /m/a.yaml#2",
		"PolicyBinding/c.static.strata.dev from manifest /m/b.json[1]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if set.Hash != "sha256:x" {
		t.Fatalf("hash %s", set.Hash)
	}
}

func TestLoadManifestsReportsEveryError(t *testing.T) {
	t.Parallel()
	s := &Generation{Path: "/m", Dir: true, Files: []Entry{
		{Name: "a.yaml", Data: []byte(policy("a"))},
		{Name: "b.yaml", Data: []byte("apiVersion: policy.example.strata.dev/v1\nkind: Policy\nmetadata: {name: b.static.strata.dev}\nspec: {}\n")},
		{Name: "c.yaml", Data: []byte("apiVersion: policy.example.strata.dev/v1\nkind: Nope\n")},
	}}
	_, err := LoadManifests(s, policyOptions(t))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"manifest /m/a.yaml: metadata.name", "must end in", "/m/b.yaml", "spec.rule", "/m/c.yaml", "kind Nope is not known in policy.example.strata.dev/v1; want one of Policy, PolicyBinding"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestComposite(t *testing.T) {
	t.Parallel()
	set := &ManifestSet{Objects: []*Manifest{{Object: &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "s.static.strata.dev"}}, Kind: "Policy", Name: "s.static.strata.dev"}}}
	dyn := func(name string) runtime.Object {
		p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.SetGroupVersionKind(policyv1.SchemeGroupVersion.WithKind("Policy"))
		return p
	}
	c := &Composite{
		Static:         func() *ManifestSet { return set },
		Dynamic:        func() []runtime.Object { return []runtime.Object{dyn("api"), dyn("spoof.static.strata.dev")} },
		ReservedSuffix: policyv1.NameSuffix,
	}
	objs, refused := c.List()
	var names []string
	for _, o := range objs {
		names = append(names, o.(*policyv1.Policy).Name)
	}
	if strings.Join(names, ",") != "s.static.strata.dev,api" {
		t.Fatalf("objects %v", names)
	}
	if len(refused) != 1 || !strings.Contains(refused[0].Error(), `Policy "spoof.static.strata.dev" refused`) {
		t.Fatalf("refused %v", refused)
	}
}

// FuzzLoadManifests feeds arbitrary file content to the manifest loader:
// it must never panic, and what it accepts must be named and valid.
func FuzzLoadManifests(f *testing.F) {
	f.Add([]byte(policy("a.static.strata.dev")))
	f.Add([]byte(policy("a.static.strata.dev") + "---\n" + policy("a.static.strata.dev")))
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[]}`))
	f.Add([]byte("a: &a [*a]\n"))
	opts := policyOptions(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := LoadManifests(&Generation{Path: "/m", Dir: true, Files: []Entry{{Name: "f.yaml", Data: data}}}, opts)
		if err != nil {
			return
		}
		for _, m := range set.Objects {
			if !strings.HasSuffix(m.Name, policyv1.NameSuffix) || len(policyv1.Validate(m.Object)) > 0 {
				t.Fatalf("accepted an invalid object %+v", m)
			}
		}
	})
}

// TestManifestsIgnoreWhatIsNoManifest puts beside the manifests what the
// loader documents as ignored, made as hostile as it gets: a dangling
// README, a FIFO notes.txt, an oversize backup. None is looked at.
func TestManifestsIgnoreWhatIsNoManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.yaml":     policy("a.static.strata.dev"),
		"a.yaml.bak": strings.Repeat("x", DefaultMaxBytes+1),
		"sub.yaml/x": "a directory with a manifest's name",
	})
	if err := os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "README")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "notes.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := Manifests(dir, policyOptions(t))
	g, err := Read(dir, opts.Read)
	if err != nil {
		t.Fatal(err)
	}
	set, err := LoadManifests(g, policyOptions(t))
	if err != nil || strings.Join(set.Names(), ",") != "Policy/a.static.strata.dev" {
		t.Fatalf("set %v, %v", set, err)
	}
}

// TestManifestNamesAreObjectNames loads manifests whose names the API
// server would refuse: each is an error naming its file.
func TestManifestNamesAreObjectNames(t *testing.T) {
	t.Parallel()
	s := &Generation{Path: "/m", Dir: true, Files: []Entry{
		{Name: "a.yaml", Data: []byte(policy("Upper.static.strata.dev"))},
		{Name: "b.yaml", Data: []byte(policy("a/b.static.strata.dev"))},
		{Name: "c.yaml", Data: []byte(policy(strings.Repeat("x", 250) + ".static.strata.dev"))},
		{Name: "d.yaml", Data: []byte(policy("fine.static.strata.dev"))},
	}}
	_, err := LoadManifests(s, policyOptions(t))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`manifest /m/a.yaml: metadata.name: Invalid value: "Upper.static.strata.dev": a lowercase RFC 1123 subdomain`,
		`manifest /m/b.yaml: metadata.name: Invalid value: "a/b.static.strata.dev"`,
		"manifest /m/c.yaml: metadata.name: Invalid value: ",
		"must be no more than 253 characters",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "d.yaml") {
		t.Errorf("a valid name reported:\n%v", err)
	}
}
