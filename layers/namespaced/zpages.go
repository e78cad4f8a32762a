package namespaced

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

	"github.com/stratacfg/strata/scheme"
	strataval "github.com/stratacfg/strata/validation"
	"github.com/stratacfg/strata/zpages"
)

// ZPages returns the z-pages of a controller that runs r, to install on
// its metrics server or any mux (a controller-runtime manager's:
// zpages.Install(zpages.Handlers(opts.ExtraHandlers), ...) before it
// starts):
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
//   - /statusz says whether the resolver has started, the cluster layers and
//     the ConfigMaps it ignored (with why, unless the kind has secret
//     fields, whose values a reason may quote).
//
// The pages show every tenant's configuration to whoever reaches them:
// serve them with authentication and authorization (controller-runtime's
// metrics filters) outside a test. name names the controller on the
// pages.
func (r *Resolver[T]) ZPages(name string, flags *pflag.FlagSet) zpages.Pages {
	kind, own := r.c.o.Kind, r.c.o.Namespace
	secret := func(key string) bool { return false }
	holdsSecret := secret
	if kind != nil {
		fields := kind.MergeFields()
		secret = func(key string) bool { return fields.Has(key, strataval.Secret) }
		holdsSecret = func(key string) bool { return fields.Holds(key, strataval.Secret) }
	}
	hasSecrets := kind != nil && len(kind.MergeFields().Keys(strataval.Secret)) > 0
	return zpages.Pages{
		Name: name,
		Configs: func(req *http.Request) (map[string]zpages.Config, error) {
			ns := req.URL.Query().Get("namespace")
			var snap *Snapshot[T]
			switch {
			case ns == "" || ns == own:
				ns = own
				var err error
				if snap, err = r.ForNamespace(req.Context(), ns); err != nil {
					return nil, err
				}
			case len(validation.IsDNS1123Label(ns)) > 0:
				return nil, fmt.Errorf("%w: namespace %q: %s", zpages.ErrBadRequest, ns, strings.Join(validation.IsDNS1123Label(ns), "; "))
			default:
				var ok bool
				if snap, ok = r.cached(ns); !ok {
					return nil, fmt.Errorf("%w: the resolver holds no configuration for namespace %s: it holds those of the namespaces reconciles and admissions read", zpages.ErrNotFound, ns)
				}
			}
			obj, err := encode(kind, snap.Object)
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
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := r.st.view(ctx); err != nil {
				return zpages.Status{LastError: "the resolver has not read the cluster ConfigMap yet"}
			}
			snap, ok := r.cached(own)
			if !ok {
				var err error
				if snap, err = r.ForNamespace(ctx, own); err != nil {
					return zpages.Status{LastError: err.Error()}
				}
			}
			s := zpages.Status{Hash: snap.Hash()}
			for _, src := range snap.Sources() {
				s.Sources = append(s.Sources, src.String())
			}
			var ignored []string
			for _, e := range snap.Ignored() {
				var le *LayerError
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

// encode writes obj, the hub object, as JSON in kind's merge version when
// there is a kind, as it is otherwise (a Parsed kind's).
func encode[T any](kind *scheme.Kind, obj T) (json.RawMessage, error) {
	if ro, ok := any(obj).(runtime.Object); ok && kind != nil {
		// Encoding sets the object's apiVersion and kind: a copy, since
		// the snapshot's object is shared.
		return kind.Encode(ro.DeepCopyObject(), kind.MergeVersion(), scheme.JSON)
	}
	return json.Marshal(obj)
}
