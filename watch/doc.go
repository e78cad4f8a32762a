// Package watch keeps configuration read from mounted files live, with full
// knowledge of how kubelet's AtomicWriter and git-sync publish them.
//
// Read takes a consistent snapshot of a file or directory: it pins one
// generation (the timestamped directory behind ..data, or the checkout
// behind a root link), reads inside it, and checks that the generation did
// not change while it read, so a snapshot never mixes two updates.
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
// LoadManifests and Manifests load a directory of Kubernetes-style
// manifests as one validated set, the way kube-apiserver loads
// manifest-based admission configuration.
package watch
