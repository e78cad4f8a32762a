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
//     README beside the configuration never fails a load;
//   - a directory that roots a source (Dir) is never left: a symbolic link
//     inside it is followed only while it leads to a file inside it.
package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
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
// wherever the caller sets none: a scheme.Kind's decoder and a watch's
// read keep this one limit.
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
	f, err := os.OpenFile(path, readFlags, 0)
	if err != nil {
		return nil, err
	}
	return readOpen(f, path, limit)
}

// readFlags open a file without blocking on a FIFO put in its place and
// without taking a terminal as the controlling one.
const readFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY

// readOpen reads f, opened as path, at most limit bytes, checking on the
// open descriptor that it is a regular file, since it may have been
// replaced since it was looked at. It closes f.
func readOpen(f *os.File, path string, limit int) ([]byte, error) {
	defer f.Close()
	st, err := f.Stat()
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

// ErrOutside is wrapped by the error for a symbolic link, met inside a
// directory that roots a source, that leads outside it.
var ErrOutside = errors.New("a symbolic link that leads outside its source")

// Dir is a directory read as the root of a source: a ConfigMap volume's
// timestamped generation, a git-sync checkout, a drop-in or manifest
// directory. What it lists and reads stays inside it: a symbolic link met
// inside is followed only when its target, every link on the way
// resolved, lies inside the directory; one that leads out, relative or
// absolute, directly or through a chain of links, is refused by name
// (ErrOutside), as a loop of links is. Every open resolves inside the
// directory (os.Root), so a link swapped to lead out while the directory
// is read is refused too, never followed. A Dir is safe for concurrent
// use.
type Dir struct {
	path string   // as given: what errors name
	abs  string   // path made absolute: what links must stay inside
	root *os.Root // nil when links may lead out (OpenDir's linksOut)
}

// OpenDir opens path, a directory named with no symbolic link in it (as
// filepath.EvalSymlinks returns it), as the root of a source. With
// linksOut, links inside may lead anywhere, as they do for os.Open. The
// error wraps fs.ErrNotExist when path has gone.
func OpenDir(path string, linksOut bool) (*Dir, error) {
	d := &Dir{path: path}
	if linksOut {
		return d, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	d.abs = abs
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	d.root = root
	return d, nil
}

// Close releases the directory.
func (d *Dir) Close() error {
	if d.root == nil {
		return nil
	}
	return d.root.Close()
}

// join is the path of rel, slash-separated inside d, as errors name it.
func (d *Dir) join(rel string) string { return filepath.Join(d.path, filepath.FromSlash(rel)) }

// Read reads rel, a regular file inside d or a link to one, at most limit
// bytes, as the package's Read does; a link that leads outside d is
// refused.
func (d *Dir) Read(rel string, limit int) ([]byte, error) {
	if d.root == nil {
		return Read(d.join(rel), limit)
	}
	inner, err := d.inside(rel)
	if err != nil {
		return nil, err
	}
	p := d.join(rel)
	st, err := d.root.Stat(inner)
	if err != nil {
		return nil, d.openError(rel, err)
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(p, st.Mode())
	}
	f, err := d.root.OpenFile(inner, readFlags, 0)
	if err != nil {
		return nil, d.openError(rel, err)
	}
	return readOpen(f, p, limit)
}

// stat returns what rel inside d is, following a link that stays inside.
func (d *Dir) stat(rel string) (fs.FileInfo, error) {
	if d.root == nil {
		st, err := os.Stat(d.join(rel))
		if err != nil {
			return nil, statError(d.join(rel), err)
		}
		return st, nil
	}
	inner, err := d.inside(rel)
	if err != nil {
		return nil, err
	}
	st, err := d.root.Stat(inner)
	if err != nil {
		return nil, d.openError(rel, err)
	}
	return st, nil
}

// inside returns the path inside d that rel names, its links resolved:
// rel itself when it is no link. A link that leads outside d, to nothing
// or into a loop is an error naming rel.
func (d *Dir) inside(rel string) (string, error) {
	name := filepath.FromSlash(rel)
	if lst, err := d.root.Lstat(name); err != nil || lst.Mode()&fs.ModeSymlink == 0 {
		return name, nil // what the open meets says what is wrong
	}
	p := d.join(rel)
	target, err := filepath.EvalSymlinks(filepath.Join(d.abs, name))
	if err != nil {
		if _, serr := os.Stat(p); serr != nil {
			err = serr
		}
		return "", statError(p, err)
	}
	inner, err := filepath.Rel(d.abs, target)
	if err != nil || inner == ".." || strings.HasPrefix(inner, ".."+string(filepath.Separator)) {
		to, _ := os.Readlink(p)
		return "", &Error{Path: p, Problem: "is " + ErrOutside.Error() + " (it points to " + to + ")", Err: ErrOutside}
	}
	return inner, nil
}

// openError says what is wrong with rel from the error of an open or stat
// inside d. os.Root refuses a name that would leave d (a link swapped
// after inside resolved it): that is ErrOutside.
func (d *Dir) openError(rel string, err error) error {
	p := d.join(rel)
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Err.Error() == errEscapes {
		return &Error{Path: p, Problem: "is reached through " + ErrOutside.Error() + " (it changed while it was read)", Err: ErrOutside}
	}
	return statError(p, err)
}

// errEscapes is what os.Root says of a name that would leave the root.
const errEscapes = "path escapes from parent"

// readDir lists the directory rel inside d, sorted by name: at most most
// entries, one more being an error wrapping ErrTooLarge.
func (d *Dir) readDir(rel string, most int) ([]fs.DirEntry, error) {
	var f *os.File
	var err error
	if d.root == nil {
		f, err = os.Open(d.join(rel))
	} else {
		name := "."
		if rel != "" {
			name = filepath.FromSlash(rel)
		}
		f, err = d.root.Open(name)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	des, err := f.ReadDir(most + 1)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if err == nil && len(des) > most {
		return nil, &Error{Path: d.join(rel), Problem: fmt.Sprintf("holds more than %d entries", most), Err: ErrTooLarge}
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return des, err
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

// Why List leaves out a real directory whose name take would take, and a
// link to a directory.
const (
	SkippedDir     = "a directory"
	SkippedLinkDir = "a symbolic link to a directory"
)

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

// List lists the directory rel inside d ("" for d), in byte order of
// names, returning what it took and what it left out; a directory of more
// than most entries is an error wrapping ErrTooLarge, read no further.
// take says why a name that is not a directory is left out, or "" to take
// it; an entry it leaves out is never looked at, so a dangling link, a
// FIFO or an unreadable README beside the configuration fails nothing. A
// taken entry must be a regular file or a link to one: a link to a
// directory is skipped (links are never followed as directories: one to a
// directory inside d is skipped, one that leads outside d refused), and a
// FIFO, a device, a socket, a link to nothing or a link that leads
// outside d is an error naming it, since its name says it is
// configuration. A real directory goes to takeDir, or with takeDir nil is
// skipped (SkippedDir, or take's reason when take leaves its name out).
// When dir itself has gone (a mount's generation removed while it was
// listed), the error wraps fs.ErrNotExist.
func (d *Dir) List(rel string, most int, take, takeDir func(name string) string) ([]Listed, []Skipped, error) {
	des, err := d.readDir(rel, most)
	if errors.Is(err, ErrTooLarge) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, d.openError(rel, err)
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
				skip(name, SkippedDir, false)
			}
			continue
		}
		if why := take(name); why != "" {
			skip(name, why, false)
			continue
		}
		entry := path.Join(rel, name)
		mode := de.Type()
		if mode&fs.ModeSymlink != 0 {
			st, err := d.stat(entry)
			if err != nil {
				if _, derr := os.Lstat(d.join(rel)); derr != nil {
					return nil, nil, derr // the directory has gone
				}
				return nil, nil, err
			}
			mode = st.Mode()
		}
		switch {
		case mode.IsDir():
			skip(name, SkippedLinkDir, true)
		case !mode.IsRegular():
			return nil, nil, notRegular(d.join(entry), mode)
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
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) && pe.Path != path {
		// os.Root names only the path inside the root: name it whole.
		return &Error{Path: path, Problem: "cannot be read: " + pe.Err.Error(), Err: err}
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
