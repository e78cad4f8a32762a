package files

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
)

// gzipMagic opens every gzip stream (RFC 1952): prow's updateconfig writes
// ConfigMaps compressed when asked to, to stay under the 1 MiB limit, and
// readers tell them by these two bytes.
var gzipMagic = []byte{0x1f, 0x8b}

// IsGzip reports whether data starts with gzip's magic bytes.
func IsGzip(data []byte) bool { return bytes.HasPrefix(data, gzipMagic) }

// Gunzip returns data decompressed when it starts with gzip's magic bytes,
// and whether it did; other data comes back as it is. Concatenated members
// are read as one stream, as gzip(1) reads them. The decompressed size is
// bounded by limit: beyond it the error wraps ErrTooLarge, and no more than
// limit+1 bytes are ever produced, so a small bomb costs at most limit. A
// stream that does not decompress is an error saying so. Errors are
// *Error naming name, the file or ConfigMap key the data came from.
func Gunzip(name string, data []byte, limit int) ([]byte, bool, error) {
	if !IsGzip(data) {
		return data, false, nil
	}
	corrupt := func(err error) error {
		return &Error{Path: name, Problem: "is gzip-compressed but does not decompress: " + err.Error(), Err: err}
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, true, corrupt(err)
	}
	// The stream's last member ends with its size (mod 2^32): a hint
	// for the buffer, within the limit, so that a large file is not
	// read into buffers of doubling size.
	var buf bytes.Buffer
	if n := len(data); n >= 4 {
		hint := min(int64(binary.LittleEndian.Uint32(data[n-4:])), int64(limit))
		buf.Grow(int(hint) + bytes.MinRead + 1) // ReadFrom wants MinRead free to read on
	}
	if _, err := buf.ReadFrom(io.LimitReader(zr, int64(limit)+1)); err != nil {
		return nil, true, corrupt(err)
	}
	out := buf.Bytes()
	if len(out) > limit {
		return nil, true, &Error{Path: name, Problem: fmt.Sprintf("is gzip-compressed and over the limit of %d bytes once decompressed", limit), Err: ErrTooLarge}
	}
	return out, true, nil
}
