package bench

import (
	"fmt"
	"time"

	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/viper"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/configmap"
)

// defaultsAny is DefaultPlain keyed by key, for viper's and koanf's
// default layer.
func defaultsAny() map[string]any {
	m := map[string]any{}
	for i, k := range BoolKeys {
		m[k] = DefaultPlain.Bools[i]
	}
	for i, k := range IntKeys {
		m[k] = DefaultPlain.Ints[i]
	}
	for i, k := range DurationKeys {
		m[k] = DefaultPlain.Durations[i]
	}
	for i, k := range StringKeys {
		m[k] = DefaultPlain.Strings[i]
	}
	return m
}

var defaultValues = defaultsAny()

// layersAny turns the cluster and namespace data into the maps viper and
// koanf load. Namespace keys off the allowlist are left out, and the
// overlay applies only when the gate is open, so that they do the same
// job as the other loaders.
func layersAny(cluster, ns map[string]string) (map[string]any, map[string]any) {
	c := make(map[string]any, len(cluster))
	for k, v := range cluster {
		c[k] = v
	}
	n := make(map[string]any, len(ns))
	if cluster[GateKey] == "true" {
		for _, k := range Overridable {
			if v, ok := ns[k]; ok {
				n[k] = v
			}
		}
	}
	return c, n
}

// ViperLoad loads defaults, the cluster data and the namespace overlay into
// a new viper instance, the way a viper user rebuilds after a change.
func ViperLoad(cluster, ns map[string]string) (*viper.Viper, error) {
	v := viper.New()
	for k, d := range defaultValues {
		v.SetDefault(k, d)
	}
	c, n := layersAny(cluster, ns)
	if err := v.MergeConfigMap(c); err != nil {
		return nil, err
	}
	if err := v.MergeConfigMap(n); err != nil {
		return nil, err
	}
	return v, nil
}

// ViperPlain reads every key from v.
func ViperPlain(v *viper.Viper) Plain {
	return readPlain(v.GetBool, v.GetInt64, v.GetDuration, v.GetString)
}

// readPlain reads every key through a library's typed getters.
func readPlain(getBool func(string) bool, getInt func(string) int64, getDuration func(string) time.Duration, getString func(string) string) Plain {
	var p Plain
	read(p.Bools[:], BoolKeys[:], getBool)
	read(p.Ints[:], IntKeys[:], getInt)
	read(p.Durations[:], DurationKeys[:], getDuration)
	read(p.Strings[:], StringKeys[:], getString)
	return p
}

func read[T any](dst []T, keys []string, get func(string) T) {
	for i, k := range keys {
		dst[i] = get(k)
	}
}

// KoanfLoad loads defaults, the cluster data and the namespace overlay into
// a new koanf instance, last load winning.
func KoanfLoad(cluster, ns map[string]string) (*koanf.Koanf, error) {
	k := koanf.New(".")
	c, n := layersAny(cluster, ns)
	for _, m := range []map[string]any{defaultValues, c, n} {
		if err := k.Load(confmap.Provider(m, "."), nil); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// KoanfPlain reads every key from k.
func KoanfPlain(k *koanf.Koanf) Plain {
	return readPlain(k.Bool, k.Int64, k.Duration, k.String)
}

// KnativeConfigMapName is the name the knative store keeps the workload
// under.
const KnativeConfigMapName = "config-bench"

// NewPlainFromConfigMap is a knative constructor: it parses a ConfigMap
// with knative's parsers, absent keys keeping their defaults, and
// validates. knative has no layers: one ConfigMap is the configuration.
func NewPlainFromConfigMap(cm *corev1.ConfigMap) (*Plain, error) {
	p := DefaultPlain
	parsers := make([]configmap.ParseFunc, 0, 30)
	for i, k := range BoolKeys {
		parsers = append(parsers, configmap.AsBool(k, &p.Bools[i]))
	}
	for i, k := range IntKeys {
		parsers = append(parsers, configmap.AsInt64(k, &p.Ints[i]))
	}
	for i, k := range DurationKeys {
		parsers = append(parsers, configmap.AsDuration(k, &p.Durations[i]))
	}
	for i, k := range StringKeys {
		parsers = append(parsers, configmap.AsString(k, &p.Strings[i]))
	}
	if err := configmap.Parse(cm.Data, parsers...); err != nil {
		return nil, err
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	return &p, nil
}

// NewKnativeStore returns a knative UntypedStore that builds Plain from the
// ConfigMap named KnativeConfigMapName.
func NewKnativeStore() *configmap.UntypedStore {
	return configmap.NewUntypedStore("bench", quietLogger{}, configmap.Constructors{KnativeConfigMapName: NewPlainFromConfigMap})
}

// quietLogger is a knative store logger that logs nothing and panics on
// Fatalf, so that a failed first load cannot pass unnoticed.
type quietLogger struct{}

func (quietLogger) Debugf(string, ...any)          {}
func (quietLogger) Infof(string, ...any)           {}
func (quietLogger) Errorf(string, ...any)          {}
func (quietLogger) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
