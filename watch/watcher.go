package watch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Defaults of Options.
const (
	DefaultPollInterval = time.Minute
	defaultDebounce     = 10 * time.Millisecond
	// MinPollInterval is the shortest poll interval a watcher accepts:
	// below it, reading every target on every tick is a busy loop.
	MinPollInterval = 10 * time.Millisecond
)

// CheckPollInterval returns an error for a poll interval a watcher
// refuses: negative, or positive but under MinPollInterval. Zero means
// DefaultPollInterval. A command line checks its flag with it, so that
// --poll-interval=1ns or -1s is a usage error, not a busy loop or a
// silent minute.
func CheckPollInterval(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("the poll interval %s is negative", d)
	case d > 0 && d < MinPollInterval:
		return fmt.Errorf("the poll interval %s is under the minimum of %s", d, MinPollInterval)
	}
	return nil
}

// Options configure a Watcher.
type Options[T any] struct {
	// Paths are the targets: files, ConfigMap-style mount directories
	// (holding ..data), projected volumes, directories behind a root
	// link (git-sync), or plain files and directories.
	Paths []string
	// Load turns what was read into the value to publish: decode,
	// default, validate. It must use only c, so that the value is built
	// from one generation. An error refuses the content: the previous
	// value stays, and the same content is not tried again until it
	// changes. Wrap an error with Transient to have the content retried.
	Load func(ctx context.Context, c *Contents) (T, error)
	// OnReload, when set, is called after every reload attempt that is
	// not a no-op, the initial load included, in order, from the
	// watcher's goroutine (from Start for the initial load). The caller
	// then owns the reporting: the watcher logs the attempts it reports
	// only at verbosity 2.
	OnReload func(Reload[T])
	// Initial and InitialHash, when InitialHash is set, are a value the
	// caller already loaded and the hash of the content it loaded it
	// from (Contents.Hash): the watcher starts from them. Start then
	// loads only if the targets changed since, and a load that fails
	// leaves Initial in effect instead of failing Start; no initial
	// attempt is reported.
	Initial     T
	InitialHash string
	// PollInterval is how often the targets are read whatever events
	// say; zero means DefaultPollInterval.
	PollInterval time.Duration
	// Debounce is how long after the first event of a burst the targets
	// are read, unless the event moved a link the last read went through
	// (kubelet's ..data, a git-sync root link): the generation a link
	// names is complete before the link moves, so it is read at once.
	// Zero means 10 ms. One kubelet update fires
	// about seven events.
	Debounce time.Duration
	// Read tunes each read.
	Read ReadOptions
	// Consistent, when set, checks that what was read is a set whose
	// parts fit together before Load runs (MarkersAgree, MarkersMove,
	// configset.Check: see their doc for which producer each fits); its
	// error makes the attempt pending, as Pending does, but for a
	// *RollbackError, which reports the rollback and loads the content,
	// or refuses it when the error says so.
	Consistent func(c *Contents) error
	// PendingTimeout is how long content may stay pending (see Pending)
	// before the attempt is reported as a failure; zero means
	// DefaultPendingTimeout.
	PendingTimeout time.Duration
	// Settle, when set, replaces Debounce: every event, a link swap
	// included, waits until no further event came for Settle (at most
	// ten times Settle after the first of a burst), so that a burst of
	// updates across all targets (kubelet updating the ConfigMaps of
	// several mounts one after another) is one reload.
	Settle time.Duration
	// Metrics, when set, count reloads.
	Metrics *Metrics
	// MetricsHash, when set, is the hash last_config_info reports for a
	// value in effect, instead of the content hash (manifests.Watch
	// reports the hash kube-apiserver reports for the same directory).
	MetricsHash func(T) string
	// Clock is the clock for polls, debouncing and retries; nil means
	// the real clock.
	Clock clock.WithTicker

	// newNotifier is a seam for tests; nil means fsnotify.
	newNotifier func() (notifier, error)
}

// DefaultPendingTimeout is how long content may stay pending before the
// attempt is a failure: kubelet updates the ConfigMaps of a pod's volumes
// within about a minute of each other.
const DefaultPendingTimeout = 5 * time.Minute

// Reload reports one reload attempt.
type Reload[T any] struct {
	// Status is StatusSuccess, StatusFailure or StatusPending.
	Status string
	// Initial is true for the load Start makes.
	Initial bool
	// Hash is the hash of the content that was loaded or refused; empty
	// when reading failed.
	Hash string
	// Value is the value in effect after the attempt: the new one on
	// success, the previous one on failure.
	Value T
	// Err says why the attempt failed.
	Err error
	// Time is when the attempt ended.
	Time time.Time
	// Duration is how long loading took: Consistent and Load, not the
	// read; zero when reading failed.
	Duration time.Duration
	// ReadDuration is how long reading took before the attempt: the
	// files, their decompression and the pins that keep a read
	// consistent (until it failed, when it did).
	ReadDuration time.Duration
	// Rollbacks are the parts whose version went back (MarkersMove),
	// whether the content then loaded or not.
	Rollbacks []Rollback
}

// Watcher keeps a value loaded from files up to date. Read the value with
// Current from any goroutine; it never blocks and never allocates.
type Watcher[T any] struct {
	opts    Options[T]
	clock   clock.WithTicker
	current atomic.Pointer[published[T]]
	refused atomic.Pointer[error] // the last attempt refused since the last success
	resync  chan struct{}
	done    chan struct{}
	logger  klog.Logger

	warnings []string

	// Owned by the goroutine that checks.
	resolved []string // what the last read of each path resolved to
	// subdirs are the directories below a tree target that its last read
	// went into: inotify is not recursive, so each is watched too.
	subdirs     []string
	badID       string // the identity of the content last refused
	lastFailure string
	watchErr    string
	// watchedDirs is what each watched directory was when it was
	// watched: a directory removed and made again under the same name
	// is another, and its old watch sees nothing of it.
	watchedDirs  map[string]os.FileInfo
	pendingSince time.Time  // the first pending attempt since the last success or failure
	first        chan error // while Start waits out a pending first load: how it ended
}

type published[T any] struct {
	value T
	hash  string
	id    string // identity of what it was loaded from; "": the hash alone (Initial)
}

// identity tells c from the content before it: its hash, and the links a
// read passed over, which no file read shows but Load may refuse
// (manifests.Load refuses a link to a directory with a manifest's name),
// so that one added is a change and one removed undoes a refusal.
func identity(c *Contents) string {
	h := sha256.New()
	links := 0
	for i, g := range c.Generations {
		for _, s := range g.Skipped {
			if s.Link {
				fmt.Fprintf(h, "%d\x00%s\x00%s\x00", i, s.Name, s.Reason)
				links++
			}
		}
	}
	if links == 0 {
		return c.Hash
	}
	return c.Hash + "+" + hex.EncodeToString(h.Sum(nil))
}

// transient marks a Load error whose content should be tried again.
type transient struct{ err error }

func (t transient) Error() string { return t.err.Error() }
func (t transient) Unwrap() error { return t.err }

// Transient marks err, returned by Load, as not caused by the content: the
// watcher retries instead of remembering the content as invalid.
func Transient(err error) error { return transient{err} }

// pending marks content whose parts do not agree yet.
type pending struct{ err error }

func (p pending) Error() string { return p.err.Error() }
func (p pending) Unwrap() error { return p.err }

// Pending marks err, returned by Load or Consistent, as content that is
// not consistent yet rather than invalid: the parts of a set that must
// agree (shards of one repository, the ConfigMaps of a projected volume,
// which kubelet updates one at a time, in no set order) do not agree yet.
// The watcher keeps the value in effect, reports the attempt as pending
// (StatusPending, logged as information, not as an error), reads again on
// the next event, poll or retry, and reports a failure only when the
// content stayed pending for PendingTimeout. A first load that is pending
// makes Start wait.
func Pending(err error) error { return pending{err} }

// isPending reports whether err marks content not consistent yet.
func isPending(err error) bool { return errors.As(err, new(pending)) }

// New returns a watcher; Start starts it.
func New[T any](opts Options[T]) (*Watcher[T], error) {
	if len(opts.Paths) == 0 {
		return nil, errors.New("watch: no paths")
	}
	if opts.Load == nil {
		return nil, errors.New("watch: no Load function")
	}
	if err := CheckPollInterval(opts.PollInterval); err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Debounce <= 0 {
		opts.Debounce = defaultDebounce
	}
	if opts.PendingTimeout <= 0 {
		opts.PendingTimeout = DefaultPendingTimeout
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.newNotifier == nil {
		opts.newNotifier = newFSNotifier
	}
	return &Watcher[T]{
		opts:   opts,
		clock:  opts.Clock,
		resync: make(chan struct{}, 1),
		done:   make(chan struct{}),
		logger: klog.Background(),
	}, nil
}

// Start watches the targets, loads them once, and keeps the value up to
// date until ctx is done:
//
//  1. Register the watches (fsnotify on the directories that hold the
//     anchor links). If that fails, poll only, and try again at each
//     poll. A file target that is a mount point of its own can never
//     produce an event: that is logged and listed in Warnings.
//  2. Load once, right after the watch is registered, so no change made
//     in between is missed. If the initial load fails, Start returns the
//     error and watches nothing: refuse to start on an invalid
//     configuration. If it is pending (Pending), Start goes on to (3)
//     and waits until a load succeeds (nil), fails or stays pending past
//     PendingTimeout (the error), or ctx is done.
//  3. In the background: on an event, check at once when a link the last
//     read resolved now names another generation, and otherwise wait
//     Debounce (or Settle), then check; check at every poll, on Resync,
//     and after a failed read or a pending attempt with backoff.
//
// A check reads every target consistently and hashes it; equal to the
// value in effect, or to content refused before, is a no-op. Otherwise it
// loads, and publishes on success. Nothing that happens after start stops
// the watcher, exits or panics: errors are logged, counted and reported.
func (w *Watcher[T]) Start(ctx context.Context) error {
	w.logger = klog.FromContext(ctx).WithName("watch")
	// (1)
	n, err := w.opts.newNotifier()
	if err != nil {
		w.logger.Info("Watching for changes failed; polling only", "paths", w.opts.Paths, "interval", w.opts.PollInterval, "err", err)
		n = nil
	}
	w.ensureWatches(n)
	w.warnMountPoints()
	preset := w.opts.InitialHash != ""
	if preset {
		w.current.Store(&published[T]{value: w.opts.Initial, hash: w.opts.InitialHash})
		metricHash := w.opts.InitialHash
		if w.opts.MetricsHash != nil {
			metricHash = w.opts.MetricsHash(w.opts.Initial)
		}
		w.opts.Metrics.inEffect(metricHash) // served from now on, whatever the first read finds
	}
	// (2)
	if err := w.check(ctx); err != nil && !preset {
		if !isPending(err) {
			if n != nil {
				n.Close()
			}
			close(w.done)
			return err
		}
		first := make(chan error, 1)
		w.first = first
		runCtx, cancel := context.WithCancel(ctx)
		go w.run(runCtx, cancel, n)
		select {
		case err = <-first:
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
		if err != nil {
			cancel()
			<-w.done
		}
		return err
	}
	// The check may have found directories to watch that did not exist
	// before (a path created since); what changed in them between the
	// read and the watch is caught by one more check.
	if w.ensureWatches(n) {
		w.Resync()
	}
	// (3)
	go w.run(ctx, func() {}, n)
	return nil
}

// Warnings lists what Start found that will slow the watcher down: a
// file target that is a mount point of its own (a subPath or single-file
// bind mount), whose changes no event announces.
func (w *Watcher[T]) Warnings() []string { return slices.Clone(w.warnings) }

// warnMountPoints notes each file target that is a mount point.
func (w *Watcher[T]) warnMountPoints() {
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo") // none: the devices alone tell
	for _, p := range w.opts.Paths {
		if mountPoint(p, mountinfo) {
			msg := fmt.Sprintf("%s is a mount point of its own (a subPath or single-file bind mount): no file event announces its changes, only polling every %s sees them, and kubelet never updates a ConfigMap or Secret mounted with subPath", p, w.opts.PollInterval)
			w.warnings = append(w.warnings, msg)
			w.logger.Info("A target can never produce an event; polling only", "path", p, "interval", w.opts.PollInterval, "why", msg)
		}
	}
}

// mountPoint reports whether path is a regular file (not a link) that is
// a mount point: listed as one in mountinfo (the content of
// /proc/self/mountinfo), or on another device than its directory.
func mountPoint(path string, mountinfo []byte) bool {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return false
	}
	abs, err := filepath.Abs(filepath.Join(dir, filepath.Base(path)))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(mountinfo)) {
		// id parent major:minor root mountpoint options ...
		if f := strings.Fields(line); len(f) > 4 && unescapeMount(f[4]) == abs {
			return true
		}
	}
	dst, err := os.Stat(dir)
	if err != nil {
		return false
	}
	a, ok1 := st.Sys().(*syscall.Stat_t)
	b, ok2 := dst.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && a.Dev != b.Dev
}

// unescapeMount undoes the octal escapes (\040 for a space) of a path in
// /proc/self/mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Current returns the value in effect, or the zero T before Start
// succeeded.
func (w *Watcher[T]) Current() T {
	if p := w.current.Load(); p != nil {
		return p.value
	}
	var zero T
	return zero
}

// Hash returns the content hash of the value in effect.
func (w *Watcher[T]) Hash() string {
	if p := w.current.Load(); p != nil {
		return p.hash
	}
	return ""
}

// Resync asks for a check now: an identical rewrite fires no event, and a
// caller may know of a change the watcher cannot see. It does not block.
func (w *Watcher[T]) Resync() {
	select {
	case w.resync <- struct{}{}:
	default:
	}
}

// Refused returns the error of the last attempt refused since the last
// one applied, nil when the last attempt was applied: what /statusz says
// of the last refused reload (Component.WatchedZPages).
func (w *Watcher[T]) Refused() error {
	if err := w.refused.Load(); err != nil {
		return *err
	}
	return nil
}

// Done is closed when the watcher has stopped: Start failed, or its
// context is done and the background goroutine has returned.
func (w *Watcher[T]) Done() <-chan struct{} { return w.done }

func (w *Watcher[T]) run(ctx context.Context, cancel context.CancelFunc, n notifier) {
	defer close(w.done)
	defer cancel()
	defer func() {
		if n != nil {
			n.Close()
		}
	}()
	poll := w.clock.NewTicker(w.opts.PollInterval)
	defer poll.Stop()
	var (
		debounce, retry   clock.Timer
		debounceC, retryC <-chan time.Time
		backoff           time.Duration
		burst             time.Time // the first event of a burst, with Settle
	)
	stop := func(t clock.Timer) {
		if t != nil {
			t.Stop()
		}
	}
	defer func() { stop(debounce); stop(retry) }()

	// A read failed, Load asked for a retry, or the content is pending:
	// try again soon, backing off up to the poll interval, and no later
	// than when pending content times out.
	retryLater := func() {
		backoff = min(max(2*backoff, 10*w.opts.Debounce), w.opts.PollInterval)
		delay := backoff
		if !w.pendingSince.IsZero() {
			delay = min(delay, max(w.pendingSince.Add(w.opts.PendingTimeout).Sub(w.clock.Now()), time.Millisecond))
		}
		stop(retry)
		retry = w.clock.NewTimer(delay)
		retryC = retry.C()
	}
	if !w.pendingSince.IsZero() {
		retryLater() // Start's first load was pending
	}
	check := func() {
		if debounce != nil {
			debounce.Stop()
			debounceC = nil
		}
		burst = time.Time{}
		err := w.check(ctx)
		if w.ensureWatches(n) {
			// New directories are watched from now on; read once
			// more for what changed in them before.
			err = w.check(ctx)
			w.ensureWatches(n)
		}
		if err == nil {
			backoff = 0
			if retry != nil {
				retry.Stop()
				retryC = nil
			}
			return
		}
		retryLater()
	}
	armDebounce := func() {
		if w.opts.Settle <= 0 {
			if debounceC == nil {
				debounce = w.clock.NewTimer(w.opts.Debounce)
				debounceC = debounce.C()
			}
			return
		}
		// With Settle, every event starts the wait again, within ten
		// times Settle of the burst's first.
		now := w.clock.Now()
		if burst.IsZero() {
			burst = now
		}
		stop(debounce)
		debounce = w.clock.NewTimer(max(min(w.opts.Settle, burst.Add(10*w.opts.Settle).Sub(now)), 0))
		debounceC = debounce.C()
	}

	for {
		var events <-chan fsnotify.Event
		var errs <-chan error
		if n != nil {
			events, errs = n.Events(), n.Errors()
		}
		select {
		case <-ctx.Done():
			return
		case _, ok := <-events:
			if !ok {
				n = nil
				continue
			}
			// Events are hints: whatever the operation, read and
			// compare (configmap-reload#190 missed reloads by
			// filtering on Create). A moved link is a complete new
			// generation: read it now, unless a burst across
			// targets is to settle; anything else may be a write in
			// progress: let the burst settle.
			if w.opts.Settle <= 0 && w.swapped() {
				check()
			} else {
				armDebounce()
			}
		case err, ok := <-errs:
			if !ok {
				n = nil
				continue
			}
			// An overflow lost events; anything else may have lost
			// the watch. Either way, read now; the watch is
			// re-registered after the check.
			w.logger.Info("Watch error; checking now", "paths", w.opts.Paths, "err", err)
			check()
		case <-debounceC:
			debounceC = nil
			check()
		case <-retryC:
			retryC = nil
			check()
		case <-w.resync:
			check()
		case <-poll.C():
			if n == nil {
				if created, err := w.opts.newNotifier(); err == nil {
					w.logger.Info("Watching for changes again", "paths", w.opts.Paths)
					n = created
				}
			}
			check()
		}
	}
}

// check reads the targets and, when their content is new, loads and
// publishes it. It returns an error when the check should be retried (a
// read failed, Load returned a Transient error, the content is pending),
// and, before a value is in effect, when the content is refused.
func (w *Watcher[T]) check(ctx context.Context) error {
	initial := w.current.Load() == nil
	readStart := w.clock.Now()
	c, err := ReadContents(w.opts.Paths, w.opts.Read)
	read := w.clock.Since(readStart)
	if err != nil {
		if initial && w.first == nil {
			w.report(StatusFailure, initial, "", err, read, notLoaded)
			return err
		}
		// Reported once until it changes, not at every retry.
		if msg := err.Error(); msg != w.lastFailure {
			w.lastFailure = msg
			w.report(StatusFailure, initial, "", err, read, notLoaded)
		}
		if w.first != nil && !w.pendingSince.IsZero() && w.clock.Since(w.pendingSince) >= w.opts.PendingTimeout {
			// Start waits out a pending set, not one that no longer reads.
			w.settleFirst(fmt.Errorf("still not consistent after %s, and now unreadable: %w", w.opts.PendingTimeout, err))
		}
		return err
	}
	w.resolved, w.subdirs = w.resolved[:0], w.subdirs[:0]
	for _, s := range c.Generations {
		w.resolved = append(w.resolved, s.Resolved)
		if strings.HasPrefix(filepath.Base(s.Resolved), "..") {
			continue // kubelet's generation: never changed, replaced whole
		}
		for _, d := range s.Dirs {
			w.subdirs = append(w.subdirs, filepath.Join(s.Resolved, filepath.FromSlash(d)))
		}
	}
	id := identity(c)
	if cur := w.current.Load(); cur != nil && (cur.id == id || cur.id == "" && cur.hash == c.Hash) {
		// Back to what is in effect: content refused before is a change
		// again, tried and reported if it comes back.
		w.badID, w.lastFailure, w.pendingSince = "", "", time.Time{}
		return nil
	}
	if id == w.badID {
		return nil
	}
	start := w.clock.Now()
	v, rollbacks, err := w.load(ctx, c)
	took := w.clock.Since(start)
	if err != nil {
		if isPending(err) {
			now := w.clock.Now()
			if w.pendingSince.IsZero() {
				w.pendingSince = now
			}
			if waited := now.Sub(w.pendingSince); waited < w.opts.PendingTimeout {
				if msg := c.Hash + " " + err.Error(); msg != w.lastFailure {
					w.lastFailure = msg
					w.report(StatusPending, initial, c.Hash, err, read, took, rollbacks...)
				}
				return err
			}
			// A failure now, no longer pending.
			err = fmt.Errorf("still not consistent after %s: %v", w.opts.PendingTimeout, err)
		} else if t := (transient{}); !initial && errors.As(err, &t) {
			if msg := err.Error(); msg != w.lastFailure || len(rollbacks) > 0 {
				w.lastFailure = msg
				w.report(StatusFailure, initial, c.Hash, err, read, took, rollbacks...)
			}
			return err
		}
		w.pendingSince = time.Time{}
		w.report(StatusFailure, initial, c.Hash, err, read, took, rollbacks...)
		if initial {
			w.settleFirst(err)
			return err
		}
		w.badID = id
		w.lastFailure = err.Error()
		return nil
	}
	w.badID, w.lastFailure, w.pendingSince = "", "", time.Time{}
	w.current.Store(&published[T]{value: v, hash: c.Hash, id: id})
	w.report(StatusSuccess, initial, c.Hash, nil, read, took, rollbacks...)
	w.settleFirst(nil)
	return nil
}

// settleFirst tells a Start waiting out a pending first load how it
// ended.
func (w *Watcher[T]) settleFirst(err error) {
	if w.first != nil {
		w.first <- err
		w.first = nil
	}
}

// swapped reports whether a path now resolves to something other than what
// the last read found behind it: a link swap. It costs a few system calls,
// no read.
func (w *Watcher[T]) swapped() bool {
	if len(w.resolved) != len(w.opts.Paths) {
		return false
	}
	for i, p := range w.opts.Paths {
		if r, _, err := resolve(p, w.opts.Read.LinksOut); err == nil && r != w.resolved[i] {
			return true
		}
	}
	return false
}

// load runs Consistent and Load, and returns the rollbacks Consistent
// reported; a panic in either refuses the content like an error does, so
// that no input can stop the watcher.
func (w *Watcher[T]) load(ctx context.Context, c *Contents) (v T, rollbacks []Rollback, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("loading the configuration panicked: %v", r)
		}
	}()
	if w.opts.Consistent != nil {
		if err := w.opts.Consistent(c); err != nil {
			var rb *RollbackError
			var zero T
			switch {
			case !errors.As(err, &rb):
				return zero, nil, Pending(err)
			case rb.Refuse:
				return zero, rb.Rollbacks, err
			}
			rollbacks = rb.Rollbacks
		}
	}
	v, err = w.opts.Load(ctx, c)
	return v, rollbacks, err
}

// notLoaded is the duration report takes for an attempt whose read
// failed: nothing was loaded.
const notLoaded time.Duration = -1

// report counts, logs and reports one attempt: a failure at error level,
// a success and a pending attempt as information.
func (w *Watcher[T]) report(status string, initial bool, hash string, err error, read, took time.Duration, rollbacks ...Rollback) {
	now := w.clock.Now()
	switch status {
	case StatusFailure:
		w.refused.Store(&err)
	case StatusSuccess:
		w.refused.Store(nil)
	}
	r := Reload[T]{Status: status, Initial: initial, Hash: hash, Err: err, Time: now, Duration: max(took, 0), ReadDuration: read, Rollbacks: rollbacks}
	kept := w.current.Load()
	keptHash := ""
	if kept != nil {
		r.Value, keptHash = kept.value, kept.hash
	}
	metricHash := keptHash
	if kept != nil && w.opts.MetricsHash != nil {
		metricHash = w.opts.MetricsHash(kept.value)
	}
	w.opts.Metrics.observe(status, now, metricHash, read, took, len(rollbacks))
	for _, rb := range rollbacks {
		w.logger.Info("A part of the configuration went back to an older version", "part", rb.Part, "from", rb.From, "to", rb.To)
	}
	logger := w.logger
	if w.opts.OnReload != nil {
		logger = logger.V(2) // the caller reports
	}
	switch status {
	case StatusSuccess:
		logger.V(1).Info("Configuration reloaded", "paths", w.opts.Paths, "hash", hash, "initial", initial)
	case StatusPending:
		logger.Info("The configuration is not consistent yet; keeping the previous one and reading again on the next change", "paths", w.opts.Paths, "hash", hash, "inEffect", keptHash, "pending", err.Error())
	default:
		if w.opts.OnReload != nil {
			// An Error line shows whatever the verbosity: the caller reports.
			logger.Info("Reloading the configuration failed; keeping the previous one", "err", err.Error(), "paths", w.opts.Paths, "hash", hash, "inEffect", keptHash)
		} else {
			logger.Error(err, "Reloading the configuration failed; keeping the previous one", "paths", w.opts.Paths, "hash", hash, "inEffect", keptHash)
		}
	}
	if w.opts.OnReload != nil {
		w.opts.OnReload(r)
	}
}

// ensureWatches makes the notifier's watch list the directories the
// targets need now: a path created, a link swapped or a directory removed
// changes them. It reports whether it added a watch. Failures are logged
// once and leave polling to find changes; a directory that vanished before
// it could be watched (an old generation) is not a failure.
func (w *Watcher[T]) ensureWatches(n notifier) bool {
	if n == nil {
		return false
	}
	added := false
	want := slices.Clone(w.subdirs)
	for _, p := range w.opts.Paths {
		want = append(want, watchDirs(p)...)
	}
	wanted, have := map[string]bool{}, map[string]bool{}
	for _, d := range n.WatchList() {
		have[d] = true
	}
	if w.watchedDirs == nil {
		w.watchedDirs = map[string]os.FileInfo{}
	}
	var errs []error
	for _, d := range want {
		if wanted[d] {
			continue
		}
		wanted[d] = true
		now, statErr := os.Stat(d)
		if have[d] {
			// Watched, unless the directory was removed and made again
			// since: the notifier may not have dropped the old watch yet.
			if was, ok := w.watchedDirs[d]; !ok || statErr != nil || os.SameFile(was, now) {
				continue
			}
			_ = n.Remove(d)
		}
		switch err := n.Add(d); {
		case err == nil:
			added = true
			if statErr == nil {
				w.watchedDirs[d] = now
			}
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, fmt.Errorf("watching %s: %w", d, err))
		}
	}
	for d := range have {
		if !wanted[d] {
			_ = n.Remove(d)
			delete(w.watchedDirs, d)
		}
	}
	msg := ""
	if err := errors.Join(errs...); err != nil {
		msg = err.Error()
	}
	if msg != w.watchErr {
		w.watchErr = msg
		if msg != "" {
			w.logger.Info("Some changes will be seen only by polling", "interval", w.opts.PollInterval, "err", msg)
		}
	}
	return added
}

// notifier is the part of fsnotify the watcher uses.
type notifier interface {
	Add(path string) error
	Remove(path string) error
	WatchList() []string
	Events() <-chan fsnotify.Event
	Errors() <-chan error
	Close() error
}

type fsNotifier struct{ *fsnotify.Watcher }

func newFSNotifier() (notifier, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	return fsNotifier{w}, nil
}

func (f fsNotifier) Events() <-chan fsnotify.Event { return f.Watcher.Events }
func (f fsNotifier) Errors() <-chan error          { return f.Watcher.Errors }
