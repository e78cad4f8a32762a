package layers

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"

	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
	"github.com/stratacfg/strata/watch"
	"github.com/stratacfg/strata/zpages"
)

// zpagesError is what /statusz may say of err, a reload's error: err
// itself when the kind has no secret fields. When it has some, a message
// may quote their values: the errors of a validation (validation.ErrorList)
// are shown but for those of a field that is or holds a secret, each of
// which says only which field was refused; so is a decoding error that
// names fields and no value (an unknown or duplicate field, a missing or
// unknown apiVersion, an empty or oversized file); any other error says
// that the reload was refused and where to read why.
func (c *Component[T]) zpagesError(err error) string {
	if err == nil {
		return ""
	}
	fields := c.Kind.MergeFields()
	if len(fields.Keys(validation.Secret)) == 0 {
		return err.Error()
	}
	var se *scheme.Error
	if errors.As(err, &se) && strings.HasSuffix(err.Error(), se.Error()) && quotesNoValue(se.Kind) && !secretKeysInPaths(fields) {
		return err.Error()
	}
	var list validation.ErrorList
	if !errors.As(err, &list) {
		return "the reload was refused; why is in the log (it may quote a secret value)"
	}
	shown := make(validation.ErrorList, len(list))
	for i, e := range list {
		shown[i] = e
		if key := validation.KeyOf(e.Err.Field); secretAt(fields, key) {
			fe := *e.Err
			fe.BadValue, fe.Detail = "CLASSIFIED", "refused; why is in the log (the value is secret)"
			if at := secretField(fields, key); at != key {
				fe.Field = fieldName(at) // a secret map's keys are the secret
			}
			hidden := *e
			hidden.Err = &fe
			shown[i] = &hidden
		}
	}
	return "invalid configuration:\n" + shown.Error()
}

// quotesNoValue reports whether a decoding error of kind names fields,
// versions and sizes, never a value.
func quotesNoValue(kind error) bool {
	for _, k := range []error{scheme.ErrStrict, scheme.ErrTypeMeta, scheme.ErrUnknownType, scheme.ErrEmpty, scheme.ErrTooLarge, scheme.ErrRemovedVersion, scheme.ErrExperimentalVersion} {
		if kind == k {
			return true
		}
	}
	return false
}

// secretKeysInPaths reports whether a field's path may hold a secret: a
// secret map's keys (a token file keyed by token), which an unknown or
// duplicate field names.
func secretKeysInPaths(fields *validation.Fields) bool {
	t := typed.For(fields.Type())
	for _, key := range fields.Keys(validation.Secret) {
		ft, ok := t.At(strings.ReplaceAll(key, "*", "x"))
		if strings.Contains(key, "*") || !ok || holdsMap(ft, map[reflect.Type]bool{}) {
			return true
		}
	}
	return false
}

// holdsMap reports whether a value of type t may be or hold a map.
func holdsMap(t reflect.Type, seen map[reflect.Type]bool) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Map || t.Kind() == reflect.Interface:
		return true
	case t.Kind() != reflect.Struct || seen[t]:
		return false
	}
	seen[t] = true
	for i := range t.NumField() {
		if holdsMap(t.Field(i).Type, seen) {
			return true
		}
	}
	return false
}

// secretAt reports whether the value at key may quote a secret: key is, is
// inside or holds a field marked secret.
func secretAt(fields *validation.Fields, key string) bool {
	return fields.Holds(key, validation.Secret) || secretField(fields, key) != key
}

// secretField returns the outermost field marked secret that key is
// under, or key itself when there is none.
func secretField(fields *validation.Fields, key string) string {
	for i := 1; i < len(key); i++ {
		if key[i] == '/' && fields.Has(key[:i], validation.Secret) {
			return key[:i]
		}
	}
	return key
}

// WatchedZPages is ZPages over the configuration w keeps, /statusz also
// saying why the last reload was refused, until one is applied
// (zpagesError).
func (c *Component[T]) WatchedZPages(cl *CommandLine, w *watch.Watcher[*Loaded[T]]) zpages.Pages {
	pages := c.ZPages(cl, w.Current)
	status := pages.Status
	pages.Status = func() zpages.Status {
		s := status()
		s.LastError = c.zpagesError(w.Refused())
		return s
	}
	return pages
}

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
	// A flag bound to a key that holds a secret field shows CLASSIFIED.
	holdsSecret := func(key string) bool { return fields.Holds(key, validation.Secret) }
	keys := map[string]string{}
	for _, b := range cl.flags.bindings {
		if f := cl.FlagSet.Lookup(b.name); f != nil {
			keys[f.Name] = b.key // the name normalized, as /flagz reads it
		}
	}
	return zpages.Pages{
		Name: c.Name,
		Configs: func(*http.Request) (map[string]zpages.Config, error) {
			cfg := current()
			// Encoding sets the object's apiVersion and kind: a copy,
			// since the object in effect is shared.
			obj, err := c.Kind.Encode(cfg.Object.DeepCopyObject(), c.Kind.MergeVersion(), scheme.JSON)
			if err != nil {
				return nil, err
			}
			return map[string]zpages.Config{c.Name: {Object: json.RawMessage(obj), Provenance: cfg.Provenance, Secret: secret}}, nil
		},
		Flags:     cl.FlagSet,
		FlagKeys:  keys,
		SecretKey: holdsSecret,
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
