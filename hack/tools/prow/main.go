// Command prow-updateconfig publishes configuration files into ConfigMaps
// with prow's own updateconfig plugin code (sigs.k8s.io/prow
// pkg/plugins/updateconfig: FilterChanges, then Update for each ConfigMap
// it names), as the plugin does when a pull request merges, so that
// strata's readers are tested against the producer prow users run.
//
//	prow-updateconfig -kubeconfig F -namespace NS -root DIR -partitions A,B,...
//	                  -sha SHA [-gzip] [-bootstrap] FILE...
//
// FILE... are the merge's changed files, relative to DIR: one that DIR
// holds is added or modified, one it does not is removed. With -bootstrap
// every .yaml file of DIR is published and keys the files no longer name
// are deleted, as prow's config-bootstrapper does. Every file ending in
// .yaml goes to the ConfigMap of PartitionedNames its name selects, keyed
// by its base name; Update writes SHA into VERSION of each ConfigMap the
// merge touched. One line per ConfigMap written goes to stdout.
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/prow/pkg/github"
	"sigs.k8s.io/prow/pkg/plugins"
	"sigs.k8s.io/prow/pkg/plugins/updateconfig"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the API server's kubeconfig")
	namespace := flag.String("namespace", "", "the ConfigMaps' namespace")
	root := flag.String("root", "", "the checkout the files are read from")
	partitions := flag.String("partitions", "", "the ConfigMaps' names, comma-separated (PartitionedNames)")
	sha := flag.String("sha", "", "the merge commit, written into VERSION")
	gz := flag.Bool("gzip", false, "gzip every file (ConfigUpdater.GZIP)")
	bootstrap := flag.Bool("bootstrap", false, "publish every file and delete stale keys (config-bootstrapper)")
	flag.Parse()
	if err := run(*kubeconfig, *namespace, *root, strings.Split(*partitions, ","), *sha, *gz, *bootstrap, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "prow-updateconfig:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace, root string, partitions []string, sha string, gz, bootstrap bool, files []string) error {
	if kubeconfig == "" || namespace == "" || root == "" || len(partitions) == 0 || partitions[0] == "" {
		return fmt.Errorf("-kubeconfig, -namespace, -root and -partitions are required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var changes []github.PullRequestChange
	if bootstrap {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			changes = append(changes, github.PullRequestChange{Filename: filepath.ToSlash(rel), Status: github.PullRequestFileAdded})
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, f := range files {
		status := github.PullRequestFileModified
		if _, err := os.Stat(filepath.Join(root, f)); os.IsNotExist(err) {
			status = github.PullRequestFileRemoved
		}
		changes = append(changes, github.PullRequestChange{Filename: f, Status: string(status)})
	}
	updater := plugins.ConfigUpdater{
		Maps: map[string]plugins.ConfigMapSpec{
			"**/*.yaml": {PartitionedNames: partitions, Clusters: map[string][]string{"default": {namespace}}},
		},
		GZIP: gz,
	}
	log := logrus.NewEntry(logrus.New())
	log.Logger.SetOutput(os.Stderr)
	log.Logger.SetLevel(logrus.WarnLevel)
	toUpdate := updateconfig.FilterChanges(updater, changes, namespace, bootstrap, log)
	ids := make([]plugins.ConfigMapID, 0, len(toUpdate))
	for id := range toUpdate {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].Name < ids[j].Name })
	for _, id := range ids {
		err := updateconfig.Update(&updateconfig.OSFileGetter{Root: root}, client.CoreV1().ConfigMaps(id.Namespace), id.Name, id.Namespace, toUpdate[id], bootstrap, nil, log, sha)
		if err != nil {
			return fmt.Errorf("ConfigMap %s/%s: %w", id.Namespace, id.Name, err)
		}
		fmt.Println(id.Name)
	}
	return nil
}
