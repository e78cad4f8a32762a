package files

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"
)

func compress(t testing.TB, parts ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, p := range parts { // several members, as concatenated .gz files
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func TestGunzip(t *testing.T) {
	for _, tc := range []struct {
		name       string
		data       []byte
		want       string
		compressed bool
		err        string
		tooLarge   bool
	}{
		{"plain", []byte("a: 1\n"), "a: 1\n", false, "", false},
		{"empty", nil, "", false, "", false},
		{"one byte of the magic", []byte{0x1f}, "\x1f", false, "", false},
		{"gzip", compress(t, "a: 1\n"), "a: 1\n", true, "", false},
		{"two members", compress(t, "a: 1\n", "b: 2\n"), "a: 1\nb: 2\n", true, "", false},
		{"at the limit", compress(t, strings.Repeat("x", 16)), strings.Repeat("x", 16), true, "", false},
		{"over the limit", compress(t, strings.Repeat("x", 17)), "", true, "cm/key is gzip-compressed and over the limit of 16 bytes once decompressed", true},
		{"magic only", []byte{0x1f, 0x8b}, "", true, "cm/key is gzip-compressed but does not decompress: unexpected EOF", false},
		{"truncated", compress(t, "a: 1\n")[:20], "", true, "cm/key is gzip-compressed but does not decompress", false},
	} {
		got, compressed, err := Gunzip("cm/key", tc.data, 16)
		switch {
		case tc.err == "" && (err != nil || string(got) != tc.want || compressed != tc.compressed):
			t.Errorf("%s: %q, %t, %v", tc.name, got, compressed, err)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err) || errors.Is(err, ErrTooLarge) != tc.tooLarge || !compressed):
			t.Errorf("%s: %v, want %q (too large: %t)", tc.name, err, tc.err, tc.tooLarge)
		}
	}
}

// FuzzGunzip feeds the decompressing reader anything: it never panics,
// never returns more than the limit, hands back what is not gzip as it
// is, and agrees with compress/gzip on what decompresses within it.
func FuzzGunzip(f *testing.F) {
	f.Add([]byte("plain"))
	f.Add(compress(f, "a: 1\n"))
	f.Add(compress(f, "a: 1\n", "b: 2\n"))
	f.Add(compress(f, strings.Repeat("x", 5000)))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	const limit = 1 << 12
	f.Fuzz(func(t *testing.T, data []byte) {
		got, compressed, err := Gunzip("f", data, limit)
		if !IsGzip(data) {
			if compressed || err != nil || !bytes.Equal(got, data) {
				t.Fatalf("not gzip: %q, %t, %v", got, compressed, err)
			}
			return
		}
		if !compressed {
			t.Fatal("gzip not marked compressed")
		}
		if len(got) > limit {
			t.Fatalf("%d bytes, over the limit", len(got))
		}
		zr, zerr := gzip.NewReader(bytes.NewReader(data))
		var want []byte
		if zerr == nil {
			want, zerr = io.ReadAll(io.LimitReader(zr, limit+1))
		}
		switch {
		case err == nil && (zerr != nil || !bytes.Equal(got, want)):
			t.Fatalf("decompressed %q where compress/gzip gives %q, %v", got, want, zerr)
		case err != nil && zerr == nil && len(want) <= limit:
			t.Fatalf("refused %v what compress/gzip decompresses", err)
		}
	})
}
