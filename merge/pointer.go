package merge

import "strings"

// Pointer builds an RFC 6901 JSON pointer from unescaped segments:
// Pointer("labels", "app.kubernetes.io/name") is "/labels/app.kubernetes.io~1name".
func Pointer(segments ...string) string {
	if len(segments) == 1 {
		return "/" + escape(segments[0])
	}
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(escape(s))
	}
	return b.String()
}

// Segments splits an RFC 6901 JSON pointer into its unescaped segments. The
// empty pointer (the whole document) has no segments. It reports false when
// key is not a pointer: it does not start with "/" or has a "~" that is not
// "~0" or "~1".
func Segments(key string) ([]string, bool) {
	if key == "" {
		return nil, true
	}
	if key[0] != '/' {
		return nil, false
	}
	parts := strings.Split(key[1:], "/")
	for i, p := range parts {
		u, ok := unescape(p)
		if !ok {
			return nil, false
		}
		parts[i] = u
	}
	return parts, true
}

// Child returns the pointer to the member name of the object at parent.
func Child(parent, name string) string {
	return parent + "/" + escape(name)
}

// IsAncestor reports whether key a is a proper ancestor of key b:
// "/a" is an ancestor of "/a/b" but not of "/ab" or of "/a".
func IsAncestor(a, b string) bool {
	return len(b) > len(a) && b[len(a)] == '/' && b[:len(a)] == a
}

func escape(s string) string {
	if strings.IndexByte(s, '~') < 0 && strings.IndexByte(s, '/') < 0 {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func unescape(s string) (string, bool) {
	if !strings.Contains(s, "~") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '~' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return "", false
		}
		switch s[i+1] {
		case '0':
			b.WriteByte('~')
		case '1':
			b.WriteByte('/')
		default:
			return "", false
		}
		i++
	}
	return b.String(), true
}
