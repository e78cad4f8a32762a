package layers_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratacfg/strata/validation"
)

// TestReloadKeepsAnUnsetRestartOnlyKeyUnset marks tlsCertFile restart-only
// and starts with it unset. A reload that sets it keeps it unset and asks
// for a restart; so must every later reload of a file that still sets it,
// until the process restarts: the running value is still none.
func TestReloadKeepsAnUnsetRestartOnlyKeyUnset(t *testing.T) {
	c := restartOnlyCert(t)
	cl, err := c.NewCommandLine()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := cl.Parse([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	running, err := c.LoadFiles(ctx, cl, fileSnapshot(path, head+"enableProfiling: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Reload(ctx, cl, fileSnapshot(path, head+"enableProfiling: true\ntlsCertFile: b.crt\n"), running)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(first.RestartRequired, ","); got != "/tlsCertFile" || first.Object.TLSCertFile != "" {
		t.Fatalf("first reload: RestartRequired %q, tlsCertFile %q; want /tlsCertFile, none", got, first.Object.TLSCertFile)
	}
	// Another edit, the new tlsCertFile still in the file.
	second, err := c.Reload(ctx, cl, fileSnapshot(path, head+"enableProfiling: false\ntlsCertFile: b.crt\n"), first)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(second.RestartRequired, ","); got != "/tlsCertFile" || second.Object.TLSCertFile != "" {
		t.Errorf("second reload: RestartRequired %q, tlsCertFile %q; want /tlsCertFile and the running value, none: a restart-only key was applied live", got, second.Object.TLSCertFile)
	}
}

// TestZPagesErrorShowsADecodeErrorThatQuotesNoValue: issue 29 asks that
// "a reload error that quotes no secret value is shown even when the kind
// has secret fields". The commonest refused reloads, a misspelt field and
// a duplicate one, quote no value at all; /statusz must show them, not
// "why is in the log".
func TestZPagesErrorShowsADecodeErrorThatQuotesNoValue(t *testing.T) {
	c := agentComponent(t, "linux", map[string]validation.Marker{"/nodeName": validation.Secret})
	cl, err := c.NewCommandLine()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := cl.Parse([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	for body, want := range map[string]string{
		"port: 1\nprot: 2\n": `unknown field "prot"`,
		"port: 1\nport: 2\n": `duplicate field "port"`,
	} {
		_, err := c.LoadFiles(context.Background(), cl, fileSnapshot(path, "apiVersion: agent.example.dev/v1\nkind: AgentConfig\n"+body))
		if err == nil {
			t.Fatalf("%q loaded", body)
		}
		if got := c.StatuszError(err); !strings.Contains(got, want) {
			t.Errorf("reload refused with %q; /statusz shows %q", err, got)
		}
	}
}
