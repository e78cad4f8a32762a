// Command tekton-config resolves Tekton's configuration for a namespace as
// TEP-0085 defines it, with Tekton's own config.Defaults and
// config.FeatureFlags and their own constructors: the cluster ConfigMaps
// config-defaults and feature-flags in tekton-pipelines, the namespace's
// tekton-config-defaults and tekton-feature-flags above them, key by key,
// under the gate and the lock list of feature-flags.
//
//	tekton-config resolve --namespace NS (--from-dir DIR | --kubeconfig FILE)
//	tekton-config keys (--from-dir DIR | --kubeconfig FILE)
//
// resolve prints one JSON object: both configurations, where each key
// came from, the keys and layers refused with why, and the hash of the
// configuration. keys prints what tenants may set under the cluster
// ConfigMaps, for each section: whether the gate is open, the keys a
// tenant may set, the keys the operator's lock list locks now, and every
// other key with why no tenant may set it. Invalid cluster ConfigMaps
// are an error (exit 1, the reason on stderr, nothing on stdout); an
// invalid namespace ConfigMap is refused as a whole, listed with its
// constructor's error, and the namespace gets the cluster's values.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/tektoncd/pipeline/pkg/apis/config"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stratacfg/strata/examples/tekton/tektonconfig"
	"github.com/stratacfg/strata/internal/kubeobjects"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = "usage: tekton-config resolve --namespace NS (--from-dir DIR | --kubeconfig FILE)\n" +
	"       tekton-config keys (--from-dir DIR | --kubeconfig FILE)\n"

// output is what resolve prints.
type output struct {
	Namespace    string                   `json:"namespace"`
	Defaults     *config.Defaults         `json:"defaults"`
	FeatureFlags *config.FeatureFlags     `json:"featureFlags"`
	Provenance   map[string]keyProvenance `json:"provenance"`
	Rejected     []rejected               `json:"rejected"`
	Hash         string                   `json:"hash"`
}

type keyProvenance struct {
	Source   string   `json:"source"`
	Shadowed []string `json:"shadowed"`
	// Contested are the values selector layers as specific as the
	// winner's gave and lost (Snapshot.Contested).
	Contested []contender `json:"contested,omitempty"`
}

// contender is a value that lost a contest, and its layer.
type contender struct {
	Source string `json:"source"`
	Value  string `json:"value"`
}

// rejected is a key a tenant may not set, or (key "") a ConfigMap refused
// as a whole.
type rejected struct {
	Source string `json:"source"`
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// run is the command: 0 on success, 1 on an error, 2 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "resolve" && args[0] != "keys") {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd := args[0]
	fs := flag.NewFlagSet("tekton-config "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	var ns *string
	if cmd == "resolve" {
		ns = fs.String("namespace", "", "the namespace to resolve")
	}
	dir := fs.String("from-dir", "", "read ConfigMap and Namespace manifests from this directory's .yaml, .yml and .json files instead of a cluster")
	kubeconfig := fs.String("kubeconfig", "", "read the ConfigMaps from the API server this kubeconfig names")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if (ns != nil && *ns == "") || (*dir == "") == (*kubeconfig == "") || fs.NArg() > 0 {
		need := "exactly one of --from-dir and --kubeconfig is required"
		if ns != nil {
			need = "--namespace and " + need
		}
		fmt.Fprintf(stderr, "tekton-config %s: %s\n%s", cmd, need, usage)
		return 2
	}
	var out any
	var err error
	if cmd == "resolve" {
		var snap *namespaced.Snapshot[*tektonconfig.Config]
		if snap, err = resolve(ctx, *ns, *dir, *kubeconfig); err == nil {
			out = report(*ns, snap)
		}
	} else {
		var keys *tenancy.Keys
		if keys, err = tenantKeys(ctx, *dir, *kubeconfig); err == nil {
			out = keysReport(keys)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "tekton-config:", err)
		return 1
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		fmt.Fprintln(stderr, "tekton-config:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return 0
}

// tenantKeys returns what tenants may set under the cluster ConfigMaps of
// dir's manifests, or of the cluster kubeconfig names.
func tenantKeys(ctx context.Context, dir, kubeconfig string) (*tenancy.Keys, error) {
	var objs []runtime.Object
	if dir != "" {
		var err error
		if objs, err = kubeobjects.ReadDir(dir); err != nil {
			return nil, err
		}
	} else {
		client, err := clientFor(kubeconfig)
		if err != nil {
			return nil, err
		}
		for _, name := range []string{tektonconfig.DefaultsSection, tektonconfig.FeatureFlagsSection} {
			cm, err := client.CoreV1().ConfigMaps(tektonconfig.SystemNamespace).Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", tektonconfig.SystemNamespace, name, err)
			}
			objs = append(objs, cm)
		}
	}
	d, err := namespaced.NewDryRun(tektonconfig.Options(tektonconfig.SystemNamespace))
	if err != nil {
		return nil, err
	}
	return d.TenantKeys(objs)
}

// clientFor is a client of the cluster kubeconfig names.
func clientFor(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	return kubernetes.NewForConfig(cfg)
}

// sectionKeys is what keys prints of one section.
type sectionKeys struct {
	Section string `json:"section"`
	// Overridable are the keys a tenant may set.
	Overridable []string `json:"overridable"`
	// Locked are the keys the operator's lock list locks now.
	Locked []string `json:"locked"`
	// Refused are the other keys, each with why no tenant may set it.
	Refused []refusedKey `json:"refused"`
}

// refusedKey is a key no tenant may set, and why.
type refusedKey struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// keysOutput is what keys prints.
type keysOutput struct {
	// Open is the gate: false when namespace ConfigMaps apply not at all.
	Open     bool          `json:"open"`
	Sections []sectionKeys `json:"sections"`
}

// keysReport is the output of keys, sections in their order, keys sorted.
func keysReport(keys *tenancy.Keys) keysOutput {
	out := keysOutput{Open: keys.Open}
	for _, section := range []string{tektonconfig.DefaultsSection, tektonconfig.FeatureFlagsSection} {
		sk := sectionKeys{Section: section, Overridable: []string{}, Locked: []string{}, Refused: []refusedKey{}}
		for _, k := range slices.Sorted(maps.Keys(keys.Keys)) {
			name, ok := strings.CutPrefix(k, section+"/")
			if !ok {
				continue
			}
			switch ref := keys.Keys[k]; {
			case !ref.Refused():
				sk.Overridable = append(sk.Overridable, name)
			case ref.Reason == tenancy.ReasonLocked:
				sk.Locked = append(sk.Locked, name)
			default:
				sk.Refused = append(sk.Refused, refusedKey{Key: name, Reason: ref.Reason})
			}
		}
		out.Sections = append(out.Sections, sk)
	}
	return out
}

// resolve returns the snapshot of namespace ns: from the manifests of dir,
// or read from the cluster kubeconfig names.
func resolve(ctx context.Context, ns, dir, kubeconfig string) (*namespaced.Snapshot[*tektonconfig.Config], error) {
	o := tektonconfig.Options(tektonconfig.SystemNamespace)
	if dir != "" {
		objs, err := kubeobjects.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		d, err := namespaced.NewDryRun(o)
		if err != nil {
			return nil, err
		}
		return d.Resolve(ns, objs)
	}
	client, err := clientFor(kubeconfig)
	if err != nil {
		return nil, err
	}
	o.NoEvents = true // a one-shot read records no Event
	r, err := namespaced.NewDirect(client, o)
	if err != nil {
		return nil, err
	}
	if err := r.Start(ctx); err != nil {
		return nil, err
	}
	defer r.Stop()
	return r.ForNamespace(ctx, ns)
}

// report is the output of snap.
func report(ns string, snap *namespaced.Snapshot[*tektonconfig.Config]) output {
	out := output{Namespace: ns, Defaults: snap.Object.Defaults, FeatureFlags: snap.Object.FeatureFlags,
		Provenance: map[string]keyProvenance{}, Rejected: []rejected{}, Hash: snap.Hash()}
	res := snap.Provenance()
	for _, k := range res.Keys() {
		p, _ := res.Explain(k)
		kp := keyProvenance{Source: p.Source.String(), Shadowed: []string{}}
		for _, s := range p.Shadowed {
			kp.Shadowed = append(kp.Shadowed, s.Source.String())
		}
		out.Provenance[snap.KeyName(k)] = kp
	}
	for _, c := range snap.Contested() {
		kp := out.Provenance[snap.KeyName(c.Key)]
		for _, o := range c.Others {
			kp.Contested = append(kp.Contested, contender{Source: o.Source.String(), Value: o.Value})
		}
		out.Provenance[snap.KeyName(c.Key)] = kp
	}
	for _, d := range snap.Rejected() {
		out.Rejected = append(out.Rejected, rejected{Source: d.Source.String(), Key: d.Key, Reason: d.Why()})
	}
	for _, err := range snap.Ignored() {
		var le *namespaced.LayerError
		if errors.As(err, &le) {
			out.Rejected = append(out.Rejected, rejected{Source: le.Source.String(), Reason: le.Err.Error()})
		}
	}
	sort.SliceStable(out.Rejected, func(i, j int) bool {
		a, b := out.Rejected[i], out.Rejected[j]
		return a.Source < b.Source || a.Source == b.Source && a.Key < b.Key
	})
	return out
}
