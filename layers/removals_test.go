package layers_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stratacfg/strata/internal/watchtest"
)

// TestRemovalSecondDocumentRefused: a drop-in whose second document
// the decoder refuses (it does not parse, or it is empty: null) is refused
// without a removal; with a removal ($patch: delete) in the first
// document it must be refused too, not have its second document dropped
// in silence (yamljson.Single counts only what parsed / leaves null out,
// and the conversion then takes the first document alone).
func TestRemovalSecondDocumentRefused(t *testing.T) {
	head := "apiVersion: lists.test.strata.dev/v1\nkind: Upstreams\n"
	for name, second := range map[string]string{
		"a second document that does not parse": "retries: [1\n",
		"a second document of a bad mapping":    "retries: 1\n bogus: 2\n",
		"a second document null":                "null\n",
	} {
		for _, first := range []string{"upstreams:\n- {name: a, $patch: delete}\n", "upstreams:\n- {name: a, url: http://c}\n"} {
			dir := t.TempDir()
			watchtest.WriteFiles(t, dir, map[string]string{
				"c.yaml":         head + "upstreams:\n- {name: a, url: http://a}\n- {name: b, url: http://b}\n",
				"conf.d/10.yaml": head + first + "---\n" + second,
			})
			_, _, err := upstreamsComponent(t).Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "--config-dir", filepath.Join(dir, "conf.d")})
			if err == nil {
				t.Errorf("%s, first document %q: loaded; the second document was dropped", name, first)
			} else {
				t.Logf("%s, first document %q: %v", name, first, err)
			}
		}
	}
}
