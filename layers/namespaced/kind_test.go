package namespaced_test

import (
	"context"
	"testing"

	"github.com/stratacfg/strata/internal/testkind"
	"github.com/stratacfg/strata/layers/namespaced"
)

// jobDefaults is the configuration kind of the external tests.
type jobDefaults = testkind.Defaults

// tenantLabels mark a namespace layer in the external tests.
var tenantLabels = map[string]string{"strata.test/layer": "namespace"}

// timeoutOf is namespace ns's default timeout.
func timeoutOf(t *testing.T, r resolving[*jobDefaults], ns string) int64 {
	t.Helper()
	s, err := r.ForNamespace(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return *s.Object.DefaultTimeoutSeconds
}

// resolving is what every resolver, Direct included, offers.
type resolving[T any] interface {
	Start(context.Context) error
	Stop()
	ForNamespace(context.Context, string) (*namespaced.Snapshot[T], error)
}
