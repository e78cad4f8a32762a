package layers_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/scheme"
)

// tokenConfig maps bearer tokens to the user each authenticates (as
// kube-apiserver's static token file does): the map is secret, keys
// included; /configz shows it CLASSIFIED whole.
type tokenConfig struct {
	metav1.TypeMeta `json:",inline"`
	Port            int32                `json:"port,omitempty"`
	Tokens          map[string]tokenUser `json:"tokens,omitempty" strata:"secret"`
}

type tokenUser struct {
	User string `json:"user"`
}

func (in *tokenConfig) DeepCopyObject() runtime.Object {
	out := *in
	return &out
}

// TestZPagesErrorHidesASecretMapKey: a strict decoding error names a
// field by its path, and a path through a map names the map's key. Under
// a secret map the key is the secret (/configz classifies the map
// whole), so /statusz must not show it.
func TestZPagesErrorHidesASecretMapKey(t *testing.T) {
	c, cl, path := tokenCommandLine(t, oneVersionKind(t, "tokens.example.dev", "TokenConfig", &tokenConfig{}))
	head := "apiVersion: tokens.example.dev/v1\nkind: TokenConfig\n"
	for _, body := range []string{
		"tokens:\n  s3cr3t-b34r3r-t0k3n: {user: alice, usr: alice}\n",
		"tokens:\n  s3cr3t-b34r3r-t0k3n: {user: alice}\n  s3cr3t-b34r3r-t0k3n: {user: bob}\n",
	} {
		_, err := c.LoadFiles(context.Background(), cl, fileSnapshot(path, head+body))
		if err == nil {
			t.Fatalf("%q loaded", body)
		}
		if got := c.StatuszError(err); strings.Contains(got, "s3cr3t-b34r3r-t0k3n") {
			t.Errorf("/statusz shows the secret map's key: %q", got)
		}
	}
}

// TestExplainHidesASecretMapKey: under a secret map the keys are the
// secret (tokenConfig's bearer tokens), so --explain tells the provenance
// of what is under the map, and what a value replaced there, under the
// map's own key.
func TestExplainHidesASecretMapKey(t *testing.T) {
	c, cl, path := tokenCommandLine(t, oneVersionKind(t, "tokens.example.dev", "TokenConfig", &tokenConfig{}))
	const token = "s3cr3t-b34r3r-t0k3n"
	loaded, err := c.LoadFiles(context.Background(), cl, fileSnapshot(path, "apiVersion: tokens.example.dev/v1\nkind: TokenConfig\nport: 8443\ntokens:\n  "+token+": {user: alice}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := c.Explain(loaded, c.Kind.MergeVersion())
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(ex)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ex.Config), "CLASSIFIED") {
		t.Fatalf("the configuration does not classify the map: %s", ex.Config)
	}
	if strings.Contains(string(out), token) {
		t.Errorf("--explain names the secret map's key: %s", out)
	}
	// A drop-in's null replaces the map: what it replaced is named by the
	// secret field, not by the keys under it.
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf.d")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte("apiVersion: tokens.example.dev/v1\nkind: TokenConfig\ntokens:\n  "+token+": {user: alice}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "10.yaml"), []byte("tokens: null\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, _, err = c.Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "--config-dir", conf})
	if err != nil {
		t.Fatal(err)
	}
	if ex, err = c.Explain(loaded, c.Kind.MergeVersion()); err != nil {
		t.Fatal(err)
	}
	if out, err = json.Marshal(ex); err != nil {
		t.Fatal(err)
	}
	if p := ex.Provenance["/tokens"]; !p.Removed || len(p.Replaced) != 1 || !strings.HasPrefix(p.Replaced[0], "/tokens from ") || strings.Contains(string(out), token) {
		t.Errorf("--explain of a null over the secret map: %s", out)
	}
}

// TestZPagesErrorHidesASecretMapKeyAValidatorNames: /statusz names a
// validator's error about an entry of a secret map by the map's field,
// not by the entry's key, which is the secret (a bearer token), as it
// does a strict decoding error's (TestZPagesErrorHidesASecretMapKey).
func TestZPagesErrorHidesASecretMapKeyAValidatorNames(t *testing.T) {
	const group, name = "tokens.example.dev", "TokenConfig"
	gv := schema.GroupVersion{Group: group, Version: "v1"}
	kind, err := scheme.New(scheme.Config{
		Group: group, Kind: name, Hub: "v1",
		Versions: []scheme.Version{{Version: "v1", AddToScheme: func(s *runtime.Scheme) error {
			s.AddKnownTypeWithName(gv.WithKind(name), &tokenConfig{})
			return nil
		}}},
		Validate: scheme.Validator(func(c *tokenConfig) field.ErrorList {
			var errs field.ErrorList
			for tok, u := range c.Tokens {
				if u.User == "" {
					errs = append(errs, field.Required(field.NewPath("tokens").Key(tok).Child("user"), "every token names its user"))
				}
			}
			return errs
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	c, cl, path := tokenCommandLine(t, kind)
	const token = "s3cr3t-b34r3r-t0k3n"
	_, err = c.LoadFiles(context.Background(), cl, fileSnapshot(path, "apiVersion: tokens.example.dev/v1\nkind: TokenConfig\ntokens:\n  "+token+": {user: \"\"}\n"))
	if err == nil {
		t.Fatal("a token without a user loaded")
	}
	if got := c.StatuszError(err); strings.Contains(got, token) {
		t.Errorf("/statusz shows the secret map's key: %q", got)
	}
}

// tokenCommandLine returns a tokenConfig component of kind and its command
// line, parsed with --config naming a file of a new directory.
func tokenCommandLine(t *testing.T, kind *scheme.Kind) (*layers.Component[*tokenConfig], *layers.CommandLine, string) {
	t.Helper()
	c := &layers.Component[*tokenConfig]{Name: "tokens", Kind: kind}
	cl, err := c.NewCommandLine()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := cl.Parse([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	return c, cl, path
}
