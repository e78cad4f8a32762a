// Package watch keeps configuration read from mounted files live, with full
// knowledge of how kubelet's AtomicWriter and git-sync publish them.
//
// ReadContents takes a consistent snapshot of files and directories: it
// pins every target's generation (the timestamped directory behind ..data,
// or the checkout behind a root link), reads inside them, and checks that
// none changed while it read, reading the whole set again if one did, so a
// snapshot never mixes two updates, even of several targets under one
// link. A directory may be read as a tree; gzip'd files are decompressed;
// every read is bounded in bytes, files and depth.
//
// A Watcher combines fsnotify on the directories that hold the anchor links
// with polling, treats events as hints, hashes what it reads, loads and
// validates new content before publishing it, keeps the last good value
// when new content is invalid, and counts reloads in component-base
// metrics:
//
//	w, err := watch.New(watch.Options[*Config]{
//		Paths: []string{"/etc/mycomp"}, // a ConfigMap mount
//		Load: func(ctx context.Context, c *watch.Contents) (*Config, error) {
//			data, err := c.ReadFile("/etc/mycomp/config.yaml")
//			if err != nil {
//				return nil, err
//			}
//			return parse(data) // decode, default, validate
//		},
//	})
//	if err != nil {
//		return err
//	}
//	if err := w.Start(ctx); err != nil {
//		return err // the initial configuration is invalid: refuse to start
//	}
//	cfg := w.Current() // lock-free, from any goroutine
//
// Parts of a set that kubelet updates one at a time are checked by what
// their producer writes (Options.Consistent: MarkersAgree, MarkersMove,
// or package configset's manifest, the one way to make a set atomic), and
// ContentHash computes from ConfigMap objects the hash a watcher reports
// for their mounts.
//
// Package manifests builds on it to keep a directory of Kubernetes-style
// manifests live as one validated set.
package watch
