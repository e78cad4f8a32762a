package layers

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
)

// Migrate returns what the command line's --config file itself sets,
// rewritten in version gv as YAML: no defaults, no flags, no drop-ins or
// instance file, relative paths as they are written. Comments are lost. A
// key the file sets that has no counterpart in gv is an error naming it:
// migrating must not drop a setting silently.
func (c *Component[T]) Migrate(cl *CommandLine, gv schema.GroupVersion) ([]byte, error) {
	path := cl.Config.ConfigFile
	if path == "" {
		return nil, fmt.Errorf("no --config file to migrate")
	}
	mode, _, err := c.fileModes(cl)
	if err != nil {
		return nil, err
	}
	files, err := c.Read(cl)
	if err != nil {
		return nil, err
	}
	l, _, _, err := c.newFile(path, KindFile, mode, files).decode(false)
	if err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(l.Values)) {
		if l.Values[k] == merge.Tombstone {
			// An element removed ({name: x, $patch: delete}) says
			// nothing a file of another version can hold on its own.
			return nil, fmt.Errorf("%s: key %q removes a list element: migrating would lose the removal", path, k)
		}
	}
	values := l.Values
	from := c.Kind.MergeVersion()
	obj, err := c.Kind.New(gv)
	if err != nil {
		return nil, err
	}
	dst := typed.For(reflect.TypeOf(obj))
	if gv != from {
		each, whole, _, err := convertEach(c.Kind, from, gv, nil, values, dst)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if values, err = joinKeys(each, whole, gv); err != nil {
			return nil, fmt.Errorf("%s: %w: migrating would lose it", path, err)
		}
	}
	api, _ := json.Marshal(gv.String())
	kind, _ := json.Marshal(c.Kind.GroupKind().Kind)
	values["/apiVersion"], values["/kind"] = string(api), string(kind)
	doc, err := dst.Unflatten(values)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return yaml.JSONToYAML(doc)
}
