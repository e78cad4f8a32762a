package layers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/zpages"
)

// TestExplainInAnotherVersionKeepsRemovals: a drop-in removes the file's
// featureGates with null. Explained in the merge version or with
// --output-version v1alpha1 (where featureGates has the same name),
// /featureGates is there, removed (Provenances: "the provenance of every
// effective key of r, and of every key a layer removed with a null").
func TestExplainInAnotherVersionKeepsRemovals(t *testing.T) {
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"c.yaml": head + "featureGates: {AlphaThing: true}\n", "d/10.yaml": "featureGates: null\n"})
	c := component(t)
	loaded, _, err := c.Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "--config-dir", filepath.Join(dir, "d")})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v1beta1", "v1alpha1"} {
		e, err := c.Explain(loaded, schema.GroupVersion{Group: c.Kind.GroupKind().Group, Version: v})
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := e.Provenance["/featureGates"]; !ok || !p.Removed {
			b, _ := json.Marshal(e.Provenance)
			t.Errorf("--output-version %s: the drop-in's removal of /featureGates is not in the provenance: %s", v, b)
		}
	}
}

// vault is a kind with secret fields: a map marked secret.
type vaultConfig struct {
	metav1.TypeMeta `json:",inline"`
	Token           string            `json:"token,omitempty" strata:"secret,not-path"`
	Headers         map[string]string `json:"headers,omitempty" strata:"secret,not-path"`
}

func (in *vaultConfig) DeepCopyObject() runtime.Object {
	b, _ := json.Marshal(in)
	out := &vaultConfig{}
	_ = json.Unmarshal(b, out)
	return out
}

const vaultHead = "apiVersion: vault.example.dev/v1\nkind: VaultConfig\n"

func vaultComponent(t *testing.T, flags func(fss *cliflag.NamedFlagSets, b *layers.Flags) error) *layers.Component[*vaultConfig] {
	t.Helper()
	return &layers.Component[*vaultConfig]{Name: "vault", Kind: oneVersionKind(t, "vault.example.dev", "VaultConfig", &vaultConfig{}), Flags: flags}
}

// TestConfigzCreditsSecretMapToItsLayers: a map marked secret, set by a
// file or by a flag, is shown on /configz as CLASSIFIED whole, and
// credited to the layer that set its members (provenance holds
// /headers/X-Auth, not /headers), not to "default".
func TestConfigzCreditsSecretMapToItsLayers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	watchtest.WriteFiles(t, dir, map[string]string{"c.yaml": vaultHead + "headers: {X-Auth: file-hunter2}\n"})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"from the file", []string{"--config", file}, "file " + file},
		{"from a flag", []string{"--config", file, "--headers", "X-Auth=flag-hunter2"}, "flag --headers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := vaultComponent(t, func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
				headers := map[string]string{}
				fss.FlagSet("vault").Var(cliflag.NewMapStringString(&headers), "headers", "")
				b.Bind("headers", "/headers", &headers)
				fss.FlagSet("vault").String("token", "", "")
				b.Bind("token", "/token", nil)
				return nil
			})
			loaded, cl, err := c.Load(context.Background(), tc.args)
			if err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			zpages.Install(mux, c.ZPages(cl, func() *layers.Loaded[*vaultConfig] { return loaded }))
			srv := httptest.NewServer(mux)
			defer srv.Close()
			_, _, body := watchtest.Get(t, srv.URL+"/configz", "text/plain")
			if strings.Contains(body, "hunter2") {
				t.Fatalf("/configz shows a secret:\n%s", body)
			}
			if !strings.Contains(body, `/headers="CLASSIFIED" (`+tc.want) {
				t.Errorf("/configz credits /headers, which %s set, to another source:\n%s", tc.want, body)
			}
			_, _, js := watchtest.Get(t, srv.URL+"/configz", "application/json;as=Configz;v=v1alpha1;g=zpages.strata.dev")
			var z zpages.Configz
			if err := json.Unmarshal([]byte(js), &z); err != nil {
				t.Fatal(err)
			}
			if src := z.Configurations["vault"].Sources["/headers"]; !strings.HasPrefix(src.Source, tc.want) {
				t.Errorf("/configz (strata's Configz): /headers from %q, want %q", src.Source, tc.want)
			}
		})
	}
}

// TestUsageHidesSecretDefaults: --help shows CLASSIFIED for the default
// of a flag /flagz classifies: one bound to a secret field, one annotated
// "classified".
func TestUsageHidesSecretDefaults(t *testing.T) {
	c := vaultComponent(t, func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
		fs := fss.FlagSet("vault")
		fs.String("token", "legacy-hunter2", "the token")
		b.Bind("token", "/token", nil, layers.LegacyDefault())
		headers := map[string]string{}
		fs.Var(cliflag.NewMapStringString(&headers), "headers", "")
		b.Bind("headers", "/headers", &headers)
		fs.String("bootstrap-token", "env-hunter2", "a token read once")
		if err := fs.SetAnnotation("bootstrap-token", "classified", []string{"true"}); err != nil {
			return err
		}
		b.NotConfiguration("used once, at start", "bootstrap-token")
		return nil
	})
	_, cl, err := c.Load(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	zpages.Install(mux, c.ZPages(cl, func() *layers.Loaded[*vaultConfig] { return nil }))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	if _, _, body := watchtest.Get(t, srv.URL+"/flagz", "text/plain"); strings.Contains(body, "hunter2") {
		t.Fatalf("/flagz:\n%s", body)
	}
	if u := cl.Usage("vault"); strings.Contains(u, "hunter2") {
		t.Errorf("--help shows values /flagz classifies:\n%s", u)
	}
}

// mountsConfig has a path field inside the elements of a keyed list;
// strata refuses secret and os= there, but not path.
type mountsConfig struct {
	metav1.TypeMeta `json:",inline"`
	Mounts          []mountElement `json:"mounts,omitempty" strata:"list-map-key=name"`
}

type mountElement struct {
	Name string `json:"name" strata:"not-path"`
	Path string `json:"path,omitempty" strata:"path"`
}

func (in *mountsConfig) DeepCopyObject() runtime.Object {
	b, _ := json.Marshal(in)
	out := &mountsConfig{}
	_ = json.Unmarshal(b, out)
	return out
}

// TestPathInAListElementResolvesAgainstItsFile: issue 2, "Relative
// paths resolve against the directory of the file whose layer set them
// (drop-ins included)". A path inside a keyed list's element, from the
// file and from a drop-in, resolves against the directory of the file
// that set the element, not against the working directory.
func TestPathInAListElementResolvesAgainstItsFile(t *testing.T) {
	c := &layers.Component[*mountsConfig]{Name: "mounts", Kind: oneVersionKind(t, "mounts.example.dev", "Mounts", &mountsConfig{}),
		Flags: func(*cliflag.NamedFlagSets, *layers.Flags) error { return nil }}
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{
		"c.yaml":    "apiVersion: mounts.example.dev/v1\nkind: Mounts\nmounts: [{name: a, path: rel/a}]\n",
		"d/10.yaml": "mounts: [{name: b, path: rel/b}]\n",
	})
	loaded, _, err := c.Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "--config-dir", filepath.Join(dir, "d")})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": filepath.Join(dir, "rel/a"), "b": filepath.Join(dir, "d", "rel/b")}
	for _, m := range loaded.Object.Mounts {
		if m.Path != want[m.Name] {
			t.Errorf("mounts[%s].path = %q, want %q (against the directory of the file that set it)", m.Name, m.Path, want[m.Name])
		}
	}
}

// TestReplaceFlagListsWhatItRemoved: a map flag bound with Replace
// removes the file's entries it does not give. Replace's doc: "The keys it
// removes are recorded in provenance as replaced by the flag." The file's
// BetaThing must be named somewhere in --explain's provenance.
func TestReplaceFlagListsWhatItRemoved(t *testing.T) {
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"c.yaml": head + "featureGates: {AlphaThing: true, BetaThing: true}\n"})
	c := component(t)
	c.Flags = func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
		gates := map[string]bool{}
		fss.FlagSet("x").Var(cliflag.NewMapStringBool(&gates), "feature-gates", "")
		b.Bind("feature-gates", "/featureGates", &gates, layers.Replace())
		return nil
	}
	loaded, _, err := c.Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "--feature-gates", "AlphaThing=false"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := loaded.Object.FeatureGates["BetaThing"]; ok {
		t.Fatalf("BetaThing not replaced: %v", loaded.Object.FeatureGates)
	}
	e, err := c.Explain(loaded, c.Kind.MergeVersion())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(e.Provenance)
	if !strings.Contains(string(out), "/featureGates/BetaThing from file") {
		t.Errorf("the file's /featureGates/BetaThing, removed by --feature-gates (Replace), is listed nowhere in the provenance:\n%s", out)
	}
}
