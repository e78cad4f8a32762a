package stratacr

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	strataval "github.com/stratacfg/strata/validation"
	"github.com/stratacfg/strata/zpages"
)

// ZPages returns the z-pages of a manager that runs r, to install on its
// metrics server (zpages.Install(zpages.Handlers(opts.ExtraHandlers), ...)
// before the manager starts) or on any mux:
//
//   - /configz shows the configuration of the namespace ?namespace=NS
//     names, as a reconcile or an admission in it reads it, with the
//     source of every key; without a namespace, that of the namespace of
//     the cluster ConfigMap, which is what a namespace without overrides
//     gets. A field marked secret, and a value that names a Secret's key,
//     show CLASSIFIED.
//   - /flagz shows flags, the manager's command line (nil: none;
//     zpages.GoFlags adapts a flag.FlagSet).
//   - /statusz says whether the resolver is ready, the cluster layers and
//     the ConfigMaps it ignored.
//
// name names the manager on the pages.
func ZPages[T any](r *Resolver[T], name string, flags *pflag.FlagSet) zpages.Pages {
	secret := func(key string) bool { return false }
	if r.kind != nil {
		fields := r.kind.MergeFields()
		secret = func(key string) bool { return fields.Has(key, strataval.Secret) }
	}
	return zpages.Pages{
		Name: name,
		Configs: func(req *http.Request) (map[string]zpages.Config, error) {
			ns := req.URL.Query().Get("namespace")
			if ns == "" {
				ns = r.namespace
			}
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return nil, fmt.Errorf("%w: namespace %q: %s", zpages.ErrBadRequest, ns, strings.Join(errs, "; "))
			}
			snap, err := r.ForNamespace(req.Context(), ns)
			if err != nil {
				return nil, err
			}
			obj, err := r.encode(snap.Object)
			if err != nil {
				return nil, err
			}
			prov := snap.Provenance()
			return map[string]zpages.Config{ns: {Object: obj, Provenance: prov, Secret: func(key string) bool {
				if secret(key) {
					return true
				}
				v, ok := prov.Lookup(key)
				_, ref := merge.RefOf(v)
				return ok && ref
			}}}, nil
		},
		Flags:     flags,
		SecretKey: secret,
		Status: func() zpages.Status {
			select {
			case <-r.Ready():
			default:
				return zpages.Status{LastError: "the resolver has not read the cluster ConfigMap yet"}
			}
			snap, err := r.ForNamespace(context.Background(), r.namespace)
			if err != nil {
				return zpages.Status{LastError: err.Error()}
			}
			s := zpages.Status{Hash: snap.Hash()}
			for _, src := range snap.Sources() {
				s.Sources = append(s.Sources, src.String())
			}
			var ignored []string
			for _, e := range snap.Ignored() {
				ignored = append(ignored, e.Error())
			}
			s.LastError = strings.Join(ignored, "; ")
			return s
		},
	}
}

// encode writes obj, the hub object, as JSON in the kind's merge version
// when the kind is a scheme's, as it is otherwise.
func (r *Resolver[T]) encode(obj T) (json.RawMessage, error) {
	if ro, ok := any(obj).(runtime.Object); ok && r.kind != nil {
		return r.kind.Encode(ro, r.kind.MergeVersion(), scheme.JSON)
	}
	return json.Marshal(obj)
}
