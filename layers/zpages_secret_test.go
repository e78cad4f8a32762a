package layers_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/layers"
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
	c := &layers.Component[*tokenConfig]{Name: "tokens", Kind: oneVersionKind(t, "tokens.example.dev", "TokenConfig", &tokenConfig{})}
	cl, err := c.NewCommandLine()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := cl.Parse([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	head := "apiVersion: tokens.example.dev/v1\nkind: TokenConfig\n"
	for _, body := range []string{
		"tokens:\n  s3cr3t-b34r3r-t0k3n: {user: alice, usr: alice}\n",
		"tokens:\n  s3cr3t-b34r3r-t0k3n: {user: alice}\n  s3cr3t-b34r3r-t0k3n: {user: bob}\n",
	} {
		_, err := c.LoadFiles(context.Background(), cl, fileSnapshot(path, head+body))
		if err == nil {
			t.Fatalf("%q loaded", body)
		}
		if got := c.ZPagesError(err); strings.Contains(got, "s3cr3t-b34r3r-t0k3n") {
			t.Errorf("/statusz shows the secret map's key: %q", got)
		}
	}
}
