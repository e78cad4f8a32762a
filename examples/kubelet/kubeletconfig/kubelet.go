package kubeletconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	kubeletv1beta1 "k8s.io/kubernetes/pkg/kubelet/apis/config/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	utilcodec "k8s.io/kubernetes/pkg/kubelet/kubeletconfig/util/codec"

	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/internal/yamljson"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
	"github.com/stratacfg/strata/watch"
)

// Result is a loaded configuration.
type Result struct {
	// Config is the configuration, internal type.
	Config *kubeletconfig.KubeletConfiguration
	// Provenance holds the effective keys (v1beta1) and where each came
	// from.
	Provenance *merge.Result
	// Warnings are the decoding warnings of the files.
	Warnings []string
	// Skipped lists what the drop-in directory left out, and why.
	Skipped []string
}

// KubeletDropIns is kubelet's drop-in policy: every file whose name ends
// in ".conf", in every subdirectory, dot-files included, in the order
// filepath.WalkDir walks them, a link to a file followed wherever it
// leads (kubelet reads each with os.ReadFile).
var KubeletDropIns = layers.DropInPolicy{Extensions: []string{".conf"}, Recursive: true, Hidden: true, RequireTypeMeta: true, LinksOut: true}

// loadKubelet loads as kubelet v1.37.2's command does before it runs
// (cmd/kubelet/app.NewKubeletCommand):
//
//  1. Parse the command line into the initial configuration: v1beta1's
//     defaults with kubelet's legacy defaults, under the default feature
//     gates; then put --feature-gates in effect.
//  2. With --config: the file replaces that configuration. It is decoded
//     strictly, and leniently with a warning if that fails; defaulted
//     under the gates in effect and its own; relative paths resolved
//     against its directory; the eviction thresholds kubelet defaults
//     outside its scheme filled in.
//  3. With --config-dir: each drop-in, as JSON with its apiVersion and
//     kind checked, is merged as a JSON merge patch into the
//     configuration so far as v1beta1 JSON; the result is decoded as
//     encoding/json decodes (unknown keys dropped, names matched without
//     regard to case) and defaulted again.
//  4. With either, the command line is parsed again over the result, so
//     that flags win, and the feature gates it sets are put in effect.
//  5. Validate.
//
// Each step's changes become layers, so that provenance names the file,
// drop-in, flag or defaulting behind every key.
func loadKubelet(k *scheme.Kind, args []string) (*Result, error) {
	out := &Result{}
	var stack []*merge.Layer
	push := func(src merge.Source, before, after *kubeletconfig.KubeletConfiguration) error {
		l, err := diffLayer(k, src, before, after)
		if err == nil && len(l.Values) > 0 {
			stack = append(stack, l)
		}
		return err
	}

	// (1)
	kf := options.NewKubeletFlags()
	kc, err := options.NewKubeletConfiguration()
	if err != nil {
		return nil, err
	}
	defaults, err := defaultConfiguration(k)
	if err != nil {
		return nil, err
	}
	if err := push(merge.Source{Origin: layers.OriginDefault}, &kubeletconfig.KubeletConfiguration{}, defaults); err != nil {
		return nil, err
	}
	if err := push(merge.Source{Origin: layers.OriginLegacyDefault, Name: "kubelet's legacy defaults"}, defaults, kc); err != nil {
		return nil, err
	}
	initial := kc.DeepCopy()
	fs := newKubeletFlagSet(kf, kc)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("flags: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("flags: unknown command %q", fs.Arg(0))
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(kc.FeatureGates); err != nil {
		return nil, fmt.Errorf("flag --feature-gates: %w", err)
	}
	if err := options.ValidateKubeletFlags(kf); err != nil {
		return nil, fmt.Errorf("flags: %w", err)
	}
	flagKeys, _ := layers.FieldKeys(fs, kc, reflect.TypeFor[kubeletconfigv1beta1.KubeletConfiguration]())
	if kf.KubeletConfigFile == "" && kf.KubeletDropinConfigDirectory == "" {
		if err := pushFlags(k, &stack, fs, flagKeys, initial, kc); err != nil {
			return nil, err
		}
	}

	// (2)
	if path := kf.KubeletConfigFile; path != "" {
		stack = stack[:0] // the file replaces everything
		file, err := loadFile(k, path)
		if err != nil {
			return nil, err
		}
		out.Warnings = file.warnings
		stack = append(stack, file.layer)
		kc = file.config
		if err := push(merge.Source{Origin: layers.OriginDefault, Name: "for " + path}, file.raw, kc); err != nil {
			return nil, err
		}
	}

	// (3)
	if dir := kf.KubeletDropinConfigDirectory; dir != "" {
		paths, skipped, err := kubeletDropIns(dir)
		if err != nil {
			return nil, fmt.Errorf("--config-dir %s: %w", dir, err)
		}
		out.Skipped = skipped
		// The document is kubelet's: each drop-in decoded by its codec
		// and merged as a JSON merge patch (RFC 7386, an empty object
		// kept, "$" members as any other) over the JSON of the
		// configuration so far; the layers are for provenance.
		doc, err := JSON(k, kc)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			l, patch, err := dropInLayer(k, p)
			if err != nil {
				return nil, err
			}
			stack = append(stack, l)
			if doc, err = jsonpatch.MergePatch(doc, patch); err != nil {
				return nil, fmt.Errorf("--config-dir %s: merging %s: %w", dir, p, err)
			}
		}
		versioned := &kubeletconfigv1beta1.KubeletConfiguration{}
		if err := json.Unmarshal(doc, versioned); err != nil {
			return nil, fmt.Errorf("--config-dir %s: the drop-ins make no configuration: %w", dir, err)
		}
		if err := safely(func() { kubeletv1beta1.SetDefaults_KubeletConfiguration(versioned) }); err != nil {
			return nil, fmt.Errorf("--config-dir %s: defaulting the merged drop-ins: %w", dir, err)
		}
		if kc, err = internal(k, versioned); err != nil {
			return nil, err
		}
		// What defaulting did again, over the drop-ins, is defaulting's.
		merged, err := internal(k, mustDecode(doc))
		if err != nil {
			return nil, err
		}
		if err := push(merge.Source{Origin: layers.OriginDefault, Name: "after the drop-ins"}, merged, kc); err != nil {
			return nil, err
		}
	}

	// (4)
	if kf.KubeletConfigFile != "" || kf.KubeletDropinConfigDirectory != "" {
		before := kc.DeepCopy()
		original := kc.FeatureGates
		again := newReparseFlagSet(kc)
		if err := again.Parse(args); err != nil {
			return nil, fmt.Errorf("flags: %w", err)
		}
		for name, on := range original {
			if _, ok := kc.FeatureGates[name]; !ok {
				kc.FeatureGates[name] = on
			}
		}
		keys, _ := layers.FieldKeys(again, kc, reflect.TypeFor[kubeletconfigv1beta1.KubeletConfiguration]())
		if err := pushFlags(k, &stack, again, keys, before, kc); err != nil {
			return nil, err
		}
		if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(kc.FeatureGates); err != nil {
			return nil, fmt.Errorf("featureGates: %w", err)
		}
	}

	// The provenance: the layers, and whatever the steps computed that
	// no layer holds, credited to defaulting.
	final, err := JSON(k, kc)
	if err != nil {
		return nil, err
	}
	out.Config = kc
	out.Provenance, err = provenance(stack, final)
	if err != nil {
		return nil, err
	}

	// (5)
	if errs := validation.Attribute(k.Validate(kc), out.Provenance, kc); len(errs) > 0 {
		return nil, fmt.Errorf("invalid configuration:\n%w", errs)
	}
	return out, nil
}

// safely runs fn, turning a panic into an error: kubelet's defaulter
// panics on a feature gate it cannot set.
func safely(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	fn()
	return nil
}

// defaultConfiguration is v1beta1's defaults, converted.
func defaultConfiguration(k *scheme.Kind) (*kubeletconfig.KubeletConfiguration, error) {
	v := &kubeletconfigv1beta1.KubeletConfiguration{}
	k.Scheme().Default(v)
	return internal(k, v)
}

// loaded is the main file, loaded as kubelet loads it.
type loaded struct {
	layer    *merge.Layer // the keys the file sets, paths resolved
	raw      *kubeletconfig.KubeletConfiguration
	config   *kubeletconfig.KubeletConfiguration
	warnings []string
}

// loadFile reads --config as kubelet's loadConfigFile does.
func loadFile(k *scheme.Kind, path string) (*loaded, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	data, err := readFile(k, abs)
	if err != nil {
		return nil, err
	}
	if data, err = kubeletsDocument(abs, data); err != nil {
		return nil, err
	}
	doc, err := k.Decode(data, scheme.DecodeOptions{Source: abs, Mode: scheme.Warn})
	if err != nil {
		return nil, err
	}
	out := &loaded{config: doc.Object.(*kubeletconfig.KubeletConfiguration)}
	for _, w := range doc.Warnings {
		out.warnings = append(out.warnings, w.String()+" (kubelet decodes the file leniently)")
	}
	resolve(out.config, filepath.Dir(abs))
	fillEviction(out.config)
	// The layer: what the file sets, paths resolved as above.
	f := &layers.File{Path: abs, Origin: layers.OriginFile, Kind: k, Mode: scheme.Warn, Files: snapshot{abs: data}}
	if out.layer, _, err = f.Decode(); err != nil {
		return nil, err
	}
	raw, err := internal(k, mustDecode(mustJSON(out.layer.Values)))
	if err != nil {
		return nil, err
	}
	resolve(raw, filepath.Dir(abs))
	for key, v := range out.layer.Values {
		if k.MergeFields().Has(key, validation.Path) {
			var p string
			if json.Unmarshal([]byte(v), &p) == nil && p != "" && !filepath.IsAbs(p) {
				b, _ := json.Marshal(filepath.Join(filepath.Dir(abs), p))
				out.layer.Values[key] = string(b)
			}
		}
	}
	out.raw = raw
	return out, nil
}

// kubeletsDocument returns data with the directives before its first
// document left out, and refuses what kubelet's codec refuses of the
// document it reads: yaml.YAMLToJSON of the file, the first document,
// directives included, which may not be empty nor a v1 List, of which
// the codec knows nothing (pkg/kubelet/kubeletconfig/util/codec).
func kubeletsDocument(path string, data []byte) ([]byte, error) {
	j, err := yamljson.ToJSON(data, yamljson.Limit(len(data)))
	if err != nil {
		return data, nil // the decoder says what is wrong
	}
	var meta struct{ APIVersion, Kind string }
	switch t := bytes.TrimSpace(j); {
	case string(t) == "null":
		return nil, fmt.Errorf("%s: the first document is empty, and kubelet reads only the first: Object 'Kind' is missing", path)
	case json.Unmarshal(t, &meta) == nil && meta.APIVersion == "v1" && meta.Kind == "List":
		return nil, fmt.Errorf("%s: a v1 List, which kubelet does not read: no kind \"List\" is registered for version \"v1\"", path)
	}
	// The directives, and the comments and blank lines among them, go:
	// strata's reader splits documents without knowing directives.
	rest, directive := data, false
	for {
		line, after, found := bytes.Cut(rest, []byte("\n"))
		switch t := bytes.TrimSpace(line); {
		case bytes.HasPrefix(line, []byte("%")):
			directive = true
		case len(t) > 0 && t[0] != '#':
			if directive {
				return rest, nil
			}
			return data, nil
		}
		if rest = after; !found {
			return data, nil
		}
	}
}

// resolve makes the relative paths of kc absolute against dir, as kubelet
// does for its main file only.
func resolve(kc *kubeletconfig.KubeletConfiguration, dir string) {
	for _, p := range kubeletconfig.KubeletConfigurationPathRefs(kc) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// fillEviction gives kc kubelet's default hard eviction thresholds when
// it sets none, and, with mergeDefaultEvictionSettings, the ones it
// leaves out.
func fillEviction(kc *kubeletconfig.KubeletConfiguration) {
	switch {
	case kc.EvictionHard == nil:
		kc.EvictionHard = maps.Clone(eviction.DefaultEvictionHard)
	case kc.MergeDefaultEvictionSettings:
		for key, v := range eviction.DefaultEvictionHard {
			if _, ok := kc.EvictionHard[key]; !ok {
				kc.EvictionHard[key] = v
			}
		}
	}
}

// dropInLayer reads a drop-in as kubelet does, by kubelet's own codec
// (JSON where it starts with "{", strict YAML otherwise), kind required,
// and kubelet.config.k8s.io/v1beta1 KubeletConfiguration exactly, and
// returns it as kubelet's JSON, the patch kubelet merges before decoding
// anything, and as a layer of provenance, its members named "$" (which
// kubelet drops as unknown) left out.
func dropInLayer(k *scheme.Kind, path string) (*merge.Layer, []byte, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, err
	}
	data, err := readFile(k, abs)
	if err != nil {
		return nil, nil, err
	}
	if err := yamljson.Check(data, yamljson.Limit(len(data))); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err) // before kubelet's codec writes every alias out
	}
	codecs, err := kubeletCodecs()
	if err != nil {
		return nil, nil, err
	}
	j, gvk, err := utilcodec.DecodeKubeletConfigurationIntoJSON(codecs, data)
	switch {
	case runtime.IsMissingKind(err) || runtime.IsMissingVersion(err) || err == nil && (gvk == nil || gvk.Kind == ""):
		return nil, nil, fmt.Errorf("%s: no kind: a kubelet drop-in names apiVersion %s and kind %s", path, kubeletconfigv1beta1.SchemeGroupVersion, Kind)
	case err != nil: // the codec's error quotes the document: cut
		return nil, nil, fmt.Errorf("%s: %s", path, text.Cut(err.Error(), 1024))
	case *gvk != kubeletconfigv1beta1.SchemeGroupVersion.WithKind(Kind):
		return nil, nil, fmt.Errorf("%s: %s is not %s: a kubelet drop-in is kubelet.config.k8s.io/v1beta1 KubeletConfiguration", path, gvk, Kind)
	}
	var doc map[string]any
	if err := json.Unmarshal(j, &doc); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	plain, err := json.Marshal(withoutDollars(doc))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	values, err := merge.Flatten(plain)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	delete(values, "/apiVersion")
	delete(values, "/kind")
	return &merge.Layer{Source: merge.Source{Origin: layers.OriginDropIn, Name: path}, Values: values}, j, nil
}

// kubeletCodecs are the codecs kubelet reads its files with.
var kubeletCodecs = sync.OnceValues(func() (*serializer.CodecFactory, error) {
	_, codecs, err := kubeletscheme.NewSchemeAndCodecs(serializer.EnableStrict)
	return codecs, err
})

// withoutDollars returns v with every object member whose name starts
// with "$" left out: strata's merge reads those as its own (a reference,
// a removal from a set), kubelet as unknown fields it drops.
func withoutDollars(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for name, m := range v {
			if !strings.HasPrefix(name, "$") {
				out[name] = withoutDollars(m)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, m := range v {
			out[i] = withoutDollars(m)
		}
		return out
	}
	return v
}

// kubeletDropIns lists the drop-ins of dir as kubelet's
// mergeKubeletConfigurations finds them: filepath.WalkDir over dir, every
// entry that is not a directory and whose name KubeletDropIns takes, a
// symbolic link never followed as a directory (so a directory argument
// that is itself a link holds none), and the entries left out, each with
// why. Each drop-in is then read by strata's bounded reader.
func kubeletDropIns(dir string) (paths, skipped []string, err error) {
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return nil
		}
		if why := KubeletDropIns.Why(d.Name()); why != "" {
			skipped = append(skipped, path+": "+why)
			return nil
		}
		paths = append(paths, path)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading drop-in directory: %w", err)
	}
	return paths, skipped, nil
}

// readFile reads a file bounded and without blocking, as strata reads
// every file, and refuses a directory and an empty file, as kubelet does.
func readFile(k *scheme.Kind, path string) ([]byte, error) {
	// kubelet reads a gzip'd file as it is, and fails on it; its
	// os.ReadFile follows a link wherever it leads.
	g, err := watch.Read(path, watch.ReadOptions{MaxBytes: k.MaxBytes(), Attempts: 1, KeepGzip: true, LinksOut: true, FileTargets: []string{path}})
	if err != nil {
		return nil, err
	}
	data := g.Files[0].Data
	if len(data) == 0 {
		return nil, fmt.Errorf("%s: the file is empty", path)
	}
	return data, nil
}

// pushFlags adds the layers of the flags fs set: each key they changed
// goes to the flag bound to it or to an ancestor of it; what changed under
// no set flag (kubelet's parse resets --log-*-split-stream whether or not
// they are given) to kubelet's command line as a whole.
func pushFlags(k *scheme.Kind, stack *[]*merge.Layer, fs *pflag.FlagSet, keys map[string]string, before, after *kubeletconfig.KubeletConfiguration) error {
	changed, err := diffLayer(k, merge.Source{Origin: layers.OriginFlag, Name: "kubelet's command line"}, before, after)
	if err != nil || len(changed.Values) == 0 {
		return err
	}
	var set []string // the keys of the flags set, longest first
	byKey := map[string]string{}
	fs.Visit(func(f *pflag.Flag) {
		if key, ok := keys[f.Name]; ok {
			set = append(set, key)
			byKey[key] = f.Name
		}
	})
	slices.SortFunc(set, func(a, b string) int { return len(b) - len(a) })
	perFlag := map[string]*merge.Layer{}
	var order []string
	for key, v := range changed.Values {
		for _, bound := range set {
			if key == bound || strings.HasPrefix(key, bound+"/") {
				name := byKey[bound]
				l := perFlag[name]
				if l == nil {
					l = &merge.Layer{Source: merge.Source{Origin: layers.OriginFlag, Name: "--" + name}, Values: map[string]string{}}
					perFlag[name] = l
					order = append(order, name)
				}
				l.Values[key] = v
				delete(changed.Values, key)
				break
			}
		}
	}
	slices.Sort(order)
	if len(changed.Values) > 0 {
		*stack = append(*stack, changed)
	}
	for _, name := range order {
		*stack = append(*stack, perFlag[name])
	}
	return nil
}

// diffLayer is the layer of the keys whose values differ between before
// and after, as v1beta1 JSON: a key after drops is a tombstone.
func diffLayer(k *scheme.Kind, src merge.Source, before, after *kubeletconfig.KubeletConfiguration) (*merge.Layer, error) {
	b, err := flatJSON(k, before)
	if err != nil {
		return nil, err
	}
	a, err := flatJSON(k, after)
	if err != nil {
		return nil, err
	}
	l := &merge.Layer{Source: src, Values: map[string]string{}}
	for key, v := range a {
		if b[key] != v && key != "/apiVersion" && key != "/kind" {
			l.Values[key] = v
		}
	}
	for key := range b {
		if _, ok := a[key]; !ok {
			l.Values[key] = merge.Tombstone
		}
	}
	return l, nil
}

func flatJSON(k *scheme.Kind, kc *kubeletconfig.KubeletConfiguration) (map[string]string, error) {
	j, err := JSON(k, kc)
	if err != nil {
		return nil, err
	}
	return merge.Flatten(j)
}

// provenance merges the layers and credits to defaulting every key of
// final that they do not give.
func provenance(stack []*merge.Layer, final []byte) (*merge.Result, error) {
	want, err := merge.Flatten(final)
	if err != nil {
		return nil, err
	}
	delete(want, "/apiVersion")
	delete(want, "/kind")
	got := merge.Merge(stack...).Values()
	fill := &merge.Layer{Source: merge.Source{Origin: layers.OriginDefault}, Values: map[string]string{}}
	for key, v := range want {
		if got[key] != v {
			fill.Values[key] = v
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			fill.Values[key] = merge.Tombstone
		}
	}
	return merge.Merge(append(slices.Clip(stack), fill)...), nil
}

func mustJSON(values map[string]string) []byte {
	doc, err := merge.Unflatten(values)
	if err != nil {
		panic(err)
	}
	return doc
}

func mustDecode(doc []byte) *kubeletconfigv1beta1.KubeletConfiguration {
	v := &kubeletconfigv1beta1.KubeletConfiguration{}
	_ = json.Unmarshal(doc, v)
	return v
}

// snapshot is a layers.Files over one file already read.
type snapshot map[string][]byte

func (s snapshot) ReadFile(path string) ([]byte, error) { return s[path], nil }
