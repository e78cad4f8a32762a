package kubeletconfig_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	_ "unsafe" // go:linkname

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/kubernetes/cmd/kubelet/app" // kubelet's loading code, reached below
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletapi "k8s.io/kubernetes/pkg/kubelet/apis/config"

	"github.com/stratacfg/strata/examples/kubelet/kubeletconfig"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/scheme"
)

// kubelet's own loading functions, in cmd/kubelet/app: the file, the
// drop-ins, the flags parsed again over them. They are not exported;
// the linkname directives below reach them as compiled into kubelet.

//go:linkname kubeletLoadConfigFile k8s.io/kubernetes/cmd/kubelet/app.loadConfigFile
func kubeletLoadConfigFile(ctx context.Context, name string) (*kubeletapi.KubeletConfiguration, error)

//go:linkname kubeletMergeDropIns k8s.io/kubernetes/cmd/kubelet/app.mergeKubeletConfigurations
func kubeletMergeDropIns(kc *kubeletapi.KubeletConfiguration, dir string) ([]string, error)

//go:linkname kubeletFlagPrecedence k8s.io/kubernetes/cmd/kubelet/app.kubeletConfigFlagPrecedence
func kubeletFlagPrecedence(kc *kubeletapi.KubeletConfiguration, args []string) error

// kubelet loads args as kubelet v1.37.2's command does before it runs
// (the body of NewKubeletCommand's RunE up to validation, calling
// kubelet's functions for every step), and returns the configuration as
// v1beta1 JSON.
func kubelet(k *scheme.Kind, args []string) (_ []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			// kubelet's defaulter panics on a gate it cannot set, and
			// kubelet crashes: it refuses the configuration.
			err = fmt.Errorf("kubelet panicked: %v", r)
		}
	}()
	kf := options.NewKubeletFlags()
	kc, err := options.NewKubeletConfiguration()
	if err != nil {
		return nil, err
	}
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	fs.SetOutput(discard{})
	kf.AddFlags(fs)
	options.AddKubeletConfigFlags(fs, kc)
	options.AddGlobalFlags(fs)
	fs.BoolP("help", "h", false, "")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unknown command %s", fs.Arg(0))
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(kc.FeatureGates); err != nil {
		return nil, err
	}
	if err := options.ValidateKubeletFlags(kf); err != nil {
		return nil, err
	}
	if kf.KubeletConfigFile != "" {
		if kc, err = kubeletLoadConfigFile(context.Background(), kf.KubeletConfigFile); err != nil {
			return nil, err
		}
	}
	if kf.KubeletDropinConfigDirectory != "" {
		if _, err := kubeletMergeDropIns(kc, kf.KubeletDropinConfigDirectory); err != nil {
			return nil, err
		}
	}
	if kf.KubeletConfigFile != "" || kf.KubeletDropinConfigDirectory != "" {
		if err := kubeletFlagPrecedence(kc, args); err != nil {
			return nil, err
		}
		if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(kc.FeatureGates); err != nil {
			return nil, err
		}
	}
	if errs := k.Validate(kc); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return kubeletconfig.JSON(k, kc)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// gatesMu serializes the cases: kubelet's loading puts feature gates in
// effect process-wide.
var gatesMu sync.Mutex

// pristine is the process's feature gates as the program started.
var pristine = utilfeature.DefaultMutableFeatureGate.DeepCopy()

// resetGates gives the process the feature gates it started with: a gate
// set once stays set (an unknown one too), so each run starts from a
// copy.
func resetGates(testing.TB) {
	utilfeature.DefaultMutableFeatureGate = pristine.DeepCopy()
	utilfeature.DefaultFeatureGate = utilfeature.DefaultMutableFeatureGate
}

var (
	kindOnce sync.Once
	kind     *scheme.Kind
)

func testKind(t testing.TB) *scheme.Kind {
	t.Helper()
	kindOnce.Do(func() {
		var err error
		if kind, err = kubeletconfig.NewKind(); err != nil {
			t.Fatal(err)
		}
	})
	return kind
}

// both loads args with kubelet's code and with the kubelet profile, each
// from the feature gates' defaults.
func both(t testing.TB, args []string) (up []byte, upErr error, st []byte, stErr error) {
	t.Helper()
	k := testKind(t)
	gatesMu.Lock()
	defer gatesMu.Unlock()
	resetGates(t)
	up, upErr = kubelet(k, args)
	resetGates(t)
	r, stErr := kubeletconfig.Load(k, kubeletconfig.ProfileKubelet, args)
	if stErr == nil {
		st, stErr = kubeletconfig.JSON(k, r.Config)
	}
	resetGates(t)
	return up, upErr, st, stErr
}

// agree fails t unless both took the same decision and, when they
// accepted, made the same configuration, compared key by key.
func agree(t testing.TB, args []string, up []byte, upErr error, st []byte, stErr error) {
	t.Helper()
	if upErr == nil && stErr != nil && documented(stErr) {
		return
	}
	if (upErr == nil) != (stErr == nil) {
		t.Errorf("%v\nkubelet: %v\nprofile: %v", args, upErr, stErr)
		return
	}
	if upErr != nil {
		return
	}
	if diff := jsonDiff(up, st); diff != "" {
		t.Errorf("%v: the configurations differ (kubelet, then the profile):\n%s", args, diff)
	}
}

// documented reports whether err is one of the refusals docs/KUBELET.md
// lists where both profiles are stricter than kubelet: a main file of
// several documents, not UTF-8, or over 4 MiB.
func documented(err error) bool {
	for _, s := range []string{"documents; exactly one KubeletConfiguration is expected", "not valid UTF-8", "over the limit of"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// jsonDiff lists the keys whose values differ between two JSON objects.
func jsonDiff(a, b []byte) string {
	var x, y map[string]any
	if err := json.Unmarshal(a, &x); err != nil {
		return err.Error()
	}
	if err := json.Unmarshal(b, &y); err != nil {
		return err.Error()
	}
	var out []string
	var walk func(path string, x, y any)
	walk = func(path string, x, y any) {
		xm, xok := x.(map[string]any)
		ym, yok := y.(map[string]any)
		if xok && yok {
			keys := map[string]bool{}
			for k := range xm {
				keys[k] = true
			}
			for k := range ym {
				keys[k] = true
			}
			for k := range keys {
				walk(path+"/"+k, xm[k], ym[k])
			}
			return
		}
		if !reflect.DeepEqual(x, y) {
			xj, _ := json.Marshal(x)
			yj, _ := json.Marshal(y)
			out = append(out, fmt.Sprintf("  %s: %s | %s", path, xj, yj))
		}
	}
	walk("", x, y)
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// A case is a directory of files (the main file kubelet.yaml, drop-ins
// under conf.d/) and a command line; "$DIR" in an argument is the
// directory.
type dirCase struct {
	name  string
	files map[string]string
	args  []string
	// want, when set, are v1beta1 keys and the values kubelet's own tests
	// expect, checked on kubelet's result so that a case is known to
	// test what it says.
	want map[string]any
	// fails says kubelet refuses the case.
	fails bool
	// links are symbolic links to make, name → target, beside files.
	links map[string]string
}

func write(t testing.TB, files map[string]string) string {
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, files)
	return dir
}

func expand(args []string, dir string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "$DIR", dir)
	}
	return out
}

func TestDifferential(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := write(t, tc.files)
			for name, target := range tc.links {
				if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
			args := expand(tc.args, dir)
			up, upErr, st, stErr := both(t, args)
			agree(t, args, up, upErr, st, stErr)
			if (upErr != nil) != tc.fails {
				t.Errorf("kubelet decided %v; the case expects failure=%t: the case is wrong", upErr, tc.fails)
			}
			if upErr == nil && tc.want != nil {
				var got map[string]any
				_ = json.Unmarshal(up, &got)
				for key, want := range tc.want {
					if g := lookup(got, key); fmt.Sprint(g) != fmt.Sprint(want) {
						t.Errorf("kubelet's %s = %v, kubelet's tests expect %v: the case is wrong", key, g, want)
					}
				}
			}
		})
	}
}

func lookup(m map[string]any, key string) any {
	var v any = m
	for _, seg := range strings.Split(strings.TrimPrefix(key, "/"), "/") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[seg]
	}
	return v
}

// fuzzFlags are the flags the fuzz target may give, with a value each:
// configuration flags of every kind of value. (A global boolean flag
// would make kubelet's second parse, which exits on error, take the next
// argument as its value; kubelet exits without a word, and so would the
// fuzzer.)
var fuzzFlags = []string{
	"--port=", "--read-only-port=", "--max-pods=", "--kube-reserved=", "--system-reserved=", "--eviction-hard=",
	"--feature-gates=", "--cluster-dns=", "--sync-frequency=", "--vmodule=", "-v=", "--pod-manifest-path=",
	"--authorization-mode=", "--anonymous-auth=", "--register-with-taints=", "--manifest-url-header=",
}

// FuzzDropInDirectories loads generated directories (a main file and
// three drop-ins, one in a subdirectory) and command lines, seeded with
// every case above: kubelet's code and the kubelet profile take the same
// decision and make the same configuration.
func FuzzDropInDirectories(f *testing.F) {
	for _, tc := range cases {
		f.Add(tc.files["kubelet.yaml"], tc.files["conf.d/10-kubelet.conf"]+tc.files["conf.d/10.conf"], tc.files["conf.d/20-kubelet.conf"]+tc.files["conf.d/20.conf"], "", uint16(len(tc.name)), "10")
	}
	f.Fuzz(func(t *testing.T, main, d1, d2, sub string, pick uint16, value string) {
		if len(main)+len(d1)+len(d2)+len(sub)+len(value) > 64<<10 || strings.Contains(value, " ") {
			return
		}
		files := map[string]string{"conf.d/10.conf": d1, "conf.d/20.conf": d2, "conf.d/sub/15.conf": sub}
		args := with(dir)
		if main != "" {
			files["kubelet.yaml"] = main
			args = with(cfgDir)
		}
		if pick%3 != 0 {
			args = append(args, fuzzFlags[int(pick)%len(fuzzFlags)]+value)
		}
		d := write(t, files)
		args = expand(args, d)
		up, upErr, st, stErr := both(t, args)
		agree(t, args, up, upErr, st, stErr)
	})
}
