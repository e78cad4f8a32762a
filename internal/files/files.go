// Package files is strata's one rule for reading configuration from a
// filesystem it does not control (a mounted ConfigMap, a drop-in
// directory, a directory of manifests, a path on a command line):
//
//   - a named file must resolve to a regular file: a FIFO, a device, a
//     socket or a directory is refused by name and type before it is
//     opened, and again on the open descriptor, since it can be replaced
//     in between;
//   - it is opened with O_NONBLOCK, so that a FIFO put in its place never
//     blocks the reader, and read up to a limit, so that /dev/zero or a
//     huge file costs at most that limit;
//   - a directory is listed by name first: an entry whose name the caller
//     ignores is never examined, so that a dangling link or an unreadable
//     README beside the configuration never fails a load.
package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrNotRegular is wrapped by the error for a path that is not a regular
// file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error for input over a size limit:
// scheme.ErrTooLarge and watch.ErrTooLarge are this one error.
var ErrTooLarge = errors.New("input too large")

// DefaultMaxBytes is the size limit of one input, once decompressed,
// wherever the caller sets none: scheme.DefaultMaxBytes and
// watch.DefaultMaxBytes are this one limit.
const DefaultMaxBytes = 4 << 20

// ErrDangling is wrapped by the error for a symbolic link to nothing, or
// a loop of links.
var ErrDangling = errors.New("a symbolic link that leads to no file")

// Read reads the regular file at path, following symbolic links, at most
// limit bytes. The error names path and says what it is when it is not a
// regular file, wraps ErrTooLarge when it is over limit, and wraps the
// operating system's error (fs.ErrNotExist) when it cannot be read.
func Read(path string, limit int) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, statError(path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err = f.Stat() // it may have been replaced since it was looked at
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, &Error{Path: path, Problem: "cannot be read: " + err.Error(), Err: err}
	}
	if len(data) > limit {
		return nil, &Error{Path: path, Problem: fmt.Sprintf("is over the limit of %d bytes", limit), Err: ErrTooLarge}
	}
	return data, nil
}

// Error is a problem with one file, naming it. Path is what was opened;
// a caller that read through a link it resolved itself (a mount's
// timestamped directory) sets it back to the path its user knows.
type Error struct {
	Path    string
	Problem string // "is a named pipe (FIFO)"
	Err     error  // ErrNotRegular, ErrTooLarge, ErrDangling, or the system's
}

func (e *Error) Error() string { return e.Path + " " + e.Problem }
func (e *Error) Unwrap() error { return e.Err }

// Rename returns err with the path of a file *Error inside dir renamed
// into display: the same name under display instead of dir.
func Rename(err error, dir, display string) error {
	var fe *Error
	if !errors.As(err, &fe) {
		return err
	}
	rel, rerr := filepath.Rel(dir, fe.Path)
	if rerr != nil || strings.HasPrefix(rel, "..") {
		return err
	}
	c := *fe
	c.Path = filepath.Join(display, rel)
	return &c
}

// Skipped is an entry a listing left out, and why. Link says it is a
// symbolic link (to a directory).
type Skipped struct {
	Name   string
	Reason string
	Link   bool
}

// Listed is an entry List took: a regular file (or a link to one), or a
// real directory.
type Listed struct {
	Name string
	Dir  bool
}

// List lists dir, in byte order of names, returning what it took and what
// it left out. take says why a name that is not a directory is left out,
// or "" to take it; an entry it leaves out is never looked at, so a
// dangling link, a FIFO or an unreadable README beside the configuration
// fails nothing. A taken entry must be a regular file or a link to one: a
// link to a directory is skipped (links are never followed as
// directories), and a FIFO, a device, a socket or a link to nothing is an
// error naming it, since its name says it is configuration. A real
// directory goes to takeDir, or with takeDir nil is skipped ("a
// directory", or take's reason when take leaves its name out). When dir
// itself has gone (a mount's generation removed while it was listed), the
// error wraps fs.ErrNotExist.
func List(dir string, take, takeDir func(name string) string) ([]Listed, []Skipped, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var out []Listed
	var skipped []Skipped
	skip := func(name, reason string, link bool) {
		skipped = append(skipped, Skipped{Name: name, Reason: reason, Link: link})
	}
	for _, de := range des {
		name := de.Name()
		if de.IsDir() {
			switch {
			case takeDir != nil:
				if why := takeDir(name); why != "" {
					skip(name, why, false)
				} else {
					out = append(out, Listed{Name: name, Dir: true})
				}
			case take(name) != "":
				skip(name, take(name), false)
			default:
				skip(name, "a directory", false)
			}
			continue
		}
		if why := take(name); why != "" {
			skip(name, why, false)
			continue
		}
		p := filepath.Join(dir, name)
		mode := de.Type()
		link := mode&fs.ModeSymlink != 0
		if link {
			st, err := os.Stat(p)
			if err != nil {
				if _, derr := os.Lstat(dir); derr != nil {
					return nil, nil, derr // the directory has gone
				}
				return nil, nil, statError(p, err)
			}
			mode = st.Mode()
		}
		switch {
		case mode.IsDir():
			skip(name, "a symbolic link to a directory", true)
		case !mode.IsRegular():
			return nil, nil, notRegular(p, mode)
		default:
			out = append(out, Listed{Name: name})
		}
	}
	return out, skipped, nil
}

// statError turns the error of a stat of path into one that says what is
// wrong: a link to nothing or a loop of links is not "missing".
func statError(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return &Error{Path: path, Problem: "is " + ErrDangling.Error() + " (a loop of links)", Err: ErrDangling}
	}
	if errors.Is(err, fs.ErrNotExist) {
		if lst, lerr := os.Lstat(path); lerr == nil && lst.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(path)
			return &Error{Path: path, Problem: "is " + ErrDangling.Error() + " (it points to " + target + ")", Err: ErrDangling}
		}
	}
	return err
}

// notRegular says what path is instead of a regular file.
func notRegular(path string, mode fs.FileMode) error {
	what := "not a regular file"
	switch {
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeCharDevice != 0:
		what = "a character device"
	case mode&fs.ModeDevice != 0:
		what = "a device"
	}
	return &Error{Path: path, Problem: "is " + what + ", not a regular file", Err: ErrNotRegular}
}
