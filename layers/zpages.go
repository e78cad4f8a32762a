package layers

import (
	"encoding/json"
	"net/http"

	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
	"github.com/stratacfg/strata/zpages"
)

// ZPages returns the component's z-pages (zpages.Install): /configz shows
// the configuration current returns, in the merge version, with the
// source of every key; /flagz the command line cl, with the key each
// bound flag sets; /statusz when the configuration was loaded, from which
// layers, and the keys waiting for a restart. Fields marked
// validation.Secret show CLASSIFIED, and so do the flags bound to them.
// current is called on every request: a watching component passes its
// watcher's Current.
func (c *Component[T]) ZPages(cl *CommandLine, current func() *Loaded[T]) zpages.Pages {
	fields := c.Kind.MergeFields()
	secret := func(key string) bool { return fields.Has(key, validation.Secret) }
	keys := map[string]string{}
	for _, b := range cl.flags.bindings {
		keys[b.name] = b.key
	}
	return zpages.Pages{
		Name: c.Name,
		Configs: func(*http.Request) (map[string]zpages.Config, error) {
			cfg := current()
			obj, err := c.Kind.Encode(cfg.Object, c.Kind.MergeVersion(), scheme.JSON)
			if err != nil {
				return nil, err
			}
			return map[string]zpages.Config{c.Name: {Object: json.RawMessage(obj), Provenance: cfg.Provenance, Secret: secret}}, nil
		},
		Flags:     cl.FlagSet,
		FlagKeys:  keys,
		SecretKey: secret,
		Status: func() zpages.Status {
			cfg := current()
			s := zpages.Status{Loaded: cfg.At, Hash: cfg.Hash, RestartRequired: cfg.RestartRequired}
			for _, src := range cfg.Provenance.Sources() {
				s.Sources = append(s.Sources, src.String())
			}
			return s
		},
	}
}
