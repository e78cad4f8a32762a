package watch

import (
	"os"
	"path/filepath"
	"strings"
)

// maxLinks bounds symbolic-link hops, as the kernel's ELOOP does.
const maxLinks = 40

// watchDirs returns the directories whose events can announce a change of
// path:
//   - the directory holding each symbolic link met while resolving path
//     (the mount holding ..data, the root holding a git-sync link); the
//     watch goes on the link's directory, never on the link, because
//     inotify follows a link and that watch dies with the old generation
//     (controller-runtime#3020, flagd#42);
//   - the directory a file target lives in, or a directory target itself,
//     after resolution, unless it is one of kubelet's timestamped
//     directories (immutable, and removed at the next update);
//   - for a path that does not exist yet, its deepest existing ancestor, so
//     that its creation is an event.
func watchDirs(path string) []string {
	var out []string
	add := func(d string) {
		for _, have := range out {
			if have == d {
				return
			}
		}
		out = append(out, d)
	}
	p, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	for hops := 0; hops <= maxLinks; {
		comps := strings.Split(strings.TrimPrefix(p, "/"), "/")
		cur := "/"
		relinked := false
		for i, c := range comps {
			next := filepath.Join(cur, c)
			st, err := os.Lstat(next)
			if err != nil {
				add(cur)
				return out
			}
			if st.Mode()&os.ModeSymlink != 0 {
				add(cur)
				target, err := os.Readlink(next)
				if err != nil {
					return out
				}
				if !filepath.IsAbs(target) {
					target = filepath.Join(cur, target)
				}
				p = filepath.Join(append([]string{target}, comps[i+1:]...)...)
				hops++
				relinked = true
				break
			}
			cur = next
		}
		if relinked {
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return out
		}
		final := p
		if !st.IsDir() {
			final = filepath.Dir(p)
		}
		if !strings.HasPrefix(filepath.Base(final), "..") {
			add(final)
		}
		return out
	}
	return out
}
