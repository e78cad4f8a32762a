package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/watch"
	"github.com/stratacfg/strata/watch/configset"
)

// The CI configuration trees of case 8: ci-operator configurations keyed
// by their zz_generated_metadata, served while they reload, three ways:
//
//   - strata: a watch.Watcher over every source, read as one snapshot,
//     published with an atomic pointer (examples/configagent);
//   - ci-tools-style: ci-tools' ConfigAgent, its write lock held across
//     the whole reload (walk, read, parse, index), readers taking the
//     read lock; a ConfigMap mount's reload is triggered by the Create of
//     its ..data link, a git-sync checkout's by its link;
//   - prow-style: prow's config agent, which loads outside its lock and
//     swaps the result in, one full reload per mount that changed.

// CIIdentity names a configuration: its zz_generated_metadata.
type CIIdentity struct {
	Org     string `json:"org"`
	Repo    string `json:"repo"`
	Branch  string `json:"branch"`
	Variant string `json:"variant,omitempty"`
}

// CIConfigs are loaded configurations by identity. Once published they
// are never changed.
type CIConfigs map[CIIdentity][]byte

// CIConfig is a ci-operator configuration of org/repo@branch at generation
// gen, padded with tests to about size bytes.
func CIConfig(org, repo, branch string, gen, size int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "build_root:\n  image_stream_tag:\n    name: release\n    namespace: openshift\n    tag: golang-1.22\ntests:\n")
	for i := 0; b.Len() < size-200; i++ {
		fmt.Fprintf(&b, "- as: unit-%d\n  commands: make test GENERATION=%d SHARD=%d\n  container:\n    from: src\n", i, gen, i)
	}
	fmt.Fprintf(&b, "zz_generated_metadata:\n  org: %s\n  repo: %s\n  branch: %s\n", org, repo, branch)
	return b.String()
}

// GenerationOf returns the generation a configuration holds.
func GenerationOf(data []byte) int {
	_, rest, _ := strings.Cut(string(data), "GENERATION=")
	var n int
	fmt.Sscanf(rest, "%d", &n)
	return n
}

// indexConfig parses one file into cs, naming it in errors.
func indexConfig(cs CIConfigs, name string, data []byte) error {
	var doc struct {
		Meta *CIIdentity `json:"zz_generated_metadata"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if doc.Meta == nil {
		return fmt.Errorf("%s: no zz_generated_metadata", name)
	}
	if _, dup := cs[*doc.Meta]; dup {
		return fmt.Errorf("%s: %v configured twice", name, *doc.Meta)
	}
	cs[*doc.Meta] = data
	return nil
}

// isConfig is the peers' choice of files: .yaml and .yml, no name under
// kubelet's ..data or a timestamped directory.
func isConfig(name string) bool {
	return !strings.HasPrefix(name, "..") && (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml"))
}

// loadPaths walks each root as the peers do (filepath.WalkDir through
// the mount's links, dot-dot names skipped) and indexes every
// configuration.
func loadPaths(roots []string) (CIConfigs, error) {
	cs := CIConfigs{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != root && strings.HasPrefix(d.Name(), "..") {
					return filepath.SkipDir
				}
				return nil
			}
			if !isConfig(d.Name()) {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return indexConfig(cs, p, data)
		})
		if err != nil {
			return nil, err
		}
	}
	return cs, nil
}

// TreeServer is one way of keeping configurations loaded and serving them.
type TreeServer interface {
	// Get looks a configuration up, as a request does.
	Get(id CIIdentity) ([]byte, bool)
	// Stop stops watching.
	Stop()
}

// TreeOptions say what a TreeServer serves and whom it tells.
type TreeOptions struct {
	// Roots are the sources: ConfigMap mounts or a git-sync root's
	// subdirectory (ci-operator/config behind the link).
	Roots []string
	// VersionKey, for strata, is the marker every source holds, in every
	// one at every publish (MarkersAgree) or, with Touched, only in
	// those a publish changed, as prow's updateconfig writes it
	// (MarkersMove, with Settle).
	VersionKey string
	Touched    bool
	Settle     time.Duration
	// Manifest, for strata, is where the manifest of a set
	// watch/configset publishes is mounted; Roots are its parts.
	Manifest string
	// Published, when set, is called with each snapshot published, in
	// order.
	Published func(CIConfigs)
}

// StrataTrees serves with strata's watcher, as examples/configagent does.
func StrataTrees(o TreeOptions) (TreeServer, error) {
	paths := o.Roots
	if o.Manifest != "" {
		paths = append(slices.Clip(paths), o.Manifest)
	}
	opts := watch.Options[CIConfigs]{
		Paths:  paths,
		Settle: o.Settle,
		Read: watch.ReadOptions{Tree: true, MaxFiles: 100_000, MaxTotalBytes: 1 << 30, Select: func(rel string) string {
			if name := path.Base(rel); name == o.VersionKey || isConfig(name) || o.Manifest != "" && rel == configset.ManifestKey {
				return ""
			}
			return "not a configuration"
		}},
		Load: func(_ context.Context, c *watch.Contents) (CIConfigs, error) {
			cs := CIConfigs{}
			for _, g := range c.Generations {
				for _, f := range g.Files {
					if path.Base(f.Name) == o.VersionKey || g.Path == o.Manifest {
						continue
					}
					if err := indexConfig(cs, filepath.Join(g.Path, f.Name), f.Data); err != nil {
						return nil, err
					}
				}
			}
			return cs, nil
		},
		OnReload: func(r watch.Reload[CIConfigs]) {
			if r.Status == watch.StatusSuccess && o.Published != nil {
				o.Published(r.Value)
			}
		},
	}
	switch {
	case o.Manifest != "":
		opts.Consistent = configset.Check(o.Manifest, o.Roots...)
	case o.VersionKey != "" && o.Touched:
		opts.Consistent = watch.MarkersMove(o.VersionKey)
	case o.VersionKey != "":
		opts.Consistent = watch.MarkersAgree(o.VersionKey)
	}
	w, err := watch.New(opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.Start(ctx); err != nil {
		cancel()
		return nil, err
	}
	return &strataTrees{w: w, cancel: cancel}, nil
}

type strataTrees struct {
	w      *watch.Watcher[CIConfigs]
	cancel context.CancelFunc
}

func (s *strataTrees) Get(id CIIdentity) ([]byte, bool) {
	data, ok := s.w.Current()[id]
	return data, ok
}

func (s *strataTrees) Stop() {
	s.cancel()
	<-s.w.Done()
}

// peerTrees is ci-tools' or prow's agent: locked says whether the write
// lock is held across the load (ci-tools) or only around the swap (prow).
type peerTrees struct {
	o      TreeOptions
	locked bool
	mu     sync.RWMutex
	cur    CIConfigs
	fsw    *fsnotify.Watcher
	done   chan struct{}
	errs   atomic.Int64
}

// CIToolsTrees is ci-tools' ConfigAgent: the write lock held for the whole
// reload, one reload per ConfigMap mount's ..data swap (or per git-sync
// link swap).
func CIToolsTrees(o TreeOptions) (TreeServer, error) { return startPeer(o, true) }

// ProwTrees is prow's config agent: each mount that changed loads
// everything again outside the lock and swaps it in.
func ProwTrees(o TreeOptions) (TreeServer, error) { return startPeer(o, false) }

func startPeer(o TreeOptions, locked bool) (TreeServer, error) {
	p := &peerTrees{o: o, locked: locked, done: make(chan struct{})}
	var err error
	if p.fsw, err = fsnotify.NewWatcher(); err != nil {
		return nil, err
	}
	// The directory holding each anchor: a mount's ..data, or the
	// git-sync link above a root.
	anchors := map[string]bool{}
	for _, r := range o.Roots {
		dir, link := r, watch.DataLink
		if _, err := os.Lstat(filepath.Join(r, watch.DataLink)); err != nil {
			dir, link = gitSyncLink(r)
		}
		if err := p.fsw.Add(dir); err != nil {
			return nil, err
		}
		anchors[filepath.Join(dir, link)] = true
	}
	// Watched first, then read: an update that lands between the two is
	// seen, not lost until the next one. The case measures how a peer
	// reads an update, not a start-up race, which made the first publish
	// of the prow-style row go unseen now and then.
	cs, err := loadPaths(o.Roots)
	if err != nil {
		p.fsw.Close()
		return nil, err
	}
	p.cur = cs
	go p.run(anchors)
	return p, nil
}

// gitSyncLink returns the directory holding the symbolic link on the path
// to root, and the link's name.
func gitSyncLink(root string) (string, string) {
	for p := root; p != filepath.Dir(p); p = filepath.Dir(p) {
		if st, err := os.Lstat(p); err == nil && st.Mode()&os.ModeSymlink != 0 {
			return filepath.Dir(p), filepath.Base(p)
		}
	}
	return filepath.Dir(root), filepath.Base(root)
}

func (p *peerTrees) run(anchors map[string]bool) {
	defer close(p.done)
	for {
		select {
		case ev, ok := <-p.fsw.Events:
			if !ok {
				return
			}
			if anchors[ev.Name] && ev.Op&(fsnotify.Create|fsnotify.Rename) != 0 {
				p.reload()
			}
		case _, ok := <-p.fsw.Errors:
			if !ok {
				return
			}
		}
	}
}

// reload loads every root again: ci-tools under the write lock, prow
// outside it. An error keeps what is served.
func (p *peerTrees) reload() {
	if p.locked {
		p.mu.Lock()
		defer p.mu.Unlock()
		cs, err := loadPaths(p.o.Roots)
		if err != nil {
			p.errs.Add(1)
			return
		}
		p.cur = cs
		if p.o.Published != nil {
			p.o.Published(cs)
		}
		return
	}
	cs, err := loadPaths(p.o.Roots)
	if err != nil {
		p.errs.Add(1)
		return
	}
	p.mu.Lock()
	p.cur = cs
	p.mu.Unlock()
	if p.o.Published != nil {
		p.o.Published(cs)
	}
}

// Failed returns how many reloads failed, keeping what was served.
func (p *peerTrees) Failed() int64 { return p.errs.Load() }

func (p *peerTrees) Get(id CIIdentity) ([]byte, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	data, ok := p.cur[id]
	return data, ok
}

func (p *peerTrees) Stop() {
	p.fsw.Close()
	<-p.done
}

// ErrMixed is what a check of a snapshot reports when its configurations
// hold more than one generation.
var ErrMixed = errors.New("a snapshot mixes generations")

// Generations returns the one generation every configuration of cs holds,
// or ErrMixed.
func Generations(cs CIConfigs) (int, error) {
	gen := -1
	for _, data := range cs {
		g := GenerationOf(data)
		if gen >= 0 && g != gen {
			return 0, ErrMixed
		}
		gen = g
	}
	return gen, nil
}
