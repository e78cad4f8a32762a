package zpages_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/zpages"
)

// serve installs the pages of a configuration whose /token is secret,
// set by a file above a default, and of a command line with a classified
// flag and a flag bound to the secret key.
func serve(t *testing.T) *httptest.Server {
	t.Helper()
	res := merge.Merge(
		&merge.Layer{Source: merge.Source{Origin: "default"}, Values: map[string]string{"/port": "8080", "/token": `"d"`}},
		&merge.Layer{Source: merge.Source{Origin: "file", Name: "c.yaml"}, Values: map[string]string{"/port": "9443", "/token": `"s3cret"`}},
	)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("password", "hunter2", "")
	_ = fs.SetAnnotation("password", "classified", []string{"true"})
	fs.String("token", "flagged", "")
	fs.Int("port", 1, "")
	if err := fs.Parse([]string{"--port", "2"}); err != nil {
		t.Fatal(err)
	}
	secret := func(key string) bool {
		return key == "/token" || strings.HasPrefix(key, "/auth/users/") && strings.HasSuffix(key, "/password")
	}
	mux := http.NewServeMux()
	zpages.Install(mux, zpages.Pages{
		Name: "comp",
		Configs: func(*http.Request) (map[string]zpages.Config, error) {
			return map[string]zpages.Config{"comp": {Object: json.RawMessage(`{"apiVersion":"x/v1","kind":"C","port":9443,"token":"s3cret","auth":{"users":[{"name":"a","password":"s3cret"}]}}`), Provenance: res, Secret: secret}}, nil
		},
		Flags:     fs,
		FlagKeys:  map[string]string{"token": "/token", "port": "/port"},
		SecretKey: secret,
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func fetch(t *testing.T, srv *httptest.Server, method, path, accept string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b.String()
}

// TestNothingSecretShown: a secret key and a classified flag show
// CLASSIFIED in every form, and no lower layer's value is shown.
func TestNothingSecretShown(t *testing.T) {
	srv := serve(t)
	for _, tc := range []struct{ path, accept string }{
		{"/configz", ""},
		{"/configz", "text/plain"},
		{"/configz", "application/json;as=Configz;v=v1alpha1;g=zpages.strata.dev"},
		{"/configz", "application/yaml;as=Configz;v=v1alpha1;g=zpages.strata.dev"},
		{"/flagz", ""},
		{"/flagz", "application/json;as=Flagz;v=v1beta1;g=config.k8s.io"},
		{"/flagz", "application/json;as=Flagz;v=v1alpha1;g=zpages.strata.dev"},
	} {
		code, _, body := fetch(t, srv, http.MethodGet, tc.path, tc.accept)
		if code != http.StatusOK || !strings.Contains(body, zpages.Classified) {
			t.Errorf("%s %q: %d, no %s:\n%s", tc.path, tc.accept, code, zpages.Classified, body)
		}
		for _, secret := range []string{"s3cret", "hunter2", "flagged", `"d"`} {
			if strings.Contains(body, secret) {
				t.Errorf("%s %q shows %s:\n%s", tc.path, tc.accept, secret, body)
			}
		}
	}
	_, _, text := fetch(t, srv, http.MethodGet, "/configz", "text/plain")
	if !strings.Contains(text, "/port=9443 (file c.yaml; shadows default)\n") {
		t.Errorf("/configz text:\n%s", text)
	}
}

// TestNegotiation: Accept picks the form, by quality; the default of
// /configz is component-base's JSON, of the others text; what no page
// serves is 406, and a write 405.
func TestNegotiation(t *testing.T) {
	srv := serve(t)
	for _, tc := range []struct {
		path, accept string
		code         int
		contentType  string
	}{
		{"/configz", "", 200, "application/json"},
		{"/configz", "*/*", 200, "application/json"},
		{"/configz", "application/json", 200, "application/json"},
		{"/flagz", "", 200, "text/plain; charset=utf-8"},
		{"/flagz", "text/*", 200, "text/plain; charset=utf-8"},
		{"/flagz", "application/json", 406, "application/json"},
		{"/flagz", "application/json;as=Flagz;v=v1beta1;g=config.k8s.io;q=0.5, text/plain;q=0.9", 200, "text/plain; charset=utf-8"},
		{"/flagz", "application/xml, application/json;as=Flagz;v=v1beta1;g=config.k8s.io", 200, "application/json;g=config.k8s.io;v=v1beta1;as=Flagz"},
		{"/statusz", "application/json;as=Statusz;v=v1beta1;g=config.k8s.io", 200, "application/json;g=config.k8s.io;v=v1beta1;as=Statusz"},
		{"/statusz", "application/json;as=Flagz;v=v1beta1;g=config.k8s.io", 406, "application/json"},
		// q=0 refuses a type; the most specific range wins a tie.
		{"/flagz", "text/plain;q=0", 406, "application/json"},
		{"/configz", "application/json;q=0, text/plain;q=0.1", 200, "text/plain; charset=utf-8"},
		{"/flagz", "*/*, application/json;as=Flagz;v=v1beta1;g=config.k8s.io", 200, "application/json;g=config.k8s.io;v=v1beta1;as=Flagz"},
		{"/configz", "application/*", 200, "application/json"},
		{"/flagz", "application/*", 406, "application/json"},
		// The most specific range decides: a refused */* leaves what is
		// named.
		{"/configz", "application/json, */*;q=0", 200, "application/json"},
		{"/flagz", "text/plain, */*;q=0", 200, "text/plain; charset=utf-8"},
		{"/configz", "*/*, application/json;q=0.1", 200, "text/plain; charset=utf-8"},
	} {
		code, ct, body := fetch(t, srv, http.MethodGet, tc.path, tc.accept)
		if code != tc.code || ct != tc.contentType {
			t.Errorf("%s %q: %d %q, want %d %q\n%s", tc.path, tc.accept, code, ct, tc.code, tc.contentType, body)
		}
		if code == 406 && !strings.Contains(body, `"reason":"NotAcceptable"`) {
			t.Errorf("%s %q: 406 without a Status: %s", tc.path, tc.accept, body)
		}
	}
	resp, err := srv.Client().Get(srv.URL + "/flagz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Vary") != "Accept" {
		t.Errorf("Vary: %q", resp.Header.Get("Vary"))
	}
	if code, _, body := fetch(t, srv, http.MethodHead, "/statusz", ""); code != 200 || body != "" {
		t.Errorf("HEAD: %d %q", code, body)
	}
	if code, _, _ := fetch(t, srv, http.MethodPut, "/flagz", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d", code)
	}
}

// TestHugeAcceptRefused answers a 720 KB Accept header of 80,002 ranges
// with 406, saying how many ranges are read, instead of spending seconds
// comparing them.
func TestHugeAcceptRefused(t *testing.T) {
	srv := serve(t)
	accept := strings.Repeat("text/html;q=0.5,", 40_000) + strings.Repeat("x/y;q=0,", 40_000) + "text/plain,*/*;q=0"
	for _, path := range []string{"/configz", "/flagz", "/statusz"} {
		code, _, body := fetch(t, srv, http.MethodGet, path, accept)
		if code != http.StatusNotAcceptable || !strings.Contains(body, "in at most 32 ranges") {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
}

// TestConfigzListElements: a list merged per element shows how it merges
// and the source of each element, in text and in the Configz object.
func TestConfigzListElements(t *testing.T) {
	lists := merge.Lists{"/tags": merge.ListSet}
	lower, err := lists.Flatten([]byte(`{"tags":["a","b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	upper, err := lists.Flatten([]byte(`{"tags":["c","a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	res := merge.Merge(&merge.Layer{Source: merge.Source{Origin: "file", Name: "c.yaml"}, Values: lower, Lists: lists},
		&merge.Layer{Source: merge.Source{Origin: "drop-in", Name: "10.yaml"}, Values: upper, Lists: lists})
	mux := http.NewServeMux()
	zpages.Install(mux, zpages.Pages{Name: "comp", Configs: func(*http.Request) (map[string]zpages.Config, error) {
		return map[string]zpages.Config{"comp": {Object: json.RawMessage(`{"tags":["a","b","c"]}`), Provenance: res}}, nil
	}})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, _, text := fetch(t, srv, http.MethodGet, "/configz", "text/plain")
	if want := `/tags=["a","b","c"] (set list: a from drop-in 10.yaml; shadows file c.yaml; b from file c.yaml; c from drop-in 10.yaml)`; !strings.Contains(text, want) {
		t.Errorf("/configz text:\n%s\nwant a line\n%s", text, want)
	}
	_, _, body := fetch(t, srv, http.MethodGet, "/configz", "application/json;as=Configz;v=v1alpha1;g=zpages.strata.dev")
	var obj zpages.Configz
	if err := json.Unmarshal([]byte(body), &obj); err != nil {
		t.Fatal(err)
	}
	if src := obj.Configurations["comp"].Sources["/tags"]; src.List != "set" || src.Elements["c"].Source != "drop-in 10.yaml" || src.Elements["b"].Source != "file c.yaml" {
		t.Errorf("sources of /tags: %+v", src)
	}
}
