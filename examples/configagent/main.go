// Command configagent serves CI configuration the way ci-tools'
// configresolver does, from the trees its producers publish: ConfigMap
// mounts (projected volumes included) of files named ORG-REPO-BRANCH.yaml,
// plain or gzip'd as prow's updateconfig writes them, and git-sync
// checkouts holding ORG/REPO/ORG-REPO-BRANCH.yaml at any depth.
//
//	configagent --source DIR [--source DIR ...] --listen ADDR [--poll-interval D]
//	            [--settle D] [--version-key KEY [--version-stamps all|touched] | --manifest DIR]
//	            [--pending-timeout D] [--max-bytes N]
//	configagent verify --source PATH=CONFIGMAP [--source PATH=CONFIGMAP ...]
//	            [--manifest PATH=CONFIGMAP]
//	            (--configmaps FILE | --kubeconfig FILE --namespace NS)
//	            [--version-key KEY] [--subsystem NAME] [--label K=V ...] [--timeout D]
//	            --replica URL [--replica URL ...]
//	configagent publish --dir DIR --kubeconfig FILE --namespace NS --manifest NAME
//	            --part NAME [--part NAME ...] [--gzip-above BYTES]
//
// publish writes the configurations of DIR (its .yaml and .yml files, at
// any depth, keyed by base name) as a set of ConfigMaps: each file in the
// part its name selects (prow's partition rule), gzip'd above BYTES, then
// the manifest ConfigMap NAME with every part's hash and a generation one
// above the last. It prints the manifest written, as JSON, and exits 0; 1
// when it could not publish (nothing is written when a file cannot be
// read or a part would be too large; a write that fails, or a publish
// that raced another, leaves replicas serving the set they serve), 2 on
// a usage error (publish.go). A replica given --manifest (where
// NAME is mounted) and the parts as its sources serves only a set whose
// every part matches the manifest, and refuses a manifest older than the
// one it serves (a rollback, on its reload line).
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
// identity make the snapshot invalid. The agent underneath is package
// agent, which a program can import.
//
//	GET /config?org=O&repo=R&branch=B[&variant=V]
//	    200 with the YAML of the configuration that serves the branch, as
//	    ci-tools matches them (a branch name serves itself and its
//	    feature branches, B-...; a branch that is a regular expression,
//	    what it matches), decompressed, and X-Config-Generation: sha256:…
//	    naming the snapshot; 404 when none or more than one does; 400 for
//	    a missing parameter.
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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/component-base/metrics"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/examples/configagent/agent"
	"github.com/stratacfg/strata/internal/httpserve"
	"github.com/stratacfg/strata/internal/yamljson"
	"github.com/stratacfg/strata/watch"
	"github.com/stratacfg/strata/watch/configset"
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
	manifest       string
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
		for _, had := range f.sources {
			if samePath(had, s) {
				return fmt.Errorf("--source %s given twice: each source is read once", s)
			}
		}
		f.sources = append(f.sources, s)
		return nil
	})
	fs.StringVar(&f.listen, "listen", "", "the address to serve on, host:port")
	fs.DurationVar(&f.pollInterval, "poll-interval", watch.DefaultPollInterval, "how often the sources are read whatever file events say")
	fs.DurationVar(&f.settle, "settle", time.Second, "how long a burst of updates across the sources must be quiet before they are read (0: read a swapped mount at once)")
	fs.StringVar(&f.versionKey, "version-key", "", "a version marker file every source holds (prow's updateconfig writes VERSION)")
	fs.StringVar(&f.versionStamps, "version-stamps", "all", `how the producer stamps the sources with --version-key: "all" (every source at every publish: sources that disagree are pending until they agree) or "touched" (only the sources a publish changes, as prow's updateconfig does: served after --settle, a version going back reported as a rollback)`)
	fs.StringVar(&f.manifest, "manifest", "", "where the manifest ConfigMap of a set `configagent publish` writes is mounted: the sources are its parts, served only when each matches it")
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
	case f.versionKey == "" && given(fs, "version-stamps"):
		return nil, errors.New("--version-stamps says how the sources are stamped with --version-key: give --version-key too")
	case f.manifest != "" && f.versionKey != "":
		return nil, errors.New("--manifest and --version-key are two ways to tell a whole set: give one")
	case f.manifest != "" && slices.ContainsFunc(f.sources, func(s string) bool { return samePath(s, f.manifest) }):
		return nil, fmt.Errorf("--manifest %s is a --source too: the sources are its parts", f.manifest)
	}
	if err := watch.CheckPollInterval(f.pollInterval); err != nil || f.pollInterval == 0 {
		return nil, fmt.Errorf("--poll-interval %s: must be at least %s", f.pollInterval, watch.MinPollInterval)
	}
	return &f, nil
}

// samePath reports whether a and b name one path, relative or absolute.
func samePath(a, b string) bool {
	x, errx := filepath.Abs(a)
	y, erry := filepath.Abs(b)
	return errx == nil && erry == nil && x == y
}

// given reports whether the flag name was given on the command line.
func given(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// run is the command: 0 when ctx ends, 1 on an invalid first snapshot or
// a listener that cannot start, 2 on a usage error; `configagent verify`
// is verify.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "verify":
			return verify(ctx, args[1:], stdin, stdout, stderr)
		case "publish":
			return publish(ctx, args[1:], stdout, stderr)
		}
	}
	f, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "configagent:", err)
		}
		return 2
	}
	s, err := newServer(f, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "configagent:", err)
		return 1
	}
	srv, ln, err := httpserve.Listen(f.listen, s.handler())
	if err != nil {
		fmt.Fprintln(stderr, "configagent:", err)
		return 1
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer srv.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.a.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return 0
		}
		fmt.Fprintln(stderr, "configagent: the first snapshot is invalid:", err)
		return 1
	}
	fmt.Fprintf(stderr, "configagent: serving %d configurations on %s\n", s.a.Current().Len(), ln.Addr())
	select {
	case <-ctx.Done():
		shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = srv.Shutdown(shutdown)
		<-s.a.Done()
		return 0
	case err := <-served:
		fmt.Fprintln(stderr, "configagent:", err)
		return 1
	}
}

// configuration is one ci-operator configuration: its file's bytes.
type configuration = []byte

// server is the agent of the sources and what serves it.
type server struct {
	a     *agent.Agent[configuration]
	reg   metrics.KubeRegistry
	out   io.Writer
	outMu sync.Mutex
}

// readOptions are how the agent reads its sources: trees of .yaml and
// .yml files, the version marker file, the manifest's key when a manifest
// is watched, hidden names left out. verify computes the hash the agent
// reports with the same options.
func readOptions(versionKey string, manifest bool, maxBytes int64) watch.ReadOptions {
	return watch.ReadOptions{
		Tree: true, MaxFiles: maxFiles, MaxTotalBytes: maxBytes,
		Select: func(rel string) string {
			name := path.Base(rel)
			switch {
			case strings.HasPrefix(name, "."):
				return "hidden"
			case name == versionKey, manifest && rel == configset.ManifestKey:
				return ""
			case strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml"):
				return ""
			}
			return "not a configuration: configurations end in .yaml or .yml"
		},
	}
}

// beforeLoad, when set, runs before each file is parsed: tests make a
// slow reload with it.
var beforeLoad atomic.Pointer[func()]

func newServer(f *flags, stdout io.Writer) (*server, error) {
	s := &server{out: stdout, reg: metrics.NewKubeRegistry()}
	m := watch.NewMetrics("configagent", nil)
	m.MustRegister(s.reg)
	paths := f.sources
	var consistent func(*watch.Contents) error
	switch {
	case f.manifest != "":
		paths = append(slices.Clip(paths), f.manifest)
		consistent = configset.Check(f.manifest, f.sources...)
	case f.versionKey != "" && f.versionStamps == "touched":
		consistent = watch.MarkersMove(f.versionKey)
	case f.versionKey != "":
		consistent = watch.MarkersAgree(f.versionKey)
	}
	var err error
	s.a, err = agent.New(agent.Options[configuration]{
		Watch: watch.Options[*agent.Snapshot[configuration]]{
			Paths:          paths,
			Read:           readOptions(f.versionKey, f.manifest != "", f.maxBytes),
			PollInterval:   f.pollInterval,
			Settle:         f.settle,
			PendingTimeout: f.pendingTimeout,
			Consistent:     consistent,
			Metrics:        m,
		},
		Parse: func(_ string, data []byte) (configuration, agent.Metadata, error) {
			if hook := beforeLoad.Load(); hook != nil {
				(*hook)()
			}
			return parseConfig(data)
		},
		Skip: func(target, name string) bool {
			return target == f.manifest || (f.versionKey != "" && path.Base(name) == f.versionKey)
		},
		OnReload: s.report,
	})
	return s, err
}

// parseConfig reads a configuration's identity, its zz_generated_metadata.
func parseConfig(data []byte) (configuration, agent.Metadata, error) {
	var doc struct {
		Meta *agent.Metadata `json:"zz_generated_metadata"`
	}
	if err := yamljson.Check(data, yamljson.Limit(len(data))); err != nil {
		return nil, agent.Metadata{}, err // before yaml.Unmarshal writes every alias out in full
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, agent.Metadata{}, fmt.Errorf("not YAML: %w", err)
	}
	switch id := doc.Meta; {
	case id == nil:
		return nil, agent.Metadata{}, errors.New("no zz_generated_metadata: not a ci-operator configuration")
	case id.Org == "" || id.Repo == "" || id.Branch == "":
		return nil, agent.Metadata{}, errors.New("zz_generated_metadata needs org, repo and branch")
	default:
		return data, *id, nil
	}
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
func (s *server) report(r watch.Reload[*agent.Snapshot[configuration]], files int) {
	l := line{Status: r.Status, Generation: r.Hash, Files: files, ReadSeconds: r.ReadDuration.Seconds(), LoadSeconds: r.Duration.Seconds()}
	if r.Err != nil {
		l.Error = r.Err.Error()
	}
	for _, rb := range r.Rollbacks {
		l.Rollbacks = append(l.Rollbacks, rb.String())
	}
	out, _ := json.Marshal(l)
	s.outMu.Lock()
	defer s.outMu.Unlock()
	fmt.Fprintf(s.out, "%s\n", out)
}

// handler serves the configurations, health, readiness and metrics.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /config", s.serveConfig)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if s.a.Current() == nil {
			http.Error(w, "no snapshot loaded yet", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	mux.Handle("GET /metrics", metrics.HandlerFor(s.reg, metrics.HandlerOpts{}))
	return mux
}

// serveConfig answers from the snapshot current when the request arrived:
// a reload under way never holds it up.
func (s *server) serveConfig(w http.ResponseWriter, r *http.Request) {
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
	snap := s.a.Current()
	if snap == nil {
		http.Error(w, "no snapshot loaded yet", http.StatusServiceUnavailable)
		return
	}
	id := agent.Metadata{Org: q.Get("org"), Repo: q.Get("repo"), Branch: q.Get("branch"), Variant: q.Get("variant")}
	w.Header().Set("X-Config-Generation", snap.Hash)
	data, err := snap.GetMatchingConfig(id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	w.Write(data)
}
