package layers

import (
	"encoding/json"
	"fmt"

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
	bindings []binding
}

type binding struct {
	name   string
	key    string
	value  any
	legacy bool
}

// BindOption changes how a flag is bound.
type BindOption func(*binding)

// LegacyDefault makes the flag's own default a layer when the component
// runs without a config file, below everything else, reported in
// provenance as "legacy-default --name". This is how a component whose flags
// had other defaults than its config file keeps both without lying about
// where a value came from (kubelet's applyLegacyDefaults).
func LegacyDefault() BindOption { return func(b *binding) { b.legacy = true } }

// Bind binds flag name to key. value is the pointer the flag writes into
// (as given to pflag's XxxVar or to a pflag.Value such as
// cliflag.NewMapStringBool); its JSON is the key's value. When value is nil
// the flag's String() is converted by the type at key.
func (f *Flags) Bind(name, key string, value any, opts ...BindOption) {
	b := binding{name: name, key: key, value: value}
	for _, o := range opts {
		o(&b)
	}
	f.bindings = append(f.bindings, b)
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
		if err := merge.FlattenValue(vals, b.key, raw); err != nil {
			return nil, nil, fmt.Errorf("flag --%s: %w", b.name, err)
		}
		l := &merge.Layer{Source: merge.Source{Kind: KindFlag, Name: "--" + b.name}, Values: vals}
		if !fl.Changed {
			l.Source.Kind = KindLegacyDefault
			defaults = append(defaults, l)
			continue
		}
		set = append(set, l)
	}
	return set, defaults, nil
}

func flagJSON(fl *pflag.Flag, b binding, s *typed.Type) ([]byte, error) {
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
