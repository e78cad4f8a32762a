package stratacr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/scheme"
	strataval "github.com/stratacfg/strata/validation"
	"github.com/stratacfg/strata/zpages"
)

// ZPages returns the z-pages of a manager that runs r, to install on its
// metrics server (zpages.Install(zpages.Handlers(opts.ExtraHandlers), ...)
// before the manager starts) or on any mux:
//
//   - /configz shows the configuration of the namespace of the cluster
//     ConfigMap, which is what a namespace without overrides gets, with
//     the source of every key; ?namespace=NS shows the one the resolver
//     holds for NS, as a reconcile or an admission there reads it, and a
//     namespace it holds none for is a 404: the page never makes the
//     resolver read a namespace or push another out. A field marked
//     secret, and a value that names a Secret's key, show CLASSIFIED.
//   - /flagz shows flags, the manager's command line (nil: none;
//     zpages.GoFlags adapts a flag.FlagSet).
//   - /statusz says whether the resolver is ready, the cluster layers and
//     the ConfigMaps it ignored (with why, unless the kind has secret
//     fields, whose values a reason may quote).
//
// The pages show every tenant's configuration to whoever reaches them:
// serve the metrics server with authentication and authorization
// (controller-runtime's metrics filters) outside a test. name names the
// manager on the pages.
func ZPages[T any](r *Resolver[T], name string, flags *pflag.FlagSet) zpages.Pages {
	secret := func(key string) bool { return false }
	holdsSecret := secret
	if r.kind != nil {
		fields := r.kind.MergeFields()
		secret = func(key string) bool { return fields.Has(key, strataval.Secret) }
		holdsSecret = func(key string) bool { return fields.Holds(key, strataval.Secret) }
	}
	hasSecrets := r.kind != nil && len(r.kind.MergeFields().Keys(strataval.Secret)) > 0
	return zpages.Pages{
		Name: name,
		Configs: func(req *http.Request) (map[string]zpages.Config, error) {
			ns := req.URL.Query().Get("namespace")
			var snap *namespaced.Snapshot[T]
			switch {
			case ns == "" || ns == r.namespace:
				ns = r.namespace
				var err error
				if snap, err = r.ForNamespace(req.Context(), ns); err != nil {
					return nil, err
				}
			case len(validation.IsDNS1123Label(ns)) > 0:
				return nil, fmt.Errorf("%w: namespace %q: %s", zpages.ErrBadRequest, ns, strings.Join(validation.IsDNS1123Label(ns), "; "))
			default:
				var ok bool
				if snap, ok = r.Cached(ns); !ok {
					return nil, fmt.Errorf("%w: the resolver holds no configuration for namespace %s: it holds those of the namespaces reconciles and admissions read", zpages.ErrNotFound, ns)
				}
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
				_, ref := prov.RefOf(key, v)
				return ok && ref
			}}}, nil
		},
		Flags:     flags,
		SecretKey: holdsSecret,
		Status: func() zpages.Status {
			select {
			case <-r.Ready():
			default:
				return zpages.Status{LastError: "the resolver has not read the cluster ConfigMap yet"}
			}
			snap, ok := r.Cached(r.namespace)
			if !ok {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				var err error
				if snap, err = r.ForNamespace(ctx, r.namespace); err != nil {
					return zpages.Status{LastError: err.Error()}
				}
			}
			s := zpages.Status{Hash: snap.Hash()}
			for _, src := range snap.Sources() {
				s.Sources = append(s.Sources, src.String())
			}
			var ignored []string
			for _, e := range snap.Ignored() {
				var le *namespaced.LayerError
				if hasSecrets && errors.As(e, &le) {
					ignored = append(ignored, le.Source.String()+": ignored (why is in the log and the events: it may quote a secret value)")
					continue
				}
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
		// Encoding sets the object's apiVersion and kind: a copy, since
		// the snapshot's object is shared.
		return r.kind.Encode(ro.DeepCopyObject(), r.kind.MergeVersion(), scheme.JSON)
	}
	return json.Marshal(obj)
}
