package bench

import (
	"flag"
	"os"
	"testing"

	"github.com/stratacfg/strata/internal/kubetest"
)

// server is the real etcd and kube-apiserver the benchmarks that resolve
// namespaces run against. It is started only when benchmarks run: the
// tests need no cluster.
var server *kubetest.Server

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		os.Exit(kubetest.Main(m, &server))
	}
	os.Exit(m.Run())
}
