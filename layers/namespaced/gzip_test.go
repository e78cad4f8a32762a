package namespaced

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGzipConfigMaps reads ConfigMaps as prow's updateconfig writes them
// with gzip: the compressed bytes in binaryData: decompressed, the source
// marked, the limit counted decompressed so a bomb is refused naming the
// key; binaryData that is not gzip'd, or KeepGzip, is refused as before.
func TestGzipConfigMaps(t *testing.T) {
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on"})
	cluster.BinaryData = map[string][]byte{"timeout": gz(t, "100")}
	tenant := tenantCM("team", map[string]string{"verbose": "true"})
	tenant.BinaryData = map[string][]byte{"retries": gz(t, "4")}

	r := newTestResolver(t, nil)
	s, err := r.Resolve("team", []runtime.Object{cluster, tenant})
	if err != nil {
		t.Fatal(err)
	}
	if *s.Object.Timeout != 100 || *s.Object.Retries != 4 || !*s.Object.Verbose || len(s.Ignored()) != 0 {
		t.Fatalf("timeout %d retries %v verbose %v, ignored %v", *s.Object.Timeout, s.Object.Retries, s.Object.Verbose, s.Ignored())
	}
	for key, want := range map[string]string{"/timeout": "cluster ops/config (gzip)", "/retries": "namespace team/overrides (gzip)"} {
		if src, _ := s.Provenance().SourceOf(key); src.String() != want {
			t.Errorf("%s from %s, want %s", key, src, want)
		}
	}

	for _, tc := range []struct {
		name   string
		binary map[string][]byte
		keep   bool
		want   string
	}{
		{"a bomb", map[string][]byte{"retries": gz(t, strings.Repeat("9", 1<<20))}, false,
			`namespace team/overrides: ignored: key "retries" is gzip-compressed, and decompressed it puts the data over the limit of 262144 bytes`},
		{"not gzip", map[string][]byte{"retries": []byte("4")}, false,
			`namespace team/overrides: ignored: binaryData key "retries" is not configuration: only gzip'd text is read from binaryData`},
		{"not text", map[string][]byte{"retries": gz(t, "\xff\xfe")}, false,
			`namespace team/overrides: ignored: key "retries" is gzip-compressed and does not hold text (UTF-8)`},
		{"truncated", map[string][]byte{"retries": gz(t, "4")[:12]}, false,
			`namespace team/overrides: ignored: key "retries" is gzip-compressed but does not decompress`},
		{"KeepGzip", map[string][]byte{"retries": gz(t, "4")}, true,
			`namespace team/overrides: ignored: binaryData is not configuration (keys retries)`},
	} {
		r := newTestResolver(t, func(o *Options[*tenantConfig]) { o.KeepGzip = tc.keep })
		bad := tenantCM("team", nil)
		bad.BinaryData = tc.binary
		s, err := r.Resolve("team", []runtime.Object{configMap("ops", "config", nil, map[string]string{"tenancy": "on"}), bad})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Ignored()) != 1 || !strings.HasPrefix(s.Ignored()[0].Error(), tc.want) || s.Object.Retries != nil {
			t.Errorf("%s: ignored %v, want one starting %q", tc.name, s.Ignored(), tc.want)
		}
	}
}
