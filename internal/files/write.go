package files

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds the symbolic links Write follows, as the kernel's
// MAXSYMLINKS does.
const maxLinks = 40

// Write writes data to path the way a user who names a path for output
// expects, keeping whatever path is:
//
//   - a regular file is replaced whole, atomically: data is written to a
//     new file beside it, synced, given the old file's mode (and owner,
//     when the process may), and renamed over it, so a reader sees the
//     old content or the new, never a part, and the file is never made
//     more readable than it was;
//   - a symbolic link is written through: its target, followed to the
//     end, is what is replaced or created, and the link stays;
//   - a FIFO or a device (/dev/stdout, /dev/null, a terminal) is opened
//     and written to, never replaced by a file, so that its reader gets
//     data; so is a file reached through /proc or /dev/fd (the shell's
//     redirection of /dev/stdout), which is appended to, as the
//     descriptor it names was opened;
//   - a path that does not exist is created, atomically too, with mode
//     newMode less the process's umask.
//
// The error names path.
func Write(path string, data []byte, newMode fs.FileMode) error {
	target, st, err := writeTarget(path)
	if err != nil {
		return err
	}
	switch {
	case st == nil:
		return replace(target, data, newMode, nil)
	case st.Mode().IsRegular() && !throughProc(target):
		return replace(target, data, st.Mode().Perm(), st)
	case st.Mode().IsRegular(), st.Mode()&(fs.ModeNamedPipe|fs.ModeCharDevice) != 0:
		flags := os.O_WRONLY
		if st.Mode().IsRegular() {
			flags |= os.O_APPEND
		}
		f, err := os.OpenFile(target, flags, 0)
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return notRegular(path, st.Mode())
}

// writeTarget follows the links path names to what Write writes: the path
// of a file that is not a link, with what it is, or the path where a new
// file goes, with nil. A link into /proc (/dev/stdout's) is followed no
// further: the kernel resolves it when it is opened.
func writeTarget(path string) (string, fs.FileInfo, error) {
	for range maxLinks {
		lst, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return path, nil, nil
		case err != nil:
			return "", nil, err
		case lst.Mode()&fs.ModeSymlink == 0:
			return path, lst, nil
		case throughProc(path):
			st, err := os.Stat(path)
			return path, st, err
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", nil, err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	return "", nil, &Error{Path: path, Problem: "is " + ErrDangling.Error() + " (a loop of links)", Err: ErrDangling}
}

// throughProc reports whether path names a descriptor (/proc/self/fd/1,
// /dev/fd/1), a link the kernel resolves to an open file rather than a
// path.
func throughProc(path string) bool {
	return strings.HasPrefix(path, "/proc/") || strings.HasPrefix(path, "/dev/fd/")
}

// replace writes data to a new file beside path and renames it over path.
// The new file gets mode; with old, the mode exactly and old's owner
// where the process may set it, else mode less the umask.
func replace(path string, data []byte, mode fs.FileMode, old fs.FileInfo) error {
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmpPath := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(suffix[:]))
	perm := mode
	if old != nil {
		perm = 0o600 // until it is the old file's, exactly
	}
	tmp, err := os.OpenFile(tmpPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmpPath)
	err = func() error {
		if _, err := tmp.Write(data); err != nil {
			return err
		}
		if old != nil {
			if sys, ok := old.Sys().(*syscall.Stat_t); ok {
				// Only a privileged process can give a file away; an
				// owner it cannot set leaves the writer's.
				_ = tmp.Chown(int(sys.Uid), int(sys.Gid))
			}
			if err := tmp.Chmod(mode); err != nil {
				return err
			}
		}
		return tmp.Sync()
	}()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return os.Rename(tmpPath, path)
}
