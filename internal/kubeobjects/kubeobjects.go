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

	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/internal/yamljson"
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
	var objs []runtime.Object
	where := map[string]string{} // "ConfigMap ns/name" → where it was read
	for _, f := range gen.Files {
		read, err := decode(filepath.Join(dir, f.Name), f.Data, where)
		if err != nil {
			return nil, err
		}
		objs = append(objs, read...)
	}
	return objs, nil
}

// Decode reads the ConfigMaps and Namespaces of data, the contents of the
// file (or stream) name: YAML or JSON documents, each an object or a v1
// List of them, as `kubectl get -o yaml` prints them. It decodes as
// ReadDir does.
func Decode(name string, data []byte) ([]runtime.Object, error) {
	return decode(name, data, map[string]string{})
}

var decoder = serializer.NewCodecFactory(clientgoscheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// decode is Decode, the objects read so far in where.
func decode(name string, data []byte, where map[string]string) ([]runtime.Object, error) {
	var objs []runtime.Object
	add := func(at string, obj runtime.Object) error {
		var id string
		switch o := obj.(type) {
		case *corev1.Namespace:
			id = "Namespace " + o.Name
		case *corev1.ConfigMap:
			if o.Namespace == "" {
				return fmt.Errorf("%s: ConfigMap %s has no namespace", at, text.Cut(o.Name, text.MaxMessage))
			}
			id = "ConfigMap " + o.Namespace + "/" + o.Name
		default:
			return fmt.Errorf("%s: %T is neither a ConfigMap nor a Namespace", at, obj)
		}
		if first, ok := where[id]; ok {
			return fmt.Errorf("%s: %s is also defined in %s", at, text.Cut(id, text.MaxMessage), first)
		}
		where[id] = at
		objs = append(objs, obj)
		return nil
	}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	aliases := yamljson.NewBudget(yamljson.Limit(len(data))) // for the file's documents together
	for i := 1; ; i++ {
		raw, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		at := fmt.Sprintf("%s: document %d", name, i)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || isComments(raw) {
			continue
		}
		if err := aliases.Check(raw); err != nil { // before the decoder writes every alias out in full
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		obj, _, err := decoder.Decode(raw, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %s", at, bounded(err))
		}
		list, ok := obj.(*corev1.List)
		if !ok {
			if err := add(at, obj); err != nil {
				return nil, err
			}
			continue
		}
		for j, item := range list.Items {
			itemAt := fmt.Sprintf("%s, item %d", at, j+1)
			obj, _, err := decoder.Decode(item.Raw, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %s", itemAt, bounded(err))
			}
			if err := add(itemAt, obj); err != nil {
				return nil, err
			}
		}
	}
}

// bounded is a decoder's error about a document, with at most
// text.MaxListed of a strict decoding's problems listed, each cut.
func bounded(err error) string {
	if s, ok := runtime.AsStrictDecodingError(err); ok {
		errs := s.Errors()
		return "strict decoding error: " + text.List(len(errs), func(i int) string { return errs[i].Error() }, ", ")
	}
	return text.Cut(err.Error(), text.MaxMessage)
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
