package scheme_test

import (
	"strings"
	"testing"

	configscheme "github.com/stratacfg/strata/internal/testkind/component/scheme"
	"github.com/stratacfg/strata/scheme"
)

// lifecycleKind is the test kind with a field lifecycle: v1beta1 renamed
// v1alpha1's profiling and removed insecurePort; v1alpha1's profiling is
// deprecated.
func lifecycleKind(t *testing.T, edit func(cfg *scheme.Config)) (*scheme.Kind, error) {
	t.Helper()
	cfg := configscheme.Config()
	cfg.Versions[0].Fields = []scheme.Field{
		{Key: "/profiling", Lifecycle: scheme.Removed, RenamedTo: "/enableProfiling", Release: "v0.3"},
		{Key: "/insecurePort", Lifecycle: scheme.Removed, Release: "v0.3", Message: "serve TLS on port"},
		{Key: "/clientConnection/insecure", Lifecycle: scheme.Removed},
		{Key: "/metrics.port", Lifecycle: scheme.Removed, Message: "metrics are served on port"},
	}
	cfg.Versions[1].Fields = []scheme.Field{
		{Key: "/profiling", Lifecycle: scheme.Deprecated, Release: "v0.3", Message: "v1beta1 calls it enableProfiling"},
	}
	if edit != nil {
		edit(&cfg)
	}
	return scheme.New(cfg)
}

// TestFieldLifecycle: a removed or renamed field fails with its
// tombstone instead of "unknown field" (a warning in Warn mode); a
// deprecated field decodes with a warning.
func TestFieldLifecycle(t *testing.T) {
	t.Parallel()
	k, err := lifecycleKind(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, doc, err string
	}{
		{"renamed", beta + "profiling: false\n", `c.yaml: field "profiling" was renamed to "enableProfiling" in v0.3`},
		{"removed", beta + "insecurePort: 8080\n", `c.yaml: field "insecurePort" was removed in v0.3: serve TLS on port`},
		{"removed, nested", beta + "clientConnection:\n  insecure: true\n", `c.yaml: field "clientConnection.insecure" was removed`},
		{"removed, a name with a dot", beta + "metrics.port: 1\n", `c.yaml: field "metrics.port" was removed: metrics are served on port`},
		{"unknown still", beta + "insecurePorts: 8080\n", `unknown field "insecurePorts"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := k.Decode([]byte(tc.doc), scheme.DecodeOptions{Source: "c.yaml"})
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want an error containing %q", err, tc.err)
			}
			doc, err := k.Decode([]byte(tc.doc), scheme.DecodeOptions{Source: "c.yaml", Mode: scheme.Warn})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range doc.Warnings {
				got = append(got, w.String())
			}
			if !strings.Contains(strings.Join(got, "\n"), tc.err) {
				t.Errorf("in warn mode, warnings %q, want one containing %q", got, tc.err)
			}
		})
	}
	doc, err := k.Decode([]byte("apiVersion: component.example.strata.dev/v1alpha1\nkind: ComponentConfiguration\nprofiling: false\n"), scheme.DecodeOptions{Source: "old.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	want := `old.yaml: field "profiling" is deprecated since v0.3: v1beta1 calls it enableProfiling`
	var found bool
	for _, w := range doc.Warnings {
		found = found || w.String() == want
	}
	if !found {
		t.Errorf("warnings %v, want %q", doc.Warnings, want)
	}
	doc, err = k.Decode([]byte("apiVersion: component.example.strata.dev/v1alpha1\nkind: ComponentConfiguration\nport: 1\n"), scheme.DecodeOptions{Source: "old.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range doc.Warnings {
		if strings.Contains(w.String(), "profiling") {
			t.Errorf("a file that does not set profiling warned %q", w)
		}
	}
}

// TestRemovedNamesAreNeverReused: New refuses a version whose type has a
// field its lifecycle says was removed, and a lifecycle that names no
// field.
func TestRemovedNamesAreNeverReused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		field scheme.Field
		err   string
	}{
		{"a removed name reused", scheme.Field{Key: "/port", Lifecycle: scheme.Removed}, "field /port was removed, and a removed name is never used again"},
		{"renamed to nothing", scheme.Field{Key: "/old", Lifecycle: scheme.Removed, RenamedTo: "/new"}, "renamed to /new, which is no field"},
		{"deprecated, not a field", scheme.Field{Key: "/nothing", Lifecycle: scheme.Deprecated}, "deprecated field /nothing is no field"},
		{"neither deprecated nor removed", scheme.Field{Key: "/port", Lifecycle: scheme.Experimental}, "not experimental"},
		{"not a pointer", scheme.Field{Key: "port", Lifecycle: scheme.Deprecated}, "must be a JSON pointer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lifecycleKind(t, func(cfg *scheme.Config) {
				cfg.Versions[0].Fields = append(cfg.Versions[0].Fields, tc.field)
			})
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want an error containing %q", err, tc.err)
			}
		})
	}
}
