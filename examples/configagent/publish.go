package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stratacfg/strata/watch/configset"
)

const publishUsage = `usage: configagent publish --dir DIR --kubeconfig FILE --namespace NS --manifest NAME
                           --part NAME [--part NAME ...] [--gzip-above BYTES]
`

// publish is `configagent publish`: the producer half of a set replicas
// read with --manifest (configset.Publish). 0 once the manifest is
// written (or the set already holds DIR), 1 when it could not be, 2 on a
// usage error.
func publish(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("configagent publish", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, publishUsage)
		fs.PrintDefaults()
	}
	var o configset.Options
	dir := fs.String("dir", "", "the directory of configurations to publish (a git-sync root or a checkout)")
	kubeconfig := fs.String("kubeconfig", "", "the cluster to publish to")
	fs.StringVar(&o.Namespace, "namespace", "", "the ConfigMaps' namespace")
	fs.StringVar(&o.Manifest, "manifest", "", "the manifest ConfigMap's name")
	fs.Func("part", "a part ConfigMap's name (repeatable, in a fixed order: a file's part is chosen by its index)", func(s string) error {
		if s == "" {
			return errors.New("empty")
		}
		o.Parts = append(o.Parts, s)
		return nil
	})
	fs.IntVar(&o.GzipAbove, "gzip-above", 0, "gzip files larger than this many bytes (0: 64 KiB; negative: none)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var usage string
	switch {
	case fs.NArg() > 0:
		usage = fmt.Sprintf("unexpected argument %q", fs.Arg(0))
	case *dir == "" || *kubeconfig == "" || o.Namespace == "" || o.Manifest == "" || len(o.Parts) == 0:
		usage = "--dir, --kubeconfig, --namespace, --manifest and --part are required"
	default:
		if err := o.Validate(); err != nil { // a part named twice, a name no ConfigMap may have
			usage = strings.TrimPrefix(err.Error(), "configset: ")
		}
	}
	if usage != "" {
		fmt.Fprintf(stderr, "configagent publish: %s\n%s", usage, publishUsage)
		return 2
	}
	o.Select = func(rel string) bool {
		name := path.Base(rel)
		return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
	}
	o.Labels = map[string]string{"app.kubernetes.io/managed-by": "configagent-publish"}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "configagent publish: --kubeconfig %s: %v\n", *kubeconfig, err)
		return 1
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "configagent publish:", err)
		return 1
	}
	m, err := configset.Publish(ctx, client.CoreV1(), *dir, o)
	if err != nil {
		fmt.Fprintln(stderr, "configagent publish:", err)
		return 1
	}
	out, _ := json.Marshal(m)
	fmt.Fprintf(stdout, "%s\n", out)
	return 0
}
