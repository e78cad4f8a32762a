package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stratacfg/strata/internal/httpserve/httpservetest"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/zpages"
)

// zget gets a z-page of the manager with the Accept header accept.
func zget(t *testing.T, cl *cluster, path, accept string) (int, string) {
	t.Helper()
	code, _, body := watchtest.Get(t, cl.zpages+path, accept)
	return code, body
}

// TestZPages reads the manager's z-pages on its metrics server: a
// namespace's configuration with the source of every key, the cluster's
// without one, the flags as set and the resolver's status. The server
// answers behind idle and half-sent connections.
func TestZPages(t *testing.T) {
	cl := startCluster(t)
	// A client holding idle and half-sent connections does not keep a
	// probe from /metrics.
	httpservetest.Siege(t, strings.TrimPrefix(cl.zpages, "http://"), nil, "/metrics", http.StatusOK)
	ns := cl.namespace(t, "team-z")
	cl.overrides(t, ns, map[string]string{"default-timeout-seconds": "240"})

	// read returns the configuration /configz shows for query's
	// namespace, and its sources.
	read := func(query, ns string) (map[string]any, map[string]zpages.KeySource) {
		t.Helper()
		code, body := zget(t, cl, "/configz"+query, "application/json;as=Configz;v=v1alpha1;g=zpages.strata.dev")
		var c zpages.Configz
		if err := json.Unmarshal([]byte(body), &c); code != 200 || err != nil {
			t.Fatalf("/configz%s: %d %v\n%s", query, code, err, body)
		}
		var config map[string]any
		if err := json.Unmarshal(c.Configurations[ns].Config, &config); err != nil {
			t.Fatalf("/configz%s: %v\n%s", query, err, body)
		}
		return config, c.Configurations[ns].Sources
	}
	// The pages show the namespaces the resolver holds, those admissions
	// and reconciles read: a namespace that created no Job is not one.
	if code, body := zget(t, cl, "/configz?namespace="+ns, ""); code != http.StatusNotFound {
		t.Errorf("a namespace the resolver does not hold: %d %s", code, body)
	}
	cl.create(t, jobObject(ns, "z"))
	eventually(t, "the namespace's override", func() string {
		if code, body := zget(t, cl, "/configz?namespace="+ns, ""); code != 200 {
			return fmt.Sprintf("%d %s", code, body)
		}
		config, sources := read("?namespace="+ns, ns)
		if config["default-timeout-seconds"] != 240.0 {
			return fmt.Sprintf("configuration %v", config)
		}
		src := sources["/default-timeout-seconds"]
		if !strings.Contains(src.Source, ns+"/"+OverridesName) || len(src.Shadowed) != 1 || !strings.Contains(src.Shadowed[0], SystemNamespace+"/"+ClusterConfigMap) {
			return fmt.Sprintf("source %+v", src)
		}
		if s := sources["/default-service-account"].Source; !strings.Contains(s, SystemNamespace+"/"+ClusterConfigMap) {
			return "default-service-account from " + s
		}
		return ""
	})
	if config, _ := read("", SystemNamespace); config["default-timeout-seconds"] != 600.0 {
		t.Errorf("the cluster's configuration: %v", config)
	}
	if code, body := zget(t, cl, "/configz?namespace=Not_A_Namespace", ""); code != http.StatusBadRequest {
		t.Errorf("a namespace that cannot be one: %d %s", code, body)
	}

	code, text := zget(t, cl, "/flagz", "")
	for _, want := range []string{"\njobdefaults flagz\n", "\nwebhook-host=127.0.0.1 (command line)\n", "\nleader-elect=false (default)\n"} {
		if code != 200 || !strings.Contains(text, want) {
			t.Errorf("/flagz lacks %q: %d\n%s", want, code, text)
		}
	}
	code, text = zget(t, cl, "/statusz", "")
	for _, want := range []string{"\njobdefaults statusz\n", "\nPaths: /configz /flagz /statusz\n", "Configuration sources: ", SystemNamespace + "/" + ClusterConfigMap} {
		if code != 200 || !strings.Contains(text, want) {
			t.Errorf("/statusz lacks %q: %d\n%s", want, code, text)
		}
	}
}
