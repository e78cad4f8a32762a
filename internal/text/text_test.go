package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	long := strings.Repeat("é", 1000) // 2000 bytes
	got := Cut(long, 100)
	if len(got) > 100 || !utf8.ValidString(got) || !strings.HasSuffix(got, "more bytes)") {
		t.Errorf("Cut = %q (%d bytes)", got, len(got))
	}
	if Cut("short", 100) != "short" {
		t.Error("Cut changed a short string")
	}
}

func TestQuote(t *testing.T) {
	if got := Quote("a\"b"); got != `"a\"b"` {
		t.Errorf("Quote = %s", got)
	}
	got := Quote(strings.Repeat("x", 1<<20))
	if len(got) > MaxQuoted+32 || !strings.HasSuffix(got, "… (1048576 bytes)") {
		t.Errorf("Quote of 1 MiB = %q", got)
	}
}

func TestJoin(t *testing.T) {
	msgs := make([]string, 1000)
	for i := range msgs {
		msgs[i] = "m"
	}
	got := Join(msgs, "; ")
	if strings.Count(got, "m; ") != MaxListed || !strings.HasSuffix(got, "; … and 980 more") {
		t.Errorf("Join = %q", got)
	}
	if Join([]string{"a", "b"}, ", ") != "a, b" {
		t.Error("Join of two")
	}
}
