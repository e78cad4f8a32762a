package namespaced

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stratacfg/strata/internal/watchtest"
)

// TestMain fails the package when goroutines its tests started are still
// running once every test stopped what it started: a resolver that
// leaks a watch, an informer or a subscriber's goroutine after Stop.
func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		os.Exit(code) // fuzzing leaves the engine's signal handler running
	}
	watchtest.Until(10*time.Second, func() bool { return runtime.NumGoroutine() <= before })
	if n := runtime.NumGoroutine(); n > before && code == 0 {
		buf := make([]byte, 1<<20)
		fmt.Fprintf(os.Stderr, "goroutine leak: %d running after the tests, %d before\n%s", n, before, buf[:runtime.Stack(buf, true)])
		code = 1
	}
	os.Exit(code)
}
