package namespaced_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stratacfg/strata/layers/namespaced/namespacedtest"
	"github.com/stratacfg/strata/zpages"
)

// TestZPages serves a resolver's z-pages: /configz shows the cluster's
// configuration, or a namespace's the resolver holds, each key with its
// ConfigMap; a namespace it does not hold is a 404, never a read; a name
// that is no namespace's a 400; /statusz names the cluster layers.
func TestZPages(t *testing.T) {
	o := fakeOptions(t)
	r, err := namespacedtest.New(o,
		namespacedtest.ClusterConfigMap(o, map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "600"}),
		namespacedtest.NamespaceConfigMap(o, "team-a", "overrides", map[string]string{"default-timeout-seconds": "60"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	mux := http.NewServeMux()
	zpages.Install(mux, r.ZPages("strata-test", nil))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Accept", "text/plain")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/configz"); code != 200 || !strings.Contains(body, "/default-timeout-seconds=600 (cluster ops/defaults)") {
		t.Errorf("/configz: %d\n%s", code, body)
	}
	if code, _ := get("/configz?namespace=team-a"); code != http.StatusNotFound {
		t.Errorf("a namespace not held: %d, want 404", code)
	}
	if _, err := r.ForNamespace(context.Background(), "team-a"); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/configz?namespace=team-a"); code != 200 ||
		!strings.Contains(body, "/default-timeout-seconds=60 (namespace team-a/overrides; shadows cluster ops/defaults)") {
		t.Errorf("/configz?namespace=team-a: %d\n%s", code, body)
	}
	if code, _ := get("/configz?namespace=Not_A_Namespace"); code != http.StatusBadRequest {
		t.Errorf("no namespace's name: %d, want 400", code)
	}
	if code, body := get("/statusz"); code != 200 || !strings.Contains(body, "ops/defaults") || !strings.Contains(body, "sha256:") {
		t.Errorf("/statusz: %d\n%s", code, body)
	}
}
