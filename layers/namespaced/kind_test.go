package namespaced_test

import (
	"context"
	"testing"

	"github.com/stratacfg/strata/examples/controller/apis/defaults/v1alpha1"
	"github.com/stratacfg/strata/layers/namespaced"
)

// jobDefaults is the configuration kind of the external tests.
type jobDefaults = v1alpha1.JobDefaults

// tenantLabels mark a namespace layer in the external tests.
var tenantLabels = map[string]string{"strata.test/layer": "namespace"}

// timeoutOf is namespace ns's default timeout.
func timeoutOf(t *testing.T, r *namespaced.Resolver[*jobDefaults], ns string) int64 {
	t.Helper()
	s, err := r.ForNamespace(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return *s.Object.DefaultTimeoutSeconds
}
