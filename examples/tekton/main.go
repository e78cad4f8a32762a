// Command tekton-config resolves Tekton's configuration for a namespace as
// TEP-0085 defines it, with Tekton's own config.Defaults and
// config.FeatureFlags and their own constructors: the cluster ConfigMaps
// config-defaults and feature-flags in tekton-pipelines, the namespace's
// tekton-config-defaults and tekton-feature-flags above them, key by key,
// under the gate and the lock list of feature-flags.
//
//	tekton-config resolve --namespace NS (--from-dir DIR | --kubeconfig FILE)
//
// It prints one JSON object: both configurations, where each key came
// from, the keys and layers refused with why, and the hash of the
// configuration. Invalid cluster ConfigMaps are an error (exit 1, the
// reason on stderr, nothing on stdout); an invalid namespace ConfigMap is
// refused as a whole, listed with its constructor's error, and the
// namespace gets the cluster's values.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/tektoncd/pipeline/pkg/apis/config"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stratacfg/strata/examples/tekton/tektonconfig"
	"github.com/stratacfg/strata/internal/kubeobjects"
	"github.com/stratacfg/strata/layers/namespaced"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = "usage: tekton-config resolve --namespace NS (--from-dir DIR | --kubeconfig FILE)\n"

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
	if len(args) == 0 || args[0] != "resolve" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("tekton-config resolve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	ns := fs.String("namespace", "", "the namespace to resolve")
	dir := fs.String("from-dir", "", "read ConfigMap and Namespace manifests from this directory's .yaml, .yml and .json files instead of a cluster")
	kubeconfig := fs.String("kubeconfig", "", "read the ConfigMaps from the API server this kubeconfig names")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *ns == "" || (*dir == "") == (*kubeconfig == "") || fs.NArg() > 0 {
		fmt.Fprint(stderr, "tekton-config resolve: --namespace and exactly one of --from-dir and --kubeconfig are required\n", usage)
		return 2
	}
	snap, err := resolve(ctx, *ns, *dir, *kubeconfig)
	if err != nil {
		fmt.Fprintln(stderr, "tekton-config:", err)
		return 1
	}
	out, err := json.MarshalIndent(report(*ns, snap), "", "  ")
	if err != nil {
		fmt.Fprintln(stderr, "tekton-config:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return 0
}

// resolve returns the snapshot of namespace ns: from the manifests of dir,
// or read from the cluster kubeconfig names.
func resolve(ctx context.Context, ns, dir, kubeconfig string) (*namespaced.Snapshot[*tektonconfig.Config], error) {
	o := tektonconfig.Options()
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
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	o.Recorder = namespaced.NoEvents() // a one-shot read records no Event
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
