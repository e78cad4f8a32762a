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
//     more readable than it was; a file the process may not give its
//     owner, or a mount point of its own (a single-file bind mount),
//     which no rename replaces, is written in place;
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
// A link is followed as the kernel's fs.protected_symlinks would follow
// it: not when it sits in a sticky, world-writable directory (/tmp) and
// belongs neither to the process's user nor to the directory's owner,
// so that a link planted in /tmp cannot turn a write into one over
// /etc/shadow. The error names path.
func Write(path string, data []byte, newMode fs.FileMode) error {
	if err := write(path, data, newMode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func write(path string, data []byte, newMode fs.FileMode) error {
	target, st, err := writeTarget(path)
	if err != nil {
		return err
	}
	switch {
	case st == nil:
		return create(target, data, newMode)
	case st.Mode().IsRegular() && !throughProc(target):
		return replace(target, data, st)
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
		if err := mayFollow(path, lst); err != nil {
			return "", nil, err
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", nil, err
		}
		if !filepath.IsAbs(to) {
			// Relative to where the link is, its directory's own links
			// resolved: "a/dirlink/x -> ../y" is y beside dirlink's
			// target, not in a.
			dir, err := filepath.EvalSymlinks(filepath.Dir(path))
			if err != nil {
				return "", nil, err
			}
			to = filepath.Join(dir, to)
		}
		path = to
	}
	return "", nil, &Error{Path: path, Problem: "is " + ErrDangling.Error() + " (a loop of links)", Err: ErrDangling}
}

// mayFollow says whether the link at path, lst, may be followed, by the
// rule of the kernel's fs.protected_symlinks: a link in a sticky,
// world-writable directory is followed only by its owner, or when its
// owner owns the directory.
func mayFollow(path string, lst fs.FileInfo) error {
	dir, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return err
	}
	if dir.Mode()&fs.ModeSticky == 0 || dir.Mode().Perm()&0o002 == 0 {
		return nil
	}
	link, lok := lst.Sys().(*syscall.Stat_t)
	parent, dok := dir.Sys().(*syscall.Stat_t)
	if !lok || !dok || int(link.Uid) == os.Geteuid() || link.Uid == parent.Uid {
		return nil
	}
	return &Error{Path: path, Problem: fmt.Sprintf("is a symbolic link in a sticky, world-writable directory, owned by user %d: not followed", link.Uid), Err: ErrNotRegular}
}

// throughProc reports whether path names a descriptor (/proc/self/fd/1,
// /dev/fd/1), a link the kernel resolves to an open file rather than a
// path.
func throughProc(path string) bool {
	return strings.HasPrefix(path, "/proc/") || strings.HasPrefix(path, "/dev/fd/")
}

// create writes data to a new file at path, atomically: to a file beside
// it, created with mode less the umask, renamed over it.
func create(path string, data []byte, mode fs.FileMode) error {
	tmp, tmpPath, err := temp(path, mode)
	if err != nil {
		return err
	}
	defer os.Remove(tmpPath)
	if err := finish(tmp, data, nil); err != nil {
		return err
	}
	return os.Rename(tmpPath, path)
}

// replace replaces old, the regular file at path, with data: atomically,
// a new file given old's owner and mode (special bits included) renamed
// over it, when the process may give the new file old's owner and group;
// otherwise in place, truncated and written, which keeps what the file
// is (its owner, mode, ACLs, labels) at the cost of atomicity: a file the
// process may not give away is never made readable by the process's own
// group.
func replace(path string, data []byte, old fs.FileInfo) error {
	sys, ok := old.Sys().(*syscall.Stat_t)
	mode := old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	tmp, tmpPath, err := temp(path, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmpPath)
	owned := ok && tmp.Chown(int(sys.Uid), int(sys.Gid)) == nil
	if !owned {
		tmp.Close()
		return inPlace(path, data)
	}
	if err := finish(tmp, data, &mode); err != nil {
		return err
	}
	err = os.Rename(tmpPath, path)
	if errors.Is(err, syscall.EBUSY) {
		// A mount point of its own (a hostPath of type File, a
		// single-file bind mount): no rename replaces it.
		return inPlace(path, data)
	}
	return err
}

// Replace writes data to path whole, in mode exactly: through a new file
// beside it, synced and renamed over whatever path names (a link is
// replaced, not written through), so that a reader sees the old content
// or the new, and the file never has another mode (a key 0600 stays
// 0600 whatever was there). The error names path.
func Replace(path string, data []byte, mode fs.FileMode) error {
	err := func() error {
		tmp, tmpPath, err := temp(path, 0o600)
		if err != nil {
			return err
		}
		defer os.Remove(tmpPath)
		if err := finish(tmp, data, &mode); err != nil {
			return err
		}
		return os.Rename(tmpPath, path)
	}()
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// temp creates a new file beside path, with mode less the umask.
func temp(path string, mode fs.FileMode) (*os.File, string, error) {
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmpPath := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(suffix[:]))
	f, err := os.OpenFile(tmpPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	return f, tmpPath, err
}

// finish writes data to f, gives it mode when set, syncs and closes it.
func finish(f *os.File, data []byte, mode *fs.FileMode) error {
	err := func() error {
		if _, err := f.Write(data); err != nil {
			return err
		}
		if mode != nil {
			if err := f.Chmod(*mode); err != nil {
				return err
			}
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// inPlace truncates the file at path and writes data into it.
func inPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	return finish(f, data, nil)
}
