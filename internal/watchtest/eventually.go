package watchtest

import (
	"testing"
	"time"
)

// pollEvery is how often Until asks again.
const pollEvery = 10 * time.Millisecond

// Until asks cond every 10 ms until it reports true, for at most within,
// and reports whether it did. It is the tests' one way of waiting for what
// no signal announces: a state another process or a server reaches (a
// command's output, an API server's view, an informer's cache, goroutines
// ending), where a test can only look again.
func Until(within time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return cond()
		}
	}
}

// Eventually fails t unless cond returns "" within within: cond says what
// is still missing, and its last word is the failure's.
func Eventually(t testing.TB, within time.Duration, cond func() string) {
	t.Helper()
	var msg string
	if !Until(within, func() bool { msg = cond(); return msg == "" }) {
		t.Fatalf("not within %v: %s", within, msg)
	}
}
