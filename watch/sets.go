package watch

import (
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// MarkersAgree returns a check for Options.Consistent: the targets form one
// set only when every directory target holds a file named name (at any
// depth of a tree) and all the files of that name, a file target's
// included, hold the same version, surrounding space aside. prow's updateconfig writes such a
// marker, VERSION, holding the commit, into every ConfigMap it updates; a
// projected volume of several ConfigMaps maps each one's marker to a path
// of its own. A set whose markers disagree, or a target without one (a
// ConfigMap kubelet has not fetched yet), is pending, never served.
func MarkersAgree(name string) func(c *Contents) error {
	return func(c *Contents) error {
		var first, firstAt string
		for _, g := range c.Generations {
			found := false
			for _, f := range g.Files {
				if path.Base(f.Name) != name {
					continue
				}
				found = true
				v := string(bytes.TrimSpace(f.Data))
				at := g.Path
				if g.Dir {
					at = filepath.Join(g.Path, filepath.FromSlash(f.Name))
				}
				if firstAt == "" {
					first, firstAt = v, at
				} else if v != first {
					return fmt.Errorf("%s holds version %q where %s holds %q", at, v, firstAt, first)
				}
			}
			if !found && g.Dir {
				return fmt.Errorf("%s holds no %s marker", g.Path, name)
			}
		}
		return nil
	}
}

// Mount is a ConfigMap (or Secret) as kubelet mounts it: each key of Data
// and BinaryData a file of the directory Path, a key with slashes (a
// projected item's path) a file in a subdirectory. With Key set, Path is
// the file of that one key, as a target naming one file of a mount.
type Mount struct {
	Path       string
	Key        string
	Data       map[string]string
	BinaryData map[string][]byte
}

// ContentHash returns the hash a watcher reading the mounts' paths, in this
// order and with opts, reports for them (Contents.Hash, the hash in
// <subsystem>_last_config_info), computed from the ConfigMap objects
// themselves: compare the two to tell whether a change of the ConfigMaps
// has reached the pod. Keys opts would leave out (hidden names, names
// Select refuses, subdirectories of a target not read as a tree) are left
// out here too. Bytes are hashed as stored, gzip'd ones compressed.
func ContentHash(opts ReadOptions, mounts ...Mount) string {
	o := opts.withDefaults()
	gens := make([]*Generation, len(mounts))
	for i, m := range mounts {
		files := map[string][]byte{}
		for k, v := range m.Data {
			files[k] = []byte(v)
		}
		for k, v := range m.BinaryData {
			files[k] = v
		}
		g := &Generation{Path: m.Path}
		if m.Key != "" {
			g.Files = []Entry{{Name: filepath.Base(m.Path), Data: files[m.Key]}}
		} else {
			g.Dir = true
			for name, data := range files {
				if o.takes(name) {
					g.Files = append(g.Files, Entry{Name: name, Data: data})
				}
			}
			slices.SortFunc(g.Files, func(a, b Entry) int { return comparePaths(a.Name, b.Name) })
		}
		g.Hash = hashFiles(g.Files)
		gens[i] = g
	}
	return newContents(gens).Hash
}

// takes reports whether a read with o reads the file at rel, a path
// relative to a directory target.
func (o ReadOptions) takes(rel string) bool {
	dirs := strings.Split(rel, "/")
	dirs = dirs[:len(dirs)-1]
	if len(dirs) > 0 && !o.Tree {
		return false
	}
	for i := range dirs {
		if o.SelectDir(strings.Join(dirs[:i+1], "/")) != "" {
			return false
		}
	}
	return o.Select(rel) == ""
}
