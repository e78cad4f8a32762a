// Command configagent serves CI configuration the way ci-tools'
// configresolver does, from the trees its producers publish: ConfigMap
// mounts (projected volumes included) of files named ORG-REPO-BRANCH.yaml,
// plain or gzip'd as prow's updateconfig writes them, and git-sync
// checkouts holding ORG/REPO/ORG-REPO-BRANCH.yaml at any depth.
//
//	configagent --source DIR [--source DIR ...] --listen ADDR [--poll-interval D]
//	            [--settle D] [--version-key KEY [--version-stamps all|touched]]
//	            [--pending-timeout D] [--max-bytes N]
//	configagent verify --source PATH=CONFIGMAP [--source PATH=CONFIGMAP ...]
//	            (--configmaps FILE | --kubeconfig FILE --namespace NS)
//	            [--version-key KEY] [--subsystem NAME] [--label K=V ...] [--timeout D]
//	            --replica URL [--replica URL ...]
//
// verify tells whether every replica serves the content of the
// ConfigMaps: "expected HASH", then one line per replica, "URL current
// since TIME", "URL behind: serves HASH since TIME" or "URL unknown:
// WHY"; exit 0 only when every replica is current (verify.go).
//
// Every source is read as one snapshot: never a mix of two updates of one
// volume or checkout, never a file outside the sources (a link that leads
// out of a checkout fails the snapshot, naming it), never more than
// --max-bytes once decompressed. --version-key names the version marker
// file of each source, and --version-stamps says how its producer writes
// it: "all" (the default), a producer that stamps every source at every
// publish, so that sources whose KEY files disagree are a set kubelet has
// updated in part, pending until they agree; "touched", prow's
// updateconfig, which writes VERSION only into the ConfigMaps a merge
// touched, so that sources differ as a matter of course: a snapshot is
// served --settle after the last update, never held back, and a source
// whose VERSION goes back to one it held before is reported as a
// rollback. A configuration
// is identified by its zz_generated_metadata (org, repo, branch, and
// variant when it has one), never by its file name; two files of one
// identity make the snapshot invalid.
//
//	GET /config?org=O&repo=R&branch=B[&variant=V]
//	    200 with the file's YAML, decompressed, and X-Config-Generation:
//	    sha256:… naming the snapshot; 404 when there is none; 400 for a
//	    missing parameter.
//	GET /healthz   200 while the process runs
//	GET /readyz    200 once a first snapshot is loaded, 503 before
//	GET /metrics   the reload metrics
//
// Each reload attempt is one JSON line on stdout:
// {"status":"success"|"failure"|"pending","generation":"sha256:…","files":N,"error":"…","rollbacks":["…"],"readSeconds":R,"loadSeconds":L}:
// how long reading the sources took (decompression included), and
// loading them.
// A request is answered from the snapshot current when it arrived, however
// long a reload takes; an invalid reload keeps the last good snapshot. An
// invalid first snapshot is an error: exit 1, the reason on stderr.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/component-base/metrics"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/internal/httpserve"
	"github.com/stratacfg/strata/watch"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// maxFiles bounds the files of a snapshot: a checkout of
// openshift/release holds some twenty thousand configurations.
const maxFiles = 100_000

// flags are the command line.
type flags struct {
	sources        []string
	listen         string
	pollInterval   time.Duration
	settle         time.Duration
	versionKey     string
	versionStamps  string
	pendingTimeout time.Duration
	maxBytes       int64
}

func parse(args []string, stderr io.Writer) (*flags, error) {
	var f flags
	fs := flag.NewFlagSet("configagent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Func("source", "a ConfigMap mount or a git-sync root to serve configurations from (repeatable; all are read as one snapshot)", func(s string) error {
		if s == "" {
			return errors.New("empty")
		}
		f.sources = append(f.sources, s)
		return nil
	})
	fs.StringVar(&f.listen, "listen", "", "the address to serve on, host:port")
	fs.DurationVar(&f.pollInterval, "poll-interval", watch.DefaultPollInterval, "how often the sources are read whatever file events say")
	fs.DurationVar(&f.settle, "settle", time.Second, "how long a burst of updates across the sources must be quiet before they are read (0: read a swapped mount at once)")
	fs.StringVar(&f.versionKey, "version-key", "", "a version marker file every source holds (prow's updateconfig writes VERSION)")
	fs.StringVar(&f.versionStamps, "version-stamps", "all", `how the producer stamps the sources with --version-key: "all" (every source at every publish: sources that disagree are pending until they agree) or "touched" (only the sources a publish changes, as prow's updateconfig does: served after --settle, a version going back reported as a rollback)`)
	fs.DurationVar(&f.pendingTimeout, "pending-timeout", watch.DefaultPendingTimeout, "how long a snapshot may stay pending before it is a failure")
	fs.Int64Var(&f.maxBytes, "max-bytes", watch.DefaultMaxTotalBytes, "the bytes a snapshot of every source may hold once decompressed; one that holds more is refused, and so is a file over 4 MiB")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case len(f.sources) == 0:
		return nil, errors.New("--source is required")
	case f.listen == "":
		return nil, errors.New("--listen is required")
	case f.settle < 0:
		return nil, fmt.Errorf("--settle %s: negative", f.settle)
	case f.pendingTimeout <= 0:
		return nil, fmt.Errorf("--pending-timeout %s: must be positive", f.pendingTimeout)
	case f.maxBytes <= 0:
		return nil, fmt.Errorf("--max-bytes %d: must be positive", f.maxBytes)
	case strings.Contains(f.versionKey, "/"):
		return nil, fmt.Errorf("--version-key %q: a file name, not a path", f.versionKey)
	case f.versionStamps != "all" && f.versionStamps != "touched":
		return nil, fmt.Errorf(`--version-stamps %q: "all" or "touched"`, f.versionStamps)
	}
	if err := watch.CheckPollInterval(f.pollInterval); err != nil || f.pollInterval == 0 {
		return nil, fmt.Errorf("--poll-interval %s: must be at least %s", f.pollInterval, watch.MinPollInterval)
	}
	return &f, nil
}

// run is the command: 0 when ctx ends, 1 on an invalid first snapshot or
// a listener that cannot start, 2 on a usage error; `configagent verify`
// is verify.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "verify" {
		return verify(ctx, args[1:], stdin, stdout, stderr)
	}
	f, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "configagent:", err)
		}
		return 2
	}
	a, err := newAgent(f, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "configagent:", err)
		return 1
	}
	srv, ln, err := httpserve.Listen(f.listen, a.handler())
	if err != nil {
		fmt.Fprintln(stderr, "configagent:", err)
		return 1
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer srv.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := a.w.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return 0
		}
		fmt.Fprintln(stderr, "configagent: the first snapshot is invalid:", err)
		return 1
	}
	fmt.Fprintf(stderr, "configagent: serving %d configurations on %s\n", len(a.w.Current().configs), ln.Addr())
	select {
	case <-ctx.Done():
		shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = srv.Shutdown(shutdown)
		<-a.w.Done()
		return 0
	case err := <-served:
		fmt.Fprintln(stderr, "configagent:", err)
		return 1
	}
}

// identity names a configuration as ci-operator does: its
// zz_generated_metadata.
type identity struct {
	Org     string `json:"org"`
	Repo    string `json:"repo"`
	Branch  string `json:"branch"`
	Variant string `json:"variant,omitempty"`
}

func (id identity) String() string {
	s := id.Org + "/" + id.Repo + "@" + id.Branch
	if id.Variant != "" {
		s += "__" + id.Variant
	}
	return s
}

// snapshot is one loaded generation of every source. It is immutable.
type snapshot struct {
	generation string
	configs    map[identity][]byte
}

// agent is the watcher of the sources and what it has loaded.
type agent struct {
	w     *watch.Watcher[*snapshot]
	m     *watch.Metrics
	reg   metrics.KubeRegistry
	out   io.Writer
	outMu sync.Mutex
	files int // files of the attempt being reported; the watcher's goroutine only
}

// readOptions are how the agent reads its sources: trees of .yaml and
// .yml files, the version marker file, hidden names left out. verify
// computes the hash the agent reports with the same options.
func readOptions(versionKey string, maxBytes int64) watch.ReadOptions {
	return watch.ReadOptions{
		Tree: true, MaxFiles: maxFiles, MaxTotalBytes: maxBytes,
		Select: func(rel string) string {
			name := path.Base(rel)
			switch {
			case strings.HasPrefix(name, "."):
				return "hidden"
			case name == versionKey:
				return ""
			case strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml"):
				return ""
			}
			return "not a configuration: configurations end in .yaml or .yml"
		},
	}
}

// beforeLoad, when set, runs before each load: tests make a slow reload
// with it.
var beforeLoad atomic.Pointer[func()]

func newAgent(f *flags, stdout io.Writer) (*agent, error) {
	a := &agent{out: stdout, m: watch.NewMetrics("configagent", nil), reg: metrics.NewKubeRegistry()}
	a.m.MustRegister(a.reg)
	read := readOptions(f.versionKey, f.maxBytes)
	var consistent func(*watch.Contents) error
	if f.versionKey != "" {
		agree := watch.MarkersAgree(f.versionKey)
		if f.versionStamps == "touched" {
			agree = watch.MarkersMove(f.versionKey)
		}
		consistent = func(c *watch.Contents) error {
			a.files = a.count(c, f.versionKey)
			return agree(c)
		}
	}
	var err error
	a.w, err = watch.New(watch.Options[*snapshot]{
		Paths:          f.sources,
		Read:           read,
		PollInterval:   f.pollInterval,
		Settle:         f.settle,
		PendingTimeout: f.pendingTimeout,
		Consistent:     consistent,
		Metrics:        a.m,
		Load: func(_ context.Context, c *watch.Contents) (*snapshot, error) {
			if hook := beforeLoad.Load(); hook != nil {
				(*hook)()
			}
			return a.load(c, f.versionKey)
		},
		OnReload: a.report,
	})
	return a, err
}

// count returns the configuration files of c.
func (a *agent) count(c *watch.Contents, versionKey string) int {
	n := 0
	for _, g := range c.Generations {
		for _, e := range g.Files {
			if path.Base(e.Name) != versionKey {
				n++
			}
		}
	}
	return n
}

// load indexes every configuration of c by its identity. A file that is
// not YAML, has no zz_generated_metadata, or shares its identity with
// another makes the whole snapshot invalid; every such problem is named.
func (a *agent) load(c *watch.Contents, versionKey string) (*snapshot, error) {
	a.files = a.count(c, versionKey)
	s := &snapshot{generation: c.Hash, configs: make(map[identity][]byte, a.files)}
	where := make(map[identity]string, a.files)
	var errs []error
	for _, g := range c.Generations {
		for _, e := range g.Files {
			if path.Base(e.Name) == versionKey {
				continue
			}
			file := g.Path
			if g.Dir {
				file = filepath.Join(g.Path, filepath.FromSlash(e.Name))
			}
			var doc struct {
				Meta *identity `json:"zz_generated_metadata"`
			}
			if err := yaml.Unmarshal(e.Data, &doc); err != nil {
				errs = append(errs, fmt.Errorf("%s: not YAML: %w", file, err))
				continue
			}
			switch id := doc.Meta; {
			case id == nil:
				errs = append(errs, fmt.Errorf("%s: no zz_generated_metadata: not a ci-operator configuration", file))
			case id.Org == "" || id.Repo == "" || id.Branch == "":
				errs = append(errs, fmt.Errorf("%s: zz_generated_metadata needs org, repo and branch", file))
			case where[*id] != "":
				errs = append(errs, fmt.Errorf("%s: %s is configured by %s already", file, id, where[*id]))
			default:
				where[*id] = file
				s.configs[*id] = e.Data
			}
		}
	}
	if len(errs) > 0 {
		if len(errs) > 20 {
			errs = append(errs[:20], fmt.Errorf("and %d more problems", len(errs)-20))
		}
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// line is one reload attempt on stdout.
type line struct {
	Status      string   `json:"status"`
	Generation  string   `json:"generation"`
	Files       int      `json:"files"`
	Error       string   `json:"error,omitempty"`
	Rollbacks   []string `json:"rollbacks,omitempty"`
	ReadSeconds float64  `json:"readSeconds"`
	LoadSeconds float64  `json:"loadSeconds"`
}

// report prints one JSON line per reload attempt.
func (a *agent) report(r watch.Reload[*snapshot]) {
	l := line{Status: r.Status, Generation: r.Hash, Files: a.files, ReadSeconds: r.ReadDuration.Seconds(), LoadSeconds: r.Duration.Seconds()}
	if r.Hash == "" { // the read failed: nothing was loaded
		l.Files = 0
	}
	if r.Err != nil {
		l.Error = r.Err.Error()
	}
	for _, rb := range r.Rollbacks {
		l.Rollbacks = append(l.Rollbacks, rb.String())
	}
	a.files = 0
	out, _ := json.Marshal(l)
	a.outMu.Lock()
	defer a.outMu.Unlock()
	fmt.Fprintf(a.out, "%s\n", out)
}

// handler serves the configurations, health, readiness and metrics.
func (a *agent) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /config", a.serveConfig)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if a.w.Current() == nil {
			http.Error(w, "no snapshot loaded yet", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	mux.Handle("GET /metrics", metrics.HandlerFor(a.reg, metrics.HandlerOpts{}))
	return mux
}

// serveConfig answers from the snapshot current when the request arrived:
// a reload under way never holds it up.
func (a *agent) serveConfig(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var missing []string
	for _, p := range []string{"org", "repo", "branch"} {
		if q.Get(p) == "" {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		http.Error(w, "missing query parameter "+strings.Join(missing, ", "), http.StatusBadRequest)
		return
	}
	s := a.w.Current()
	if s == nil {
		http.Error(w, "no snapshot loaded yet", http.StatusServiceUnavailable)
		return
	}
	id := identity{Org: q.Get("org"), Repo: q.Get("repo"), Branch: q.Get("branch"), Variant: q.Get("variant")}
	data, ok := s.configs[id]
	w.Header().Set("X-Config-Generation", s.generation)
	if !ok {
		http.Error(w, "no configuration for "+id.String(), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	w.Write(data)
}
