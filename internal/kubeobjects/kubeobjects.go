// Package kubeobjects reads the ConfigMaps and Namespaces the example
// commands resolve offline (--from-dir) from a directory of manifests.
package kubeobjects

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/stratacfg/strata/watch"
)

// ReadDir reads every ConfigMap and Namespace in the direct-child
// .yaml, .yml and .json files of dir, in lexical order, as one
// generation read by strata's bounded reader (regular files only, each at
// most 4 MiB, files.DefaultMaxBytes). Decoding is strict: a duplicate or unknown
// field is an error, and so is an object defined twice, so that a typo is
// never silently a different configuration; other kinds are an error too,
// and so is a link with a manifest's name that leads to a directory.
func ReadDir(dir string) ([]runtime.Object, error) {
	manifest := func(name string) bool {
		return !strings.HasPrefix(name, ".") && slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(name))
	}
	gen, err := watch.Read(dir, watch.ReadOptions{Select: func(name string) string {
		if manifest(name) {
			return ""
		}
		return "not a manifest"
	}})
	if err != nil {
		return nil, err
	}
	for _, s := range gen.Skipped {
		if s.Link {
			return nil, fmt.Errorf("%s: %s, not a manifest file", filepath.Join(dir, s.Name), s.Reason)
		}
	}
	decoder := serializer.NewCodecFactory(clientgoscheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var objs []runtime.Object
	where := map[string]string{} // "ConfigMap ns/name" → where it was read
	for _, f := range gen.Files {
		path := filepath.Join(dir, f.Name)
		docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(f.Data)))
		for i := 1; ; i++ {
			raw, err := docs.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			at := fmt.Sprintf("%s: document %d", path, i)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", at, err)
			}
			if len(bytes.TrimSpace(raw)) == 0 || isComments(raw) {
				continue
			}
			obj, _, err := decoder.Decode(raw, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", at, err)
			}
			var id string
			switch o := obj.(type) {
			case *corev1.Namespace:
				id = "Namespace " + o.Name
			case *corev1.ConfigMap:
				if o.Namespace == "" {
					return nil, fmt.Errorf("%s: ConfigMap %s has no namespace", at, o.Name)
				}
				id = "ConfigMap " + o.Namespace + "/" + o.Name
			default:
				return nil, fmt.Errorf("%s: %T is neither a ConfigMap nor a Namespace", at, obj)
			}
			if first, ok := where[id]; ok {
				return nil, fmt.Errorf("%s: %s is also defined in %s", at, id, first)
			}
			where[id] = at
			objs = append(objs, obj)
		}
	}
	return objs, nil
}

// isComments reports whether a YAML document holds only comments.
func isComments(raw []byte) bool {
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 && line[0] != '#' {
			return false
		}
	}
	return true
}
