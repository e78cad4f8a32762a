package layers

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/stratacfg/strata/watch"
)

// WatchOptions tune Component.Watch.
type WatchOptions[T runtime.Object] struct {
	// PollInterval is how often the files are read whatever file events
	// say; watch.DefaultPollInterval when zero.
	PollInterval time.Duration
	// Metrics, when set, count reloads.
	Metrics *watch.Metrics
	// OnReload, when set, is called after every reload attempt that is
	// not a no-op, the initial load included, in order. The caller then
	// owns the reporting: neither Watch nor the watcher logs the
	// attempts it reports at the default verbosity.
	OnReload func(watch.Reload[*Loaded[T]])
	// From, when set, is the configuration already loaded from the same
	// command line (what Execute passed to run): the watcher starts from
	// it and loads again only files that changed since.
	From *Loaded[T]
	// Consistent, when set, checks that the files read are a set whose
	// parts fit together before they are loaded: watch.MarkersAgree holds
	// back a projected volume kubelet has updated in part (see
	// watch.Options.Consistent).
	Consistent func(c *watch.Contents) error
	// Markers names the files Consistent reads beside the drop-ins
	// (watch.MarkersAgree's name, "VERSION"): they are read wherever they
	// are in --config-dir's tree, so that each ConfigMap of a projected
	// volume can keep its own in a directory of its own, and never taken
	// as drop-ins. Nothing else the drop-in policy leaves out is read.
	Markers []string
	// PendingTimeout is how long files may stay inconsistent before the
	// attempt is reported as a failure; watch.DefaultPendingTimeout when
	// zero. The running configuration stays meanwhile.
	PendingTimeout time.Duration
	// Settle, when set, waits out a burst of updates (kubelet updating the
	// ConfigMaps of several mounts one after another) so that it is one
	// reload (see watch.Options.Settle).
	Settle time.Duration
}

// Watch loads the configuration the command line names and keeps it live:
// the watcher reads --config, --config-dir and --instance-config as one
// consistent generation each (ConfigMap mounts and git-sync checkouts
// included), loads them with the same command line, and publishes the
// result when it is valid. A reload that changes a restart-only key keeps
// its running value and lists the key in RestartRequired (see Reload); an
// invalid one is refused and the running configuration stays. Flags keep
// the values they were given.
//
// Watch returns once the first load has succeeded, with the watcher
// running until ctx is done; read the configuration with Current. An
// invalid first load is an error: refuse to start. Given From, there is
// no first load unless the files changed since From was loaded, and then
// an invalid one is refused as any reload is, From staying in effect.
func (c *Component[T]) Watch(ctx context.Context, cl *CommandLine, o WatchOptions[T]) (*watch.Watcher[*Loaded[T]], error) {
	paths := cl.Config.paths()
	if len(paths) == 0 {
		return nil, errors.New("nothing to watch: no --config, --config-dir or --instance-config")
	}
	log := klog.FromContext(ctx).WithName(c.Name)
	var fromHash string
	if o.From != nil {
		fromHash = o.From.Hash
	}
	read := c.readOptions(cl)
	if len(o.Markers) > 0 {
		// The markers beside the drop-ins reach the check, at any depth;
		// below the top, only they, unless the policy reads subdirectories.
		take, recursive := read.Select, c.DropIns.Recursive
		read.Tree = true
		read.Select = func(rel string) string {
			switch {
			case slices.Contains(o.Markers, path.Base(rel)):
				return ""
			case !recursive && strings.Contains(rel, "/"):
				return "a directory"
			}
			return take(rel)
		}
	}
	var w *watch.Watcher[*Loaded[T]]
	w, err := watch.New(watch.Options[*Loaded[T]]{
		Paths: paths,
		// Read as Load reads them.
		Read:           read,
		PollInterval:   o.PollInterval,
		Metrics:        o.Metrics,
		Consistent:     o.Consistent,
		PendingTimeout: o.PendingTimeout,
		Settle:         o.Settle,
		// Started from what was loaded, when the caller has it.
		Initial:     o.From,
		InitialHash: fromHash,
		// Built from the generation the watcher read, never from the
		// files of two updates.
		Load: func(ctx context.Context, files *watch.Contents) (*Loaded[T], error) {
			return c.Reload(ctx, cl, files, w.Current())
		},
		OnReload: func(r watch.Reload[*Loaded[T]]) {
			if o.OnReload == nil && r.Status == watch.StatusSuccess && !r.Initial && len(r.Value.RestartRequired) > 0 {
				log.Info("Configuration reloaded; a restart is required to apply some keys", "keys", strings.Join(r.Value.RestartRequired, ","))
			}
			if o.OnReload != nil {
				o.OnReload(r)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	return w, nil
}
