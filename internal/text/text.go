// Package text bounds what strata writes about input it does not
// control: an error or an Event that quotes a value or lists problems
// stays short whatever the input, so that a tenant's 1 MB value or a file
// with a million mistakes costs a few hundred bytes of message.
package text

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxListed is how many problems a message lists before it counts the
// rest.
const MaxListed = 20

// MaxQuoted is how many bytes of a value a message quotes.
const MaxQuoted = 128

// Cut returns s cut to at most limit bytes on a rune boundary, saying how
// many bytes were cut.
func Cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	suffix := fmt.Sprintf("… (%d more bytes)", len(s)) // at least as long as the final one
	kept := prefix(s, max(limit-len(suffix), 0))
	return fmt.Sprintf("%s… (%d more bytes)", kept, len(s)-len(kept))
}

// prefix returns the longest prefix of s of at most n bytes (n < len(s))
// that ends on a rune boundary.
func prefix(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Quote quotes value as strconv.Quote does, at most MaxQuoted bytes of
// it.
func Quote(value string) string {
	if len(value) <= MaxQuoted {
		return strconv.Quote(value)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(prefix(value, MaxQuoted)), len(value))
}

// MaxMessage is how many bytes of one listed problem a message keeps.
const MaxMessage = 512

// Join joins the first MaxListed of msgs with sep, each cut to
// MaxMessage bytes, and counts the rest.
func Join(msgs []string, sep string) string {
	return List(len(msgs), func(i int) string { return msgs[i] }, sep)
}

// List is Join of n messages made by msg, which it calls only for those
// it lists.
func List(n int, msg func(i int) string, sep string) string {
	var b strings.Builder
	for i := 0; i < n && i < MaxListed; i++ {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(Cut(msg(i), MaxMessage))
	}
	if n > MaxListed {
		fmt.Fprintf(&b, "%s… and %d more", sep, n-MaxListed)
	}
	return b.String()
}
