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

// Cut returns s cut to at most max bytes on a rune boundary, saying how
// many bytes were cut.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	suffix := fmt.Sprintf("… (%d more bytes)", len(s)) // at least as long as the final one
	cut := max - len(suffix)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:cut], len(s)-cut)
}

// Quote quotes value as strconv.Quote does, at most MaxQuoted bytes of
// it.
func Quote(value string) string {
	if len(value) <= MaxQuoted {
		return strconv.Quote(value)
	}
	cut := MaxQuoted
	for cut > 0 && !utf8.RuneStart(value[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(value[:cut]), len(value))
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
