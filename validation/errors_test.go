package validation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/merge"
)

// TestErrorListIsShort validates a configuration with a hundred thousand
// invalid entries, each quoting a long value: the message lists twenty,
// each cut, and counts the rest.
func TestErrorListIsShort(t *testing.T) {
	long := strings.Repeat("v", 100_000)
	var errs field.ErrorList
	for i := 0; i < 100_000; i++ {
		errs = append(errs, field.Invalid(field.NewPath("allowedOrigins").Index(i), long, "must be an origin"))
	}
	l := Attribute(errs, func(string) (merge.Source, bool) { return merge.Source{Origin: "file", Name: "c.yaml"}, true })
	msg := l.Error()
	if len(msg) > 20*600 || strings.Count(msg, "\n") != 20 || !strings.HasSuffix(msg, "… and 99980 more") || !strings.HasPrefix(msg, "file c.yaml: allowedOrigins[0]: Invalid value: ") {
		t.Errorf("message of %d bytes:\n%.2000s", len(msg), msg)
	}
}
