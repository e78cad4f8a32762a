package zpages

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratacfg/strata/internal/secret"
	"github.com/stratacfg/strata/merge"
)

// KeySource is where one configuration key's value came from.
type KeySource struct {
	// Source is the layer that set the value in effect; for a list
	// merged per element, "elements".
	Source string `json:"source"`
	// Shadowed lists the lower layers that set it too, the nearest
	// first; their values are not shown.
	Shadowed []string `json:"shadowed,omitempty"`
	// List is how a list merged per element merges: "map" (by a key
	// member), "set" or "append"; Elements are the sources of its
	// elements, by their pointer segments (a keyed element's key, a set's
	// element, an appended element's layer and place).
	List     string               `json:"list,omitempty"`
	Elements map[string]KeySource `json:"elements,omitempty"`
}

// Configz is strata's /configz object: each configuration with the source
// of every key.
type Configz struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Configurations    map[string]ConfigzEntry `json:"configurations"`
}

// ConfigzEntry is one configuration and its sources.
type ConfigzEntry struct {
	Config  json.RawMessage      `json:"config"`
	Sources map[string]KeySource `json:"sources"`
}

func (p *Pages) configz(r *http.Request) (*reply, error) {
	configs, err := p.Configs(r)
	if err != nil {
		return nil, err
	}
	plain := map[string]json.RawMessage{}
	obj := &Configz{TypeMeta: metav1.TypeMeta{Kind: "Configz", APIVersion: strataGroup + "/" + strataVersion}, ObjectMeta: p.objectMeta(), Configurations: map[string]ConfigzEntry{}}
	var b strings.Builder
	b.WriteString(p.header("configz"))
	names := make([]string, 0, len(configs))
	for name := range configs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		c := configs[name]
		shown, values, err := c.shown()
		if err != nil {
			return nil, fmt.Errorf("configuration %s: %w", name, err)
		}
		plain[name] = shown
		entry := ConfigzEntry{Config: shown, Sources: map[string]KeySource{}}
		fmt.Fprintf(&b, "[%s]\n", name)
		for _, key := range slices.Sorted(maps.Keys(values)) {
			if key == "/apiVersion" || key == "/kind" {
				continue
			}
			src := c.sourceOf(key)
			entry.Sources[key] = src
			fmt.Fprintf(&b, "%s=%s (%s)\n", key, values[key], src.line())
		}
		obj.Configurations[name] = entry
	}
	return &reply{text: b.String(), objects: map[object]any{{"Configz", strataVersion, strataGroup}: obj}, def: plain}, nil
}

// shown returns the configuration with its secret values classified, and
// its keys flattened.
func (c Config) shown() (json.RawMessage, map[string]string, error) {
	if c.Secret == nil {
		values, err := merge.Flatten(c.Object)
		return c.Object, values, err
	}
	out, err := secret.Classify(c.Object, c.Secret)
	if err != nil {
		return nil, nil, err
	}
	// The text is written from the classified document: a leaf of the
	// flattened keys may be a list that holds a secret.
	values, err := merge.Flatten(out)
	return out, values, err
}

// sourceOf is the source of key, or of the nearest ancestor a layer set.
func (c Config) sourceOf(key string) KeySource {
	if c.Provenance == nil {
		return KeySource{Source: "unknown"}
	}
	if member, ok := c.Provenance.ListMember(key); ok {
		out := KeySource{Source: "elements", List: merge.ListStrategy(member), Elements: map[string]KeySource{}}
		for _, seg := range c.Provenance.Elements(key) {
			out.Elements[seg] = c.sourceOf(merge.Child(key, seg))
		}
		return out
	}
	for k := key; k != ""; k = parent(k) {
		if p, ok := c.Provenance.Explain(k); ok {
			src := p.Source
			if k != key { // a member of a value set whole, which defaulting may have filled
				src, _ = c.Provenance.SourceOfMember(k, key[len(k):])
			}
			out := KeySource{Source: src.String()}
			if src == p.Source {
				for _, s := range p.Shadowed {
					out.Shadowed = append(out.Shadowed, s.Source.String())
				}
			}
			return out
		}
	}
	// A value shown whole (a secret map, classified) that layers set key
	// by key: the layers that set what is under it.
	var under []string
	for _, k := range c.Provenance.Keys() {
		if merge.IsAncestor(key, k) {
			if src, ok := c.Provenance.SourceOf(k); ok && !slices.Contains(under, src.String()) {
				under = append(under, src.String())
			}
		}
	}
	if len(under) > 0 {
		return KeySource{Source: strings.Join(under, ", ")}
	}
	return KeySource{Source: "default"}
}

func (s KeySource) line() string {
	if s.List != "" {
		parts := make([]string, 0, len(s.Elements))
		for _, seg := range slices.Sorted(maps.Keys(s.Elements)) {
			parts = append(parts, seg+" from "+s.Elements[seg].line())
		}
		return s.List + " list: " + strings.Join(parts, "; ")
	}
	if len(s.Shadowed) == 0 {
		return s.Source
	}
	return s.Source + "; shadows " + strings.Join(s.Shadowed, ", ")
}

func parent(key string) string {
	if i := strings.LastIndexByte(key, '/'); i > 0 {
		return key[:i]
	}
	return ""
}
