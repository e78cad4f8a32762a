package layers

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
)

// Flags binds command-line flags to configuration keys. A bound flag
// becomes a layer of its own, above every file, but only when it was set on
// the command line (pflag's Changed): a flag's default never overrides a
// file (kube-proxy did, kubernetes#98302). A flag whose value is an object,
// such as --feature-gates, merges per key.
type Flags struct {
	t        *typed.Type // the merge version's
	bindings []binding
	// notConfig holds the flags declared to set no configuration key,
	// with why.
	notConfig map[string]string
}

type binding struct {
	name    string
	key     string
	value   any
	legacy  bool
	replace bool
	// from, when set, gives the key's value as JSON (BindFields).
	from func(key string) ([]byte, error)
}

// BindOption changes how a flag is bound.
type BindOption func(*binding)

// LegacyDefault makes the flag's own default a layer when the component
// runs without a config file, below everything else, reported in
// provenance as "legacy-default --name". This is how a component whose flags
// had other defaults than its config file keeps both without lying about
// where a value came from (kubelet's applyLegacyDefaults).
func LegacyDefault() BindOption { return func(b *binding) { b.legacy = true } }

// Replace makes the flag replace the whole value at its key instead of
// merging into it: a map flag such as kubelet's --kube-reserved replaces
// the file's map, where --feature-gates adds to the file's gates. The keys
// it removes are recorded in provenance as replaced by the flag.
func Replace() BindOption { return func(b *binding) { b.replace = true } }

// NotConfiguration declares flags of the component that set no
// configuration key (--kubeconfig of a kubelet, --watch of a server), with
// why. Every flag Component.Flags registers must be bound or declared so:
// a flag that is neither is an error when the command line is built, not
// a value silently ignored.
func (f *Flags) NotConfiguration(why string, names ...string) {
	if f.notConfig == nil {
		f.notConfig = map[string]string{}
	}
	for _, n := range names {
		f.notConfig[n] = why
	}
}

// Bind binds flag name to key. value is the pointer the flag writes into
// (as given to pflag's XxxVar or to a pflag.Value such as
// cliflag.NewMapStringBool); its JSON is the key's value. When value is nil
// the flag's String() is converted by the type at key. The binding is
// checked when the command line is built (see NewCommandLine).
func (f *Flags) Bind(name, key string, value any, opts ...BindOption) {
	b := binding{name: name, key: key, value: value}
	for _, o := range opts {
		o(&b)
	}
	f.bindings = append(f.bindings, b)
}

// BindFields binds every flag of fs that writes into a field of obj, the
// struct the flags were registered against (a pointer; kubelet's
// AddKubeletConfigFlags registers against its internal configuration), to
// the key of the field of the same Go name in the merge version: the
// binding table of a component that registers its flags that way is
// derived, not written by hand. A set flag's value is read at its key in
// versioned, obj's document in the merge version (obj converted), so that
// a field whose internal type has no JSON names still has the merge
// version's. options gives each flag's BindOptions (Replace for a map
// flag that replaces the file's map, LegacyDefault); nil for none. The
// flags whose field BindFields cannot find are returned, for the caller
// to bind or declare NotConfiguration.
func (f *Flags) BindFields(fs *pflag.FlagSet, obj any, versioned func() ([]byte, error), options func(flag, key string) []BindOption) (unplaced []string) {
	keys, unplaced := FieldKeys(fs, obj, f.t.Root())
	var doc map[string]string // versioned, flattened, read once per load
	var docErr error
	read := func(key string) ([]byte, error) {
		if doc == nil && docErr == nil {
			var raw []byte
			if raw, docErr = versioned(); docErr == nil {
				doc, docErr = merge.Flatten(raw)
			}
		}
		if docErr != nil {
			return nil, docErr
		}
		sub := map[string]string{}
		for k, v := range doc {
			if k == key {
				return []byte(v), nil
			}
			if rest, ok := strings.CutPrefix(k, key+"/"); ok {
				sub["/"+rest] = v
			}
		}
		if len(sub) == 0 {
			return []byte("null"), nil
		}
		return merge.Unflatten(sub)
	}
	fs.VisitAll(func(fl *pflag.Flag) {
		key, ok := keys[fl.Name]
		if !ok {
			return
		}
		b := binding{name: fl.Name, key: key, from: func(string) ([]byte, error) { return read(key) }}
		if options != nil {
			for _, o := range options(fl.Name, key) {
				o(&b)
			}
		}
		f.bindings = append(f.bindings, b)
	})
	return unplaced
}

// FieldKeys maps each flag of fs that writes into a field of obj (a
// pointer to the struct the flags were registered against) to the JSON
// pointer of the field of the same Go name in into, and lists the flags
// it could not place. BindFields binds by it; a loader that applies flags
// itself attributes keys to flags by it.
func FieldKeys(fs *pflag.FlagSet, obj any, into reflect.Type) (keys map[string]string, unplaced []string) {
	root := reflect.ValueOf(obj)
	if root.Kind() != reflect.Pointer || root.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("layers: FieldKeys takes a pointer to a struct, not %T", obj))
	}
	fields := typed.Addresses(root.Elem())
	keys = map[string]string{}
	fs.VisitAll(func(fl *pflag.Flag) {
		names, ok := fieldOf(fl.Value, fields)
		if !ok {
			unplaced = append(unplaced, fl.Name)
			return
		}
		key, err := typed.KeyOf(into, names)
		if err != nil {
			unplaced = append(unplaced, fl.Name)
			return
		}
		keys[fl.Name] = key
	})
	return keys, unplaced
}

// fieldOf finds the field a flag value writes into: the value itself (a
// pflag value of a named basic type points at it, or a struct such as a
// duration is the field), or a pointer it holds (cliflag's map values,
// kubelet's IPVar and ReservedMemoryVar). Among fields at one address,
// the one whose kind is the value's wins.
func fieldOf(v pflag.Value, fields map[uintptr][]typed.FieldAt) ([]string, bool) {
	pick := func(addr uintptr, kind reflect.Kind) ([]string, bool) {
		cands := fields[addr]
		for _, c := range cands {
			if c.Type.Kind() == kind {
				return c.Names, true
			}
		}
		if len(cands) > 0 {
			return cands[0].Names, true
		}
		return nil, false
	}
	rv := reflect.ValueOf(v)
	wrapper := rv // a struct holding the pointer, or a pointer to one
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, false
		}
		if names, ok := pick(rv.Pointer(), rv.Elem().Kind()); ok {
			return names, true
		}
		wrapper = rv.Elem()
	}
	if wrapper.Kind() == reflect.Struct {
		for i := 0; i < wrapper.NumField(); i++ {
			if fv := wrapper.Field(i); fv.Kind() == reflect.Pointer && !fv.IsNil() {
				if names, ok := pick(fv.Pointer(), fv.Type().Elem().Kind()); ok {
					return names, true
				}
			}
		}
	}
	return nil, false
}

// check checks every binding against the flags of fs and the merge
// version's type: the flag is registered, the key is a field, and the
// flag's value can be the key's; and every flag of own is bound or
// declared NotConfiguration.
func (f *Flags) check(fs *pflag.FlagSet, own []*pflag.FlagSet) error {
	var errs []error
	bound := map[string]bool{}
	for _, b := range f.bindings {
		bound[string(fs.GetNormalizeFunc()(fs, b.name))] = true
	}
	for _, set := range own {
		set.VisitAll(func(fl *pflag.Flag) {
			name := string(fs.GetNormalizeFunc()(fs, fl.Name))
			if _, declared := f.notConfig[fl.Name]; !bound[name] && !declared {
				errs = append(errs, fmt.Errorf("flag --%s is bound to no configuration key: Bind it, or declare it with NotConfiguration", fl.Name))
			}
		})
	}
	for name := range f.notConfig {
		if fs.Lookup(name) == nil {
			errs = append(errs, fmt.Errorf("flag --%s is declared NotConfiguration but not registered", name))
		}
	}
	for _, b := range f.bindings {
		fl := fs.Lookup(b.name)
		if fl == nil {
			errs = append(errs, fmt.Errorf("flag --%s is bound to %s but not registered", b.name, b.key))
			continue
		}
		kt, ok := f.t.At(b.key)
		if !ok {
			errs = append(errs, fmt.Errorf("flag --%s is bound to %s, which is no field of %s", b.name, b.key, f.t.Root()))
			continue
		}
		switch {
		case b.value != nil:
			vt := reflect.TypeOf(b.value)
			if vt.Kind() != reflect.Pointer {
				errs = append(errs, fmt.Errorf("flag --%s: bind the pointer the flag writes into, not a %s", b.name, vt))
			} else if !assignable(vt.Elem(), kt) {
				err := fmt.Errorf("flag --%s holds a %s, which cannot set %s (a %s)", b.name, vt.Elem(), b.key, kt)
				if vt.Elem() == reflect.TypeFor[time.Duration]() && assignable(reflect.TypeFor[string](), kt) {
					// A time.Duration's JSON is nanoseconds; the flag's
					// text ("1m30s") is what a duration field reads.
					err = fmt.Errorf("%w: bind nil instead of the pointer, and the flag's text (%q) is read as a %s", err, fl.Value.String(), kt)
				}
				errs = append(errs, err)
			}
		case isSlice(fl.Value):
			if k := kt.Kind(); k != reflect.Slice && k != reflect.Array {
				errs = append(errs, fmt.Errorf("flag --%s holds a list, which cannot set %s (a %s)", b.name, b.key, kt))
			}
		default:
			if _, err := f.t.Convert(b.key, fl.DefValue); err != nil {
				errs = append(errs, fmt.Errorf("flag --%s (a %s flag) cannot set %s: its default %w", b.name, fl.Value.Type(), b.key, err))
			}
		}
	}
	return errors.Join(errs...)
}

func isSlice(v pflag.Value) bool {
	_, ok := v.(pflag.SliceValue)
	return ok
}

// assignable reports whether the JSON of a value of Go type v can be the
// JSON of a field of type k: the same type, or the same kind of value
// (booleans, numbers, strings, or maps and lists of such), strings for
// types that decode themselves from a string (durations, quantities), and
// a pointer wherever its element would do.
func assignable(v, k reflect.Type) bool {
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	for k.Kind() == reflect.Pointer {
		k = k.Elem()
	}
	if v == k {
		return true
	}
	if v == reflect.TypeFor[time.Duration]() {
		return false // its JSON is nanoseconds, not what a field of another type takes
	}
	custom := func(t reflect.Type) bool {
		pt := reflect.PointerTo(t)
		return pt.Implements(reflect.TypeFor[json.Unmarshaler]()) || pt.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
	}
	if custom(k) || custom(v) {
		return v.Kind() == reflect.String || k.Kind() == reflect.Interface
	}
	switch k.Kind() {
	case reflect.Interface:
		return true
	case reflect.Bool, reflect.String:
		return v.Kind() == k.Kind()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Kind() >= reflect.Int && v.Kind() <= reflect.Uint64
	case reflect.Float32, reflect.Float64:
		return v.Kind() >= reflect.Int && v.Kind() <= reflect.Float64
	case reflect.Map:
		return v.Kind() == reflect.Map && assignable(v.Key(), k.Key()) && assignable(v.Elem(), k.Elem())
	case reflect.Slice, reflect.Array:
		return (v.Kind() == reflect.Slice || v.Kind() == reflect.Array) && assignable(v.Elem(), k.Elem())
	}
	return false
}

// layers returns one layer per bound flag set on the command line, in the
// order of binding, and the legacy-default layers of unset flags.
func (f *Flags) layers(fs *pflag.FlagSet, s *typed.Type, legacy bool) (set, defaults []*merge.Layer, err error) {
	for _, b := range f.bindings {
		fl := fs.Lookup(b.name)
		if fl == nil {
			return nil, nil, fmt.Errorf("flag --%s is bound to %s but not registered", b.name, b.key)
		}
		if !fl.Changed && !(legacy && b.legacy) {
			continue
		}
		raw, err := flagJSON(fl, b, s)
		if err != nil {
			return nil, nil, fmt.Errorf("flag --%s: %w", b.name, err)
		}
		vals := map[string]string{}
		if err := s.Lists().FlattenValue(vals, b.key, raw); err != nil {
			return nil, nil, fmt.Errorf("flag --%s: %w", b.name, err)
		}
		l := &merge.Layer{Source: merge.Source{Origin: OriginFlag, Name: "--" + b.name}, Values: vals, Lists: s.Lists()}
		if !fl.Changed {
			l.Source.Origin = OriginLegacyDefault
			defaults = append(defaults, l)
			continue
		}
		if b.replace {
			// What lower layers hold at the key goes first, then the
			// flag's value takes its place.
			set = append(set, &merge.Layer{Source: l.Source, Values: map[string]string{b.key: merge.Tombstone}})
		}
		set = append(set, l)
	}
	return set, defaults, nil
}

func flagJSON(fl *pflag.Flag, b binding, s *typed.Type) ([]byte, error) {
	if b.from != nil {
		return b.from(b.key)
	}
	if b.value != nil {
		return json.Marshal(b.value)
	}
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		return json.Marshal(sv.GetSlice())
	}
	v, err := s.Convert(b.key, fl.Value.String())
	return []byte(v), err
}

// BindLogging registers component-base's logging flags (--logging-format,
// -v, --vmodule, --log-flush-frequency and the split-stream options) on fs
// and binds them to the LoggingConfiguration at key, so that they layer like
// every other flag instead of writing into the configuration directly.
func (f *Flags) BindLogging(fs *pflag.FlagSet, key string) {
	scratch := logsapi.NewLoggingConfiguration()
	logsapi.AddFlags(scratch, fs)
	for _, l := range []struct {
		flag, sub string
		ptr       any
	}{
		{"logging-format", "/format", &scratch.Format},
		{logsapi.LogFlushFreqFlagName, "/flushFrequency", &scratch.FlushFrequency},
		{"v", "/verbosity", &scratch.Verbosity},
		{"vmodule", "/vmodule", &scratch.VModule},
		{"log-text-split-stream", "/options/text/splitStream", &scratch.Options.Text.SplitStream},
		{"log-text-info-buffer-size", "/options/text/infoBufferSize", &scratch.Options.Text.InfoBufferSize},
		{"log-json-split-stream", "/options/json/splitStream", &scratch.Options.JSON.SplitStream},
		{"log-json-info-buffer-size", "/options/json/infoBufferSize", &scratch.Options.JSON.InfoBufferSize},
	} {
		if fs.Lookup(l.flag) != nil {
			f.Bind(l.flag, key+l.sub, l.ptr)
		}
	}
}
