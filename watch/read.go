package watch

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/stratacfg/strata/internal/files"
)

// DataLink is the symbolic link through which kubelet's AtomicWriter
// publishes a ConfigMap, Secret, downward API or projected volume: it names
// the current timestamped directory, and the files a pod sees are links
// through it.
const DataLink = "..data"

// Limits of one read, where ReadOptions leave them at zero. They bound
// what a hostile or careless writer of a mount can make a reader hold.
// Every limit but DefaultMaxTotalBytes applies to each target on its
// own; ReadOptions' fields name each value.
const (
	// defaultMaxBytes bounds one file, once decompressed (4 MiB): the
	// limit of a scheme.Kind's input too.
	defaultMaxBytes = files.DefaultMaxBytes
	// defaultMaxFiles bounds the files one target holds.
	defaultMaxFiles = 20_000
	// DefaultMaxTotalBytes bounds the bytes of one snapshot, every file
	// of every target once decompressed: what a small pod can hold
	// twice (the snapshot in effect and the one being loaded).
	DefaultMaxTotalBytes = 256 << 20
	// defaultMaxDepth bounds how deep a tree is read: a file directly in
	// the target is at depth 1.
	defaultMaxDepth = 16
)

// defaultReadAttempts is how many times a read starts over when the
// writer replaced or removed what it was reading.
const defaultReadAttempts = 10

// ErrInconsistent is returned when every attempt to read the targets saw
// one of them change underneath: the writer kept replacing it. The caller
// keeps its previous snapshot and tries again on the next event or poll.
var ErrInconsistent = errors.New("the content kept changing while it was read")

// missingError marks a target that does not exist, as opposed to a
// generation removed while it was read.
type missingError struct{ err error }

func (m missingError) Error() string { return m.err.Error() }
func (m missingError) Unwrap() error { return m.err }

// movedError says a target's anchor moved between the start and the end of
// a read: the read starts over.
type movedError struct{ path string }

func (m movedError) Error() string { return m.path + " was replaced while it was read" }

// ErrTooLarge is wrapped by the error for content over a limit: a file's
// size, a target's file count, total size or depth. It is
// scheme.ErrTooLarge too: one error wherever strata reads.
var ErrTooLarge = files.ErrTooLarge

// Entry is one file of a generation.
type Entry struct {
	// Name is the file's path relative to a directory target,
	// slash-separated (a direct child's name), or a file target's base
	// name.
	Name string
	// Data is the file's content, decompressed when it was gzip'd.
	Data []byte
	// Compressed says the file was gzip'd and Data is what it holds
	// decompressed.
	Compressed bool
}

// Generation is the content of one target, read from a single generation:
// never a mix of the files of two updates.
type Generation struct {
	// Path is the target as it was given.
	Path string
	// Dir reports whether the target is a directory.
	Dir bool
	// Resolved is what was read: the timestamped directory behind
	// ..data, the directory or file behind the last symbolic link of
	// Path, or Path itself. Empty for a missing target read with
	// AllowMissing.
	Resolved string
	// Files holds the files of a directory target that
	// ReadOptions.Select took, in the order filepath.WalkDir visits them
	// (each directory's entries in byte order of names, a directory's
	// files where its name falls), or the one file of a file target.
	Files []Entry
	// Skipped are the entries of a directory target that were left out,
	// each with why.
	Skipped []Skip
	// Dirs are the subdirectories a tree read went into, relative to the
	// target, slash-separated, as Files' names are.
	Dirs []string
	// Hash is "sha256:" and the hex digest of the file names and their
	// contents as stored (compressed where they were).
	Hash string
}

// Skip is a directory entry a read passed over, and why; Link says it is
// a symbolic link to a directory where the target is looked at (a
// directory at the top of a generation read through ..data is one: the
// mount shows it as a link into ..data). Name is relative to the target,
// as an Entry's.
type Skip struct {
	Name   string
	Reason string
	Link   bool
}

// ReadOptions tune Read and ReadContents. Every limit counts bytes once
// decompressed.
type ReadOptions struct {
	// Attempts bounds how many times a read starts over; zero means 10.
	Attempts int
	// MaxBytes bounds each file; zero means 4 MiB.
	MaxBytes int
	// MaxFiles bounds the files of a directory target; zero means
	// 20,000.
	MaxFiles int
	// MaxEntries bounds the entries a directory target's directories
	// hold together, read or left out, directories included: a writer
	// can add any number no Select takes. Zero means five times
	// MaxFiles. A directory is listed no further than what is left.
	MaxEntries int
	// MaxTotalBytes bounds the bytes of the snapshot, every file of
	// every target once decompressed; zero means DefaultMaxTotalBytes.
	// It is checked before each file is decompressed, which may then
	// produce at most what is left: shards that each stay under
	// MaxBytes cannot add up to more.
	MaxTotalBytes int64
	// AllowMissing makes a target that does not exist read as an empty
	// snapshot instead of an error.
	AllowMissing bool
	// FileTargets are the targets that must be files (a --config): one
	// that is a directory fails the read, naming it, as any target that
	// is not a regular file does.
	FileTargets []string
	// Select says why an entry of a directory target that is not a
	// directory is left out, or "" to read it. It is called with the
	// entry's path relative to the target, slash-separated. An entry it
	// leaves out is never looked at, so a dangling link or a FIFO beside
	// the configuration fails nothing; one it takes must be a regular
	// file or a link to one (a link to a directory is skipped). Nil
	// takes every name not starting with ".".
	Select func(rel string) string
	// Tree reads a directory target's subdirectories too, depth first
	// as filepath.WalkDir walks. A symbolic link is never followed as a
	// directory.
	Tree bool
	// SelectDir, in a tree, says why a subdirectory is not read, or ""
	// to read it; it is called with the directory's path relative to
	// the target. Nil reads every directory whose name does not start
	// with "." (a checkout's .git among them).
	SelectDir func(rel string) string
	// MaxDepth bounds how deep a tree is read: a file directly in the
	// target is at depth 1. Zero means 16.
	MaxDepth int
	// LinksOut lets a symbolic link inside a directory target lead
	// outside it. By default a link is followed only when its target,
	// every link on the way resolved, lies inside what the target was
	// pinned to (a volume's generation, a checkout behind its root link,
	// the directory itself), and any other is refused by name: whoever
	// can commit to a synced repository or write a mounted directory
	// cannot make a reader load, or serve, a file outside it. The same
	// holds on the path to a target, file or directory, once it is inside
	// a checkout or a volume (confined); LinksOut lets those lead out too.
	LinksOut bool
	// KeepGzip leaves gzip'd files as they are. By default a file that
	// starts with gzip's magic bytes (1F 8B) is decompressed, as prow
	// and ci-tools read the ConfigMaps prow's updateconfig compresses.
	KeepGzip bool

	// pause, when set, runs after each file is read: tests make a slow
	// reader with it.
	pause func()
}

func (o ReadOptions) withDefaults() ReadOptions {
	if o.Attempts <= 0 {
		o.Attempts = defaultReadAttempts
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = defaultMaxBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = defaultMaxFiles
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 5 * o.MaxFiles
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = defaultMaxDepth
	}
	if o.Select == nil {
		o.Select = notHidden
	}
	if o.SelectDir == nil {
		o.SelectDir = notHidden
	}
	return o
}

// Read reads path, a file or a directory, as one consistent generation;
// it is ReadContents of one path.
func Read(path string, opts ReadOptions) (*Generation, error) {
	c, err := ReadContents([]string{path}, opts)
	if err != nil {
		return nil, err
	}
	return c.Generations[0], nil
}

// ReadContents reads every path, each a file or a directory, as one
// consistent snapshot:
//
//  1. Pin every target: for a directory holding ..data, the directory
//     ..data names; otherwise the path with every symbolic link followed
//     (a git-sync checkout behind a root link, a ConfigMap key's link),
//     those met inside a checkout or a volume only if they lead inside
//     it; and the identity of what that names (device, inode,
//     modification time).
//  2. Read each target inside what it was pinned to, never through the
//     top-level links, which a writer may swap between two reads.
//  3. Pin every target again. If any moved, or step 1 or 2 failed
//     because a writer had already removed a directory (ENOENT,
//     ENOTDIR), start the whole set over, at most Attempts times.
//
// So two targets under one anchor (a --config file and a --config-dir in
// one ConfigMap volume, two subdirectories of one git-sync checkout) are
// always read in the same generation, and no target's content mixes two.
// Holding the directories open would not help: the writer removes the
// files themselves. When the attempts run out ReadContents returns
// ErrInconsistent (with the last cause) and the caller keeps what it had.
// A directory written in place, not through links, is read as it is,
// unless its modification time moved while it was read; its next change
// is seen on the next read. ReadContents is safe to call concurrently.
func ReadContents(paths []string, opts ReadOptions) (*Contents, error) {
	o := opts.withDefaults()
	var last error
	for attempt := 0; attempt < o.Attempts; attempt++ {
		if attempt >= 2 {
			// The writer is mid-update; give it a moment to finish.
			time.Sleep(time.Duration(attempt-1) * time.Millisecond)
		}
		gens, err := o.readSet(paths)
		if err == nil {
			return newContents(gens), nil
		}
		if !retryable(err) {
			return nil, err
		}
		last = err
	}
	if errors.As(last, new(missingError)) || errors.Is(last, files.ErrDangling) {
		// A target missing, or a link that led nowhere, on every
		// attempt is the content, not a writer at work.
		return nil, last
	}
	return nil, fmt.Errorf("%w after %d attempts: %w", ErrInconsistent, o.Attempts, last)
}

// readSet makes one attempt at reading paths as one snapshot.
func (o ReadOptions) readSet(paths []string) ([]*Generation, error) {
	// (1)
	pins := make([]pin, len(paths))
	for i, p := range paths {
		pn, err := pinTarget(p, o.LinksOut)
		if err != nil && !(o.AllowMissing && errors.As(err, new(missingError))) {
			return nil, err
		}
		if pn.dir && slices.Contains(o.FileTargets, p) {
			return nil, &files.Error{Path: p, Problem: "is a directory, not a regular file", Err: files.ErrNotRegular}
		}
		pins[i] = pn
	}
	// (2)
	gens := make([]*Generation, len(paths))
	b := &budget{left: o.MaxTotalBytes, limit: o.MaxTotalBytes}
	for i, p := range paths {
		g, err := o.read(p, pins[i], b)
		if err != nil {
			return nil, err
		}
		gens[i] = g
	}
	// (3)
	for i, p := range paths {
		again, err := pinTarget(p, o.LinksOut)
		if err != nil && !(pins[i].missing && errors.As(err, new(missingError))) {
			return nil, err
		}
		if again != pins[i] {
			return nil, movedError{p}
		}
	}
	return gens, nil
}

// pin is what a target named when a read began: the same pin after the
// read means nothing the read went through moved.
type pin struct {
	resolved string
	dir      bool
	missing  bool
	dev, ino uint64
	mtime    int64
	size     int64
}

// pinTarget resolves path as step 1 of ReadContents says.
func pinTarget(path string, linksOut bool) (pin, error) {
	resolved, dir, err := resolve(path, linksOut)
	if err != nil {
		if errors.As(err, new(missingError)) {
			return pin{missing: true}, err
		}
		return pin{}, err
	}
	st, err := os.Stat(resolved)
	if err != nil {
		return pin{}, err
	}
	p := pin{resolved: resolved, dir: dir, mtime: st.ModTime().UnixNano(), size: st.Size()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		p.dev, p.ino = uint64(sys.Dev), sys.Ino
	}
	return p, nil
}

// budget is what is left of MaxTotalBytes for the rest of a snapshot.
type budget struct{ left, limit int64 }

// read reads one pinned target, taking its bytes from b.
func (o ReadOptions) read(path string, p pin, b *budget) (*Generation, error) {
	if p.missing {
		return &Generation{Path: path, Hash: hashFiles(nil)}, nil
	}
	g := &Generation{Path: path, Dir: p.dir, Resolved: p.resolved}
	h := newContentHash()
	if !p.dir {
		raw, err := files.Read(p.resolved, o.MaxBytes)
		if err != nil {
			return nil, files.Rename(err, p.resolved, path)
		}
		data, compressed, err := o.decode(raw, path, path, b)
		if err != nil {
			return nil, err
		}
		name := filepath.Base(path)
		h.add(name, raw)
		g.Files = []Entry{{Name: name, Data: data, Compressed: compressed}}
		g.Hash = h.sum()
		return g, nil
	}
	d, err := files.OpenDir(p.resolved, o.LinksOut)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	t := &tree{o: o, d: d, root: p.resolved, display: path, g: g, h: h, b: b, left: o.MaxEntries}
	if err := t.dir("", 0); err != nil {
		return nil, err
	}
	if isLink(filepath.Join(path, DataLink)) {
		// Read through ..data: kubelet's AtomicWriter shows each entry of
		// the generation as a link into it, so a directory left out is,
		// where the target is looked at, a link to one.
		for i, s := range g.Skipped {
			if s.Reason == files.SkippedDir && !strings.Contains(s.Name, "/") {
				g.Skipped[i] = Skip{Name: s.Name, Reason: files.SkippedLinkDir, Link: true}
			}
		}
	}
	g.Hash = h.sum()
	return g, nil
}

// decode returns raw, the bytes of the file display as stored,
// decompressed unless KeepGzip, and whether it was compressed, taking
// what it holds from b: decompression produces at most what is left,
// and a file that would pass it is refused, naming target.
func (o ReadOptions) decode(raw []byte, display, target string, b *budget) (data []byte, compressed bool, err error) {
	data = raw
	limit := int64(o.MaxBytes)
	if b.left < limit {
		limit = b.left
	}
	if !o.KeepGzip {
		data, compressed, err = files.Gunzip(display, raw, int(limit))
	}
	if o.pause != nil {
		o.pause()
	}
	over := int64(len(data)) > b.left || errors.Is(err, ErrTooLarge) && limit < int64(o.MaxBytes)
	if over {
		return nil, compressed, &files.Error{Path: target, Problem: fmt.Sprintf("puts the snapshot over the limit of %d bytes in all, once decompressed (reached at %s)", b.limit, display), Err: ErrTooLarge}
	}
	if err != nil {
		return nil, compressed, err
	}
	b.left -= int64(len(data))
	return data, compressed, nil
}

// tree reads a directory target.
type tree struct {
	o             ReadOptions
	d             *files.Dir
	root, display string
	g             *Generation
	h             contentHash
	b             *budget
	left          int // of MaxEntries
}

// dir reads the directory rel ("" for the target) at depth, its files at
// depth+1.
func (t *tree) dir(rel string, depth int) (err error) {
	join := func(name string) string {
		if rel == "" {
			return name
		}
		return rel + "/" + name
	}
	var takeDir func(string) string
	if t.o.Tree {
		takeDir = func(name string) string { return t.o.SelectDir(join(name)) }
	}
	// A directory kubelet's AtomicWriter writes inside the tree (a
	// ConfigMap volume in a --config-dir) is read through its links into
	// ..data, a file at a time: the same ..data after as before, or the
	// snapshot is read again, as for a target's.
	data := filepath.Join(t.root, filepath.FromSlash(join(DataLink)))
	if gen, rerr := os.Readlink(data); rerr == nil && rel != "" {
		defer func() {
			if now, _ := os.Readlink(data); now != gen && err == nil {
				err = movedError{filepath.Join(t.display, filepath.FromSlash(rel))}
			}
		}()
	}
	list, skipped, err := t.d.List(rel, t.left, func(name string) string { return t.o.Select(join(name)) }, takeDir)
	if errors.Is(err, files.ErrTooLarge) {
		return &files.Error{Path: t.display, Problem: fmt.Sprintf("holds more than the limit of %d entries, read or not (reached in %s)", t.o.MaxEntries, filepath.Join(t.display, filepath.FromSlash(rel))), Err: ErrTooLarge}
	}
	if err != nil {
		return files.Rename(err, t.root, t.display)
	}
	t.left -= len(list) + len(skipped)
	for _, s := range skipped {
		t.g.Skipped = append(t.g.Skipped, Skip{Name: join(s.Name), Reason: s.Reason, Link: s.Link})
	}
	for _, e := range list {
		name := join(e.Name)
		display := filepath.Join(t.display, filepath.FromSlash(name))
		if e.Dir {
			if depth+2 > t.o.MaxDepth {
				return &files.Error{Path: display, Problem: fmt.Sprintf("is deeper than the limit of %d levels", t.o.MaxDepth), Err: ErrTooLarge}
			}
			t.g.Dirs = append(t.g.Dirs, name)
			if err := t.dir(name, depth+1); err != nil {
				return err
			}
			continue
		}
		if len(t.g.Files) == t.o.MaxFiles {
			return &files.Error{Path: t.display, Problem: fmt.Sprintf("holds more than the limit of %d files (%s is one more)", t.o.MaxFiles, name), Err: ErrTooLarge}
		}
		raw, err := t.d.Read(name, t.o.MaxBytes)
		if err != nil {
			return files.Rename(err, t.root, t.display)
		}
		data, compressed, err := t.o.decode(raw, display, t.display, t.b)
		if err != nil {
			return err
		}
		t.h.add(name, raw)
		t.g.Files = append(t.g.Files, Entry{Name: name, Data: data, Compressed: compressed})
	}
	return nil
}

// resolve returns what a read of path should open, and whether it is a
// directory. Unless linksOut, the links on path stay inside the source
// they are met in (confined).
func resolve(path string, linksOut bool) (string, bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, missingError{err}
		}
		return "", false, err
	}
	eval := confined
	if linksOut {
		eval = filepath.EvalSymlinks
	}
	r, err := eval(path)
	if errors.Is(err, fs.ErrNotExist) && !st.IsDir() && (strings.HasPrefix(path, "/dev/") || strings.HasPrefix(path, "/proc/")) && (linksOut || !underRoot(path)) {
		// A link the kernel resolves to an open file (/dev/stdin,
		// /dev/fd/3 of a shell's <(…)) names no path: read through it,
		// and the read says what it is. Not inside a checkout or a
		// volume, whose links are confined.
		return path, false, nil
	}
	if err != nil {
		return "", false, err
	}
	// The generation is looked up in what r names, not through path
	// again: a writer may have swapped a link on path since.
	if st.IsDir() && isLink(filepath.Join(r, DataLink)) {
		gen, err := dataGeneration(r, filepath.Join(path, DataLink))
		return gen, true, err
	}
	return r, st.IsDir(), nil
}

// underRoot reports whether a directory on the way to path, as the kernel
// resolves it, roots a source (rootKind).
func underRoot(path string) bool {
	for d := filepath.Dir(path); d != "/" && d != "."; d = filepath.Dir(d) {
		if k := rootKind(d); k != "" {
			return true
		}
	}
	return false
}

// confined is filepath.EvalSymlinks of path, except that once the walk is
// inside a source's root (a checkout: a directory holding .git; a volume:
// one holding ..data; the innermost met), a link on the rest of the path
// must lead inside that root, or it is refused naming it (ErrOutside):
// whoever commits to a synced repository cannot put a link where the
// reader's target, or a directory on the way to it, should be, and make
// it read a file elsewhere (a pod's service account token). Links met
// before any root (git-sync's link, an operator's alias) are followed as
// they lead. A ".." goes up from where the walk is, as the kernel's does;
// one that leaves a root after a link inside it was followed is refused
// too, since the link decided where it leads (a committed "configs ->
// ." makes "configs/../x" leave the checkout), and one that leaves it
// otherwise is back in the root around it, if any (a committed ..data
// makes a root inside a checkout, not a way out of it).
func confined(path string) (string, error) {
	abs := path
	shownFrom := 0 // the components of abs before path's own
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		abs = wd + "/" + path
		shownFrom = len(strings.Split(strings.Trim(wd, "/"), "/"))
	}
	comps := strings.Split(strings.TrimPrefix(abs, "/"), "/")
	shown := func(i int) string { // the link at comps[i], as path names it
		if filepath.IsAbs(path) || i < shownFrom {
			return "/" + strings.Join(comps[:i+1], "/")
		}
		return strings.Join(comps[shownFrom:i+1], "/")
	}
	inside := func(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }
	// roots are the roots the walk is in, innermost last, each with
	// whether a link inside it was followed.
	type rootOf struct {
		dir, kind string
		linked    bool
	}
	var roots []rootOf
	enter := func(dir, kind string) {
		if len(roots) == 0 || roots[len(roots)-1].dir != dir {
			roots = append(roots, rootOf{dir: dir, kind: kind})
		}
	}
	cur := "/"
	for i, c := range comps {
		switch c {
		case "", ".":
			continue
		case "..":
			up := filepath.Dir(cur)
			for len(roots) > 0 && !inside(up, roots[len(roots)-1].dir) {
				if r := roots[len(roots)-1]; r.linked {
					return "", &files.Error{Path: shown(i), Problem: fmt.Sprintf("is %s (a link on the way, inside the %s %s, makes it lead up out of it, to %s)", files.ErrOutside, r.kind, r.dir, up), Err: files.ErrOutside}
				}
				roots = roots[:len(roots)-1] // left by the path's own "..": the enclosing root holds
			}
			cur = up
			continue
		}
		next := filepath.Join(cur, c)
		st, err := os.Lstat(next)
		if err != nil {
			return "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			cur = next
			if k := rootKind(cur); k != "" {
				enter(cur, k)
			}
			continue
		}
		r, err := filepath.EvalSymlinks(next)
		if err != nil {
			return "", err
		}
		if len(roots) > 0 {
			in := &roots[len(roots)-1]
			if !inside(r, in.dir) {
				to, _ := os.Readlink(next)
				return "", &files.Error{Path: shown(i), Problem: fmt.Sprintf("is %s (it points to %s, outside the %s %s)", files.ErrOutside, to, in.kind, in.dir), Err: files.ErrOutside}
			}
			in.linked = true
		}
		cur = r
		// A link may lead into roots below their tops (an alias into a
		// checkout's subdirectory): every one it is in, outermost first,
		// so that a ".." out of an inner one is back in the outer.
		var into []rootOf
		for d := r; len(roots) == 0 || d != roots[len(roots)-1].dir; d = filepath.Dir(d) {
			if k := rootKind(d); k != "" {
				into = append(into, rootOf{dir: d, kind: k})
			}
			if d == "/" {
				break
			}
		}
		for i := len(into) - 1; i >= 0; i-- {
			enter(into[i].dir, into[i].kind)
		}
	}
	return cur, nil
}

// rootKind says whether dir roots a source: "checkout" when it holds .git,
// "volume" when it holds a ..data link, "" when neither.
func rootKind(dir string) string {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
		return "checkout"
	}
	if isLink(filepath.Join(dir, DataLink)) {
		return "volume"
	}
	return ""
}

// isLink reports whether path is a symbolic link: a ..data that is not
// one (a directory or a file of that name) is not kubelet's, and the
// directory holding it is read as it is, as kube-apiserver and kubelet's
// readers read it.
func isLink(path string) bool {
	st, err := os.Lstat(path)
	return err == nil && st.Mode()&fs.ModeSymlink != 0
}

// dataGeneration resolves the ..data link of dir, a directory named with
// no link in it, to the generation it names; errors name the link as
// shown. kubelet's names a directory beside it; one that leads
// anywhere else (a ..data committed to a git-sync repository, pointing
// out of the checkout) is refused, ErrOutside: the generation is what the
// links-stay-inside rule protects, so it must lie inside the source. A
// link to nothing, or a loop, is ErrDangling, naming the link; ENOENT
// mid-swap stays retryable as either.
func dataGeneration(dir, shown string) (string, error) {
	data := filepath.Join(dir, DataLink)
	r, err := filepath.EvalSymlinks(data)
	if err != nil {
		if !errors.Is(err, fs.ErrPermission) {
			to, _ := os.Readlink(data)
			return "", &files.Error{Path: shown, Problem: fmt.Sprintf("is %s (it points to %s: %v)", files.ErrDangling, to, err), Err: files.ErrDangling}
		}
		return "", err
	}
	if filepath.Dir(r) != dir {
		return "", &files.Error{Path: shown, Problem: "is " + files.ErrOutside.Error() + " (it leads to " + r + ", not to a directory beside it)", Err: files.ErrOutside}
	}
	return r, nil
}

// retryable reports whether err means the writer removed or replaced what
// was being read.
func retryable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, files.ErrDangling) || errors.Is(err, syscall.ENOTDIR) ||
		errors.Is(err, syscall.ESTALE) || errors.As(err, new(movedError))
}

func notHidden(name string) string {
	if strings.HasPrefix(path.Base(name), ".") {
		return "hidden"
	}
	return ""
}

// comparePaths orders slash-separated relative paths as filepath.WalkDir
// visits them: component by component, so that "a/x" comes before "a.b".
func comparePaths(a, b string) int {
	for a != "" && b != "" {
		ca, ra, _ := strings.Cut(a, "/")
		cb, rb, _ := strings.Cut(b, "/")
		if c := strings.Compare(ca, cb); c != 0 {
			return c
		}
		a, b = ra, rb
	}
	return strings.Compare(a, b)
}

// contentHash digests names and contents, each length-prefixed, so that a
// rename or moving bytes from one file to the next changes the hash.
type contentHash struct{ h hash.Hash }

func newContentHash() contentHash { return contentHash{sha256.New()} }

func (c contentHash) add(name string, data []byte) {
	writeField(c.h, name)
	writeField(c.h, string(data))
}

func (c contentHash) sum() string { return "sha256:" + hex.EncodeToString(c.h.Sum(nil)) }

// hashFiles is the hash of files as Generation.Hash computes it.
func hashFiles(files []Entry) string {
	h := newContentHash()
	for _, f := range files {
		h.add(f.Name, f.Data)
	}
	return h.sum()
}

func writeField(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	io.WriteString(h, s)
}

// Contents is what one check read: a snapshot per watched target, in the
// order the targets were given. It is immutable.
type Contents struct {
	Generations []*Generation
	// Hash digests every snapshot with its path; equal hashes mean
	// equal contents.
	Hash string
}

func newContents(snaps []*Generation) *Contents {
	c := &Contents{Generations: snaps}
	if len(snaps) == 1 {
		c.Hash = snaps[0].Hash
		return c
	}
	h := sha256.New()
	for _, s := range snaps {
		writeField(h, s.Path)
		writeField(h, s.Hash)
	}
	c.Hash = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return c
}

// Target returns the snapshot of the target given as path.
func (c *Contents) Target(path string) (*Generation, bool) {
	for _, s := range c.Generations {
		if s.Path == path {
			return s, true
		}
	}
	return nil, false
}

// ReadFile returns the content of path as it was read (decompressed): a
// file target, or a file inside a directory target (at any depth in a
// tree). It reads nothing from disk, so a configuration built from
// Contents is built from one generation. The error wraps fs.ErrNotExist
// when path was not part of the snapshot.
func (c *Contents) ReadFile(path string) ([]byte, error) {
	if e, ok := c.entry(path); ok {
		return e.Data, nil
	}
	return nil, &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}
}

// Compressed reports whether the file path of the snapshot was stored
// gzip'd.
func (c *Contents) Compressed(path string) bool {
	e, ok := c.entry(path)
	return ok && e.Compressed
}

// entry finds the file path in the snapshot.
func (c *Contents) entry(path string) (*Entry, bool) {
	clean := filepath.Clean(path)
	for _, s := range c.Generations {
		if !s.Dir {
			if len(s.Files) == 1 && filepath.Clean(s.Path) == clean {
				return &s.Files[0], true
			}
			continue
		}
		rel, err := filepath.Rel(filepath.Clean(s.Path), clean)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		rel = filepath.ToSlash(rel)
		if i, ok := slices.BinarySearchFunc(s.Files, rel, func(f Entry, n string) int { return comparePaths(f.Name, n) }); ok {
			return &s.Files[i], true
		}
	}
	return nil, false
}

// ReadDir returns the names of the files directly inside dir, a directory
// target or a directory of a tree target, sorted.
func (c *Contents) ReadDir(dir string) ([]string, error) {
	clean := filepath.Clean(dir)
	for _, s := range c.Generations {
		if !s.Dir {
			continue
		}
		rel, err := filepath.Rel(filepath.Clean(s.Path), clean)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		prefix := ""
		if rel != "." {
			prefix = filepath.ToSlash(rel) + "/"
		}
		found := prefix == ""
		var names []string
		for _, f := range s.Files {
			rest, ok := strings.CutPrefix(f.Name, prefix)
			if !ok {
				continue
			}
			found = true
			if !strings.Contains(rest, "/") {
				names = append(names, rest)
			}
		}
		if found {
			return names, nil
		}
	}
	return nil, &fs.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
}
