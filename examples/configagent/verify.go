package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stratacfg/strata/internal/kubeobjects"
	"github.com/stratacfg/strata/watch"
)

const verifyUsage = `usage: configagent verify --source PATH=CONFIGMAP [--source PATH=CONFIGMAP ...]
                          [--manifest PATH=CONFIGMAP]
                          (--configmaps FILE | --kubeconfig FILE --namespace NS)
                          [--version-key KEY] [--subsystem NAME] [--label K=V ...] [--timeout D]
                          --replica URL [--replica URL ...]
`

// maxManifestBytes bounds what --configmaps reads: kubectl's output of a
// set of ConfigMaps of at most 1 MiB each.
const maxManifestBytes = 64 << 20

// verify is `configagent verify`: it computes, from the ConfigMaps the
// replicas mount, the hash every replica must report, asks each replica's
// /metrics which configuration it serves and since when, and prints one
// line per replica. 0 when every replica serves the ConfigMaps' content,
// 1 when one does not or cannot be asked (or the ConfigMaps cannot be
// read), 2 on a usage error.
//
// --source PATH=CONFIGMAP names, in the replicas' --source order, the
// path a source is mounted at, spelled as their --source spells it, and
// the name of the ConfigMap mounted there: the path is part of the hash
// when there are several. The ConfigMaps come from --configmaps (YAML or
// JSON documents, a v1 List among them, as `kubectl get configmap -o
// yaml` prints them; "-" reads stdin) or from the cluster --kubeconfig
// names, in --namespace. --version-key and --manifest are the replicas'
// own. The expected
// hash is the one configagent computes, with its way of reading its
// sources; --subsystem and --label (a const label that tells a watcher's
// series apart, plugin=...) name other metrics. Another strata watcher
// reads its targets its own way: its expected hash is watch.ContentHash
// with its read options, and watch.ReadReplicas asks its replicas.
func verify(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("configagent verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, verifyUsage)
		fs.PrintDefaults()
	}
	var sources []source
	var replicas []string
	labels := map[string]string{}
	fs.Func("source", "PATH=CONFIGMAP: a source as the replicas mount it, and the ConfigMap mounted there (repeatable, in the replicas' --source order)", func(s string) error {
		src, err := pathAndConfigMap(s)
		sources = append(sources, src)
		return err
	})
	var manifest *source
	fs.Func("manifest", "PATH=CONFIGMAP: the replicas' --manifest, and the manifest ConfigMap mounted there", func(s string) error {
		src, err := pathAndConfigMap(s)
		manifest = &src
		return err
	})
	fs.Func("replica", "a replica's metrics URL, http://HOST:PORT/metrics (repeatable)", func(s string) error {
		if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
			return errors.New("an http:// or https:// URL")
		}
		replicas = append(replicas, s)
		return nil
	})
	fs.Func("label", "K=V: a const label of the watcher's metrics series (repeatable)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return errors.New("K=V")
		}
		labels[k] = v
		return nil
	})
	manifests := fs.String("configmaps", "", `a file of the ConfigMaps, "-" for stdin`)
	kubeconfig := fs.String("kubeconfig", "", "read the ConfigMaps from the cluster this kubeconfig names")
	namespace := fs.String("namespace", "", "with --kubeconfig, the ConfigMaps' namespace")
	versionKey := fs.String("version-key", "", "the replicas' --version-key")
	subsystem := fs.String("subsystem", "configagent", "the prefix of the watcher's metrics")
	timeout := fs.Duration("timeout", 10*time.Second, "how long reading the ConfigMaps and asking every replica may take")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var usage string
	switch {
	case fs.NArg() > 0:
		usage = fmt.Sprintf("unexpected argument %q", fs.Arg(0))
	case len(sources) == 0 || len(replicas) == 0:
		usage = "--source and --replica are required"
	case (*manifests == "") == (*kubeconfig == ""):
		usage = "exactly one of --configmaps and --kubeconfig is required"
	case *kubeconfig != "" && *namespace == "":
		usage = "--kubeconfig needs --namespace"
	case *timeout <= 0:
		usage = "--timeout must be positive"
	}
	if usage != "" {
		fmt.Fprintf(stderr, "configagent verify: %s\n%s", usage, verifyUsage)
		return 2
	}
	if manifest != nil {
		sources = append(sources, *manifest) // the replicas watch it last
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	var cms map[string]*corev1.ConfigMap
	var err error
	if *manifests != "" {
		cms, err = readConfigMaps(*manifests, stdin)
	} else {
		cms, err = getConfigMaps(ctx, *kubeconfig, *namespace, sources)
	}
	if err != nil {
		fmt.Fprintln(stderr, "configagent verify:", err)
		return 1
	}
	mounts := make([]watch.Mount, len(sources))
	for i, s := range sources {
		cm := cms[s.configMap]
		if cm == nil {
			fmt.Fprintf(stderr, "configagent verify: no ConfigMap %s among the ConfigMaps read\n", s.configMap)
			return 1
		}
		mounts[i] = watch.Mount{Path: s.path, Data: cm.Data, BinaryData: cm.BinaryData}
	}
	want := watch.ContentHash(readOptions(*versionKey, manifest != nil, watch.DefaultMaxTotalBytes), mounts...)
	fmt.Fprintf(stdout, "expected %s\n", want)
	code := 0
	for _, r := range watch.ReadReplicas(ctx, &http.Client{Timeout: *timeout}, *subsystem, labels, replicas...) {
		since := "an unknown time"
		if !r.Since.IsZero() {
			since = r.Since.Format(time.RFC3339)
		}
		switch {
		case r.Err != nil:
			fmt.Fprintf(stdout, "%s unknown: %v\n", r.URL, r.Err)
			code = 1
		case r.Hash == want:
			fmt.Fprintf(stdout, "%s current since %s\n", r.URL, since)
		default:
			fmt.Fprintf(stdout, "%s behind: serves %s since %s\n", r.URL, r.Hash, since)
			code = 1
		}
	}
	return code
}

// source is a source as the replicas mount it, and the ConfigMap mounted
// there.
type source struct{ path, configMap string }

// readConfigMaps reads the ConfigMaps of the manifest file name ("-":
// stdin), by name.
func readConfigMaps(name string, stdin io.Reader) (map[string]*corev1.ConfigMap, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	} else {
		name = "stdin"
	}
	data, err := io.ReadAll(io.LimitReader(r, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("%s: over %d bytes", name, maxManifestBytes)
	}
	objs, err := kubeobjects.Decode(name, data)
	if err != nil {
		return nil, err
	}
	out := map[string]*corev1.ConfigMap{}
	for _, o := range objs {
		cm, ok := o.(*corev1.ConfigMap)
		if !ok {
			continue // a Namespace among them
		}
		if first := out[cm.Name]; first != nil && first.Namespace != cm.Namespace {
			return nil, fmt.Errorf("%s: ConfigMap %s is in namespaces %s and %s: give those of one", name, cm.Name, first.Namespace, cm.Namespace)
		}
		out[cm.Name] = cm
	}
	return out, nil
}

// getConfigMaps reads the ConfigMaps of sources from the cluster.
func getConfigMaps(ctx context.Context, kubeconfig, namespace string, sources []source) (map[string]*corev1.ConfigMap, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	out := map[string]*corev1.ConfigMap{}
	for _, s := range sources {
		cm, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, s.configMap, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", namespace, s.configMap, err)
		}
		out[s.configMap] = cm
	}
	return out, nil
}

// pathAndConfigMap reads PATH=CONFIGMAP at its last "=": a path may hold
// one, a ConfigMap's name may not.
func pathAndConfigMap(s string) (source, error) {
	i := strings.LastIndexByte(s, '=')
	if i <= 0 || i == len(s)-1 {
		return source{}, errors.New("PATH=CONFIGMAP")
	}
	return source{s[:i], s[i+1:]}, nil
}
