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

// DefaultMaxBytes is the size limit of one file in a snapshot.
const DefaultMaxBytes = 4 << 20

// DefaultReadAttempts is how many times a read starts over when the
// writer replaced or removed what it was reading.
const DefaultReadAttempts = 10

// ErrInconsistent is returned when every attempt to read a target saw it
// change underneath: the writer kept replacing it. The caller keeps its
// previous snapshot and tries again on the next event or poll.
var ErrInconsistent = errors.New("the content kept changing while it was read")

// missingError marks a target that does not exist, as opposed to a
// generation removed while it was read.
type missingError struct{ err error }

func (m missingError) Error() string { return m.err.Error() }
func (m missingError) Unwrap() error { return m.err }

// ErrTooLarge is wrapped by the error for a file over the size limit.
var ErrTooLarge = files.ErrTooLarge

// Entry is one file of a generation.
type Entry struct {
	// Name is the file's name: relative to the directory for a
	// directory target, the base name for a file target.
	Name string
	Data []byte
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
	// Files holds the regular files of a directory target (direct
	// children whose names ReadOptions.Match chose), sorted by name, or
	// the one file of a file target.
	Files []Entry
	// Skipped are the entries of a directory target that Match chose but
	// that are directories, or links to them, and so were not read.
	Skipped []Skip
	// Hash is "sha256:" and the hex digest of the file names and
	// contents.
	Hash string
}

// Skip is a directory entry a read passed over, and why; Link says it is
// a symbolic link to a directory.
type Skip struct {
	Name   string
	Reason string
	Link   bool
}

// ReadOptions tune Read.
type ReadOptions struct {
	// Attempts bounds how many times a read starts over; zero means
	// DefaultReadAttempts.
	Attempts int
	// MaxBytes bounds each file; zero means DefaultMaxBytes.
	MaxBytes int
	// AllowMissing makes a target that does not exist read as an empty
	// snapshot instead of an error.
	AllowMissing bool
	// Match chooses the names of a directory target's files; nil means
	// every name not starting with ".". An entry whose name does not
	// match is never looked at, so a dangling link or a FIFO beside the
	// configuration fails nothing; one whose name matches must be a
	// regular file (a subdirectory is left out).
	Match func(name string) bool

	// pause, when set, runs after each file is read: tests make a slow
	// reader with it.
	pause func()
}

// Read reads path, a file or a directory, as one consistent generation:
//
//  1. Resolve the target: for a directory holding ..data, the directory
//     ..data names; otherwise path with every symbolic link followed (a
//     git-sync checkout behind a root link, a ConfigMap key's link).
//  2. Read the files inside the resolved directory, never through the
//     top-level links, which a writer may swap between two reads.
//  3. Resolve again. If the answer changed, or step 1 or 2 failed because
//     the writer had already removed the directory (ENOENT, ENOTDIR),
//     start over, at most Attempts times.
//
// Holding the directory open would not help: the writer removes the files
// themselves. When the attempts run out Read returns ErrInconsistent (with
// the last cause) and the caller keeps what it had. A directory written in
// place, not through links, is read as it is; its next change is seen on
// the next read. Read is safe to call concurrently.
func Read(path string, opts ReadOptions) (*Generation, error) {
	attempts := opts.Attempts
	if attempts <= 0 {
		attempts = DefaultReadAttempts
	}
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	match := opts.Match
	if match == nil {
		match = notHidden
	}
	var last error
	missing := false
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt >= 2 {
			// The writer is mid-update; give it a moment to finish.
			time.Sleep(time.Duration(attempt-1) * time.Millisecond)
		}
		// (1)
		resolved, dir, err := resolve(path)
		if err != nil {
			if retryable(err) {
				last = err
				missing = errors.As(err, new(missingError))
				continue
			}
			return nil, err
		}
		missing = false
		// (2)
		var entries []Entry
		var skipped []Skip
		if dir {
			entries, skipped, err = readDir(resolved, path, match, maxBytes, opts.pause)
		} else {
			var data []byte
			data, err = files.Read(resolved, maxBytes)
			err = files.Rename(err, resolved, path)
			entries = []Entry{{Name: filepath.Base(path), Data: data}}
		}
		if err != nil {
			if retryable(err) {
				last = err
				continue
			}
			return nil, err
		}
		// (3)
		again, _, err := resolve(path)
		if err != nil || again != resolved {
			last = fmt.Errorf("%s was replaced while it was read", path)
			if err != nil {
				last = err
			}
			continue
		}
		return &Generation{Path: path, Dir: dir, Resolved: resolved, Files: entries, Skipped: skipped, Hash: hashFiles(entries)}, nil
	}
	if missing {
		if opts.AllowMissing {
			return &Generation{Path: path, Hash: hashFiles(nil)}, nil
		}
		return nil, last
	}
	if errors.Is(last, files.ErrDangling) {
		// A link that led nowhere on every attempt is the content, not a
		// writer at work.
		return nil, last
	}
	return nil, fmt.Errorf("%s: %w after %d attempts: %w", path, ErrInconsistent, attempts, last)
}

// resolve returns what a read of path should open, and whether it is a
// directory.
func resolve(path string) (string, bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, missingError{err}
		}
		return "", false, err
	}
	if st.IsDir() {
		data := filepath.Join(path, DataLink)
		if _, err := os.Lstat(data); err == nil {
			r, err := filepath.EvalSymlinks(data)
			return r, true, err
		}
	}
	r, err := filepath.EvalSymlinks(path)
	return r, st.IsDir(), err
}

// retryable reports whether err means the writer removed or replaced what
// was being read.
func retryable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, files.ErrDangling) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ESTALE)
}

// readDir reads the files of dir whose names match, naming a bad one
// under display, the directory its user knows, and lists what it passed
// over.
func readDir(dir, display string, match func(string) bool, maxBytes int, pause func()) ([]Entry, []Skip, error) {
	list, sk, err := files.List(dir, match)
	if err != nil {
		return nil, nil, files.Rename(err, dir, display)
	}
	var skipped []Skip
	for _, s := range sk {
		skipped = append(skipped, Skip{Name: s.Name, Reason: s.Reason, Link: s.Link})
	}
	out := make([]Entry, 0, len(list))
	for _, name := range list {
		data, err := files.Read(filepath.Join(dir, name), maxBytes)
		if err != nil {
			return nil, nil, files.Rename(err, dir, display)
		}
		out = append(out, Entry{Name: name, Data: data})
		if pause != nil {
			pause()
		}
	}
	return out, skipped, nil
}

func notHidden(name string) bool { return !strings.HasPrefix(name, ".") }

// hashFiles digests names and contents, each length-prefixed, so that a
// rename or moving bytes from one file to the next changes the hash.
func hashFiles(files []Entry) string {
	h := sha256.New()
	for _, f := range files {
		writeField(h, f.Name)
		writeField(h, string(f.Data))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
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

// ReadContents reads every path with Read.
func ReadContents(paths []string, opts ReadOptions) (*Contents, error) {
	snaps := make([]*Generation, 0, len(paths))
	for _, p := range paths {
		s, err := Read(p, opts)
		if err != nil {
			return nil, err
		}
		snaps = append(snaps, s)
	}
	return newContents(snaps), nil
}

// ReadFile returns the content of path as it was read: a file target, or a
// file directly inside a directory target. It reads nothing from disk, so
// a configuration built from Contents is built from one generation. The
// error wraps fs.ErrNotExist when path was not part of the snapshot.
func (c *Contents) ReadFile(path string) ([]byte, error) {
	for _, s := range c.Generations {
		switch {
		case !s.Dir && s.Path == path && len(s.Files) == 1:
			return s.Files[0].Data, nil
		case s.Dir && filepath.Dir(path) == filepath.Clean(s.Path):
			name := filepath.Base(path)
			if i, ok := slices.BinarySearchFunc(s.Files, name, func(f Entry, n string) int { return strings.Compare(f.Name, n) }); ok {
				return s.Files[i].Data, nil
			}
		}
	}
	return nil, &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}
}

// ReadDir returns the names of the files of a directory target, sorted.
func (c *Contents) ReadDir(dir string) ([]string, error) {
	for _, s := range c.Generations {
		if s.Dir && filepath.Clean(s.Path) == filepath.Clean(dir) {
			names := make([]string, len(s.Files))
			for i, f := range s.Files {
				names[i] = f.Name
			}
			return names, nil
		}
	}
	return nil, &fs.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
}
