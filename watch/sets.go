package watch

import (
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Two producers stamp the parts of a set with a version marker, and each
// needs its own check; which one a set needs is the producer's to say:
//
//   - one that stamps every part at every publish, the same version in
//     all (a single writer of a projected volume's ConfigMaps): parts that
//     disagree are a set kubelet has updated in part, held back until
//     they agree (MarkersAgree);
//   - prow's updateconfig, which writes the merge commit into VERSION of
//     only the ConfigMaps a merge touched: with partitioned ConfigMaps a
//     merge lands in one shard and the others keep an older VERSION, the
//     normal state of the set, never one to hold back. Nothing in the
//     parts can tell a shard the merge did not touch from one kubelet has
//     not updated yet; Options.Settle waits out a burst of updates, and
//     MarkersMove reports a part that goes back to a version it held
//     before (prow's config bootstrapper racing updateconfig).
//
// Only a producer that publishes a manifest of its parts after the parts
// can make a set of ConfigMaps atomic: package configset holds both
// halves, the producer and the check of what a pod mounted.

// MarkersAgree returns a check for Options.Consistent, for a producer that
// stamps every part: the targets form one set only when every directory
// target holds a file named name (at any depth of a tree) and all the
// files of that name, a file target's included, hold the same version,
// surrounding space aside. A projected volume of several ConfigMaps maps
// each one's marker to a path of its own. A set whose markers disagree,
// or a target without one (a ConfigMap kubelet has not fetched yet), is
// pending, never served. It does not fit prow's updateconfig
// (MarkersMove does).
func MarkersAgree(name string) func(c *Contents) error {
	return func(c *Contents) error {
		var first, firstAt string
		return eachMarker(c, name, true, func(at, v string) error {
			if firstAt == "" {
				first, firstAt = v, at
			} else if v != first {
				return fmt.Errorf("%s holds version %q where %s holds %q", at, v, firstAt, first)
			}
			return nil
		})
	}
}

// eachMarker calls fn with every file named name of c, its path and the
// version it holds; a directory target without one is an error when
// required.
func eachMarker(c *Contents, name string, required bool, fn func(at, version string) error) error {
	for _, g := range c.Generations {
		found := false
		for _, f := range g.Files {
			if path.Base(f.Name) != name {
				continue
			}
			found = true
			at := g.Path
			if g.Dir {
				at = filepath.Join(g.Path, filepath.FromSlash(f.Name))
			}
			if err := fn(at, string(bytes.TrimSpace(f.Data))); err != nil {
				return err
			}
		}
		switch missing := !g.Dir && g.Resolved == ""; {
		case found || !required:
		case missing: // AllowMissing: kubelet has not fetched it yet
			return fmt.Errorf("%s holds no %s marker: it does not exist", g.Path, name)
		case g.Dir:
			return fmt.Errorf("%s holds no %s marker", g.Path, name)
		}
	}
	return nil
}

// Rollback is a part of a set whose version marker went back to a version
// it held before.
type Rollback struct {
	// Part is the marker's path.
	Part string
	// From is the version it held; To, the older one it holds now.
	From, To string
}

func (r Rollback) String() string {
	return fmt.Sprintf("%s went back from %q to %q", r.Part, r.From, r.To)
}

// RollbackError, returned by a check for Options.Consistent, reports parts
// that went back to an older version (Reload.Rollbacks,
// <subsystem>_automatic_reload_rollbacks_total). The content is loaded all
// the same (MarkersMove: it is what the cluster holds) unless Refuse is
// set (configset.Check: a manifest older than one served), which makes
// the attempt a failure, the previous value kept.
type RollbackError struct {
	Rollbacks []Rollback
	Refuse    bool
}

func (e *RollbackError) Error() string {
	if len(e.Rollbacks) == 0 {
		return "a part went back to an older version"
	}
	msgs := make([]string, len(e.Rollbacks))
	for i, r := range e.Rollbacks {
		msgs[i] = r.String()
	}
	return strings.Join(msgs, "; ")
}

// maxMarkerHistory bounds the versions MarkersMove remembers per part.
const maxMarkerHistory = 64

// MarkersMove returns a check for Options.Consistent, for a producer that
// stamps only the parts it updates, as prow's updateconfig writes VERSION:
// the parts' markers may differ, and the set is never held back for it
// (use Options.Settle to take a merge's updates as one reload). A part
// without the marker is served all the same, its history kept: prow's
// config-bootstrapper, run over ConfigMaps that exist, deletes VERSION
// from them (updateconfig's Update counts it among the stale keys), and
// only the next merge that touches a part writes it again.
// Each part's versions are ordered as they first appeared: one that goes
// back to a version older than the one it held (prow's config bootstrapper
// racing updateconfig) is a rollback, and one that comes back to the
// newer version after is not. The set is loaded all the same (it is what
// the cluster holds), and the reload reports the rollback
// (Reload.Rollbacks), whatever becomes of it. The check keeps what it saw,
// the last 64 versions of each part: use one per watcher.
func MarkersMove(name string) func(c *Contents) error {
	var mu sync.Mutex
	type history struct {
		order   map[string]uint64 // version → when it first appeared
		current string
	}
	parts := map[string]*history{}
	var clock uint64
	return func(c *Contents) error {
		type seen struct{ at, version string }
		var now []seen
		_ = eachMarker(c, name, false, func(at, v string) error {
			now = append(now, seen{at, v})
			return nil
		})
		mu.Lock()
		defer mu.Unlock()
		var back []Rollback
		for _, p := range now {
			h := parts[p.at]
			if h == nil {
				h = &history{order: map[string]uint64{}}
				parts[p.at] = h
			}
			if p.version == h.current {
				continue
			}
			first, known := h.order[p.version]
			if known && h.current != "" && first < h.order[h.current] {
				back = append(back, Rollback{Part: p.at, From: h.current, To: p.version})
			}
			if !known {
				clock++
				h.order[p.version] = clock
				if len(h.order) > maxMarkerHistory {
					oldest := p.version
					for v, at := range h.order {
						if at < h.order[oldest] {
							oldest = v
						}
					}
					delete(h.order, oldest)
				}
			}
			h.current = p.version
		}
		if len(back) > 0 {
			return &RollbackError{Rollbacks: back}
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
