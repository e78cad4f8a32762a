package validation

import (
	"reflect"
	"strings"
	"testing"

	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
	logsapi "k8s.io/component-base/logs/api/v1"
)

func TestFieldsUnder(t *testing.T) {
	type backend struct {
		CAFile string `json:"caFile" strata:"path"`
		URL    string `json:"url" strata:"not-path"`
	}
	type doc struct {
		Server struct {
			Cert  string `json:"cert" strata:"path"`
			Quota int    `json:"quota" strata:"cluster-only"`
		} `json:"server" strata:"overridable"`
		Backends map[string]backend `json:"backends"`
		Volumes  map[string]string  `json:"volumes"`
		Plain    struct {
			N int `json:"n"`
		} `json:"plain"`
	}
	f, err := FieldsFor(reflect.TypeFor[doc](), map[string]Marker{"/volumes/*": Path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key  string
		m    Marker
		want string
	}{
		{"/server", Path, "/server/cert"},
		{"/server", ClusterOnly, "/server/quota"},
		{"/server", Path | ClusterOnly, "/server/cert"},
		{"/server/cert", Path, ""}, // the key itself is not under it
		{"/backends", Path, "/backends/*/caFile"},
		{"/backends/x", Path, "/backends/*/caFile"},
		{"/volumes", Path, "/volumes/*"},
		{"/plain", Path | ClusterOnly | Alpha, ""},
		{"/server", Alpha, ""},
	} {
		got, ok := f.Under(tc.key, tc.m)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("Under(%s, %v) = %q, %v; want %q", tc.key, tc.m, got, ok, tc.want)
		}
	}
}

// TestReadyMadeMarkers checks that the component-base structs a
// configuration embeds come with their markers, wherever they are, and
// that apiVersion and kind are not paths: CheckStrings passes with none
// declared.
func TestReadyMadeMarkers(t *testing.T) {
	type doc struct {
		APIVersion string                                                               `json:"apiVersion"`
		Kind       string                                                               `json:"kind"`
		Client     componentbaseconfigv1alpha1.ClientConnectionConfiguration            `json:"clientConnection"`
		Leader     componentbaseconfigv1alpha1.LeaderElectionConfiguration              `json:"leaderElection"`
		Logging    logsapi.LoggingConfiguration                                         `json:"logging"`
		Others     map[string]componentbaseconfigv1alpha1.ClientConnectionConfiguration `json:"others"`
	}
	f, err := FieldsFor(reflect.TypeFor[doc](), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Has("/clientConnection/kubeconfig", Path) || !f.Has("/others/x/kubeconfig", Path) || !f.Has("/apiVersion", NotPath) {
		t.Errorf("paths %v, not-paths %v", f.Keys(Path), f.Keys(NotPath))
	}
	if u := f.undeclaredStrings(); len(u) != 0 {
		t.Errorf("strings declared neither path nor not-path: %v", u)
	}
}

// TestGateMarkers: `strata:"feature-gate=NAME"` names the feature gate a
// field needs, beside its other markers; a tag that names none is refused.
func TestGateMarkers(t *testing.T) {
	type doc struct {
		Items int    `json:"items" strata:"feature-gate=AlphaThing"`
		Dir   string `json:"dir" strata:"path,feature-gate=BetaThing"`
		Port  int    `json:"port"`
	}
	f, err := FieldsFor(reflect.TypeFor[doc](), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Gates(); len(got) != 2 || got["/items"] != "AlphaThing" || got["/dir"] != "BetaThing" {
		t.Errorf("Gates() = %v", got)
	}
	if !f.Has("/dir", Path) {
		t.Errorf("/dir lost its path marker beside its gate")
	}
	type bad struct {
		Items int `json:"items" strata:"feature-gate="`
	}
	if _, err := FieldsFor(reflect.TypeFor[bad](), nil, nil); err == nil || !strings.Contains(err.Error(), "field /items: feature-gate= names no feature gate") {
		t.Errorf("got %v, want the empty gate refused", err)
	}
}

// TestOSMarkers: `strata:"os=..."` names the operating system of a field
// and of everything under it; a field inside another OS's field, an OS
// that GOOS would not name, and empty-is-unset on a scalar are refused.
func TestOSMarkers(t *testing.T) {
	type doc struct {
		Driver string `json:"driver" strata:"os=linux,not-path"`
		Win    struct {
			Class string `json:"class" strata:"not-path"`
		} `json:"win" strata:"os=windows"`
		Port int `json:"port"`
	}
	f, err := FieldsFor(reflect.TypeFor[doc](), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string][2]string{"/driver": {"linux", "/driver"}, "/win/class": {"windows", "/win"}, "/port": {"", ""}} {
		goos, at, _ := f.OS(key)
		if goos != want[0] || at != want[1] {
			t.Errorf("OS(%s) = %q at %q, want %q at %q", key, goos, at, want[0], want[1])
		}
	}
	type bad struct {
		Win struct {
			Driver string `json:"driver" strata:"os=linux"`
		} `json:"win" strata:"os=windows"`
		Mac   string `json:"mac" strata:"os=Darwin"`
		Count int    `json:"count" strata:"empty-is-unset"`
	}
	_, err = FieldsFor(reflect.TypeFor[bad](), nil, nil)
	for _, want := range []string{
		"field /win/driver is for linux, inside /win, which is for windows",
		`field /mac: os="Darwin" is no operating system as GOOS names them`,
		"field /count is marked empty-is-unset but is no map or slice",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error containing %q", err, want)
		}
	}
	// Declared for a type the author does not own, as kubelet's.
	f, err = FieldsFor(reflect.TypeFor[doc](), nil, map[string]string{"/port": "linux", "/driver": "linux"})
	if err != nil {
		t.Fatal(err)
	}
	if goos, at, _ := f.OS("/port"); goos != "linux" || at != "/port" {
		t.Errorf("declared OS(/port) = %q at %q", goos, at)
	}
	_, err = FieldsFor(reflect.TypeFor[doc](), nil, map[string]string{"/nope": "linux", "/port": "Linux", "/driver": "windows"})
	for _, want := range []string{
		"declared key /nope is no field of",
		`field /port: "Linux" is no operating system as GOOS names them`,
		"field /driver is tagged for linux and declared for windows",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error containing %q", err, want)
		}
	}
}

// TestMarkersInLists: secret and os= are refused on a field inside a list
// element, where they would not apply, and the other markers there are
// the list's; a secret merged as a set is refused; os= on a field of a
// map's values applies to every value.
func TestMarkersInLists(t *testing.T) {
	type user struct {
		Name     string `json:"name" strata:"not-path"`
		Password string `json:"password" strata:"secret"`
	}
	type doc struct {
		Users []user `json:"users"`
	}
	_, err := FieldsFor(reflect.TypeFor[doc](), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "field /users/*/password: secret applies to no field inside a list element") {
		t.Errorf("got %v", err)
	}
	// A marker inside a list element is the list's too: setting the list
	// sets the field.
	type mount struct {
		HostPath string `json:"hostPath" strata:"path"`
	}
	type mounts struct {
		Mounts []mount `json:"mounts"`
	}
	f, err := FieldsFor(reflect.TypeFor[mounts](), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if under, ok := f.Under("/mounts", Path); !ok || under != "/mounts/*/hostPath" {
		t.Errorf("Under(/mounts, Path) = %q, %t", under, ok)
	}
	// A set's elements, and a keyed list's keys, are keys, and keys are
	// shown: a secret is neither.
	type tokens struct {
		Tokens []string `json:"tokens" strata:"secret,list-type=set"`
	}
	type holder struct {
		Auth tokens `json:"auth" strata:"secret"`
	}
	type cred struct {
		Token string `json:"token"`
	}
	type creds struct {
		Creds []cred `json:"creds" strata:"secret,list-map-key=token"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[tokens](), reflect.TypeFor[holder](), reflect.TypeFor[creds]()} {
		if _, err := FieldsFor(typ, nil, nil); err == nil || !strings.Contains(err.Error(), "is a list merged as a set or by a key, and secret") {
			t.Errorf("%s: got %v", typ, err)
		}
	}
	type pool struct {
		Driver string `json:"driver" strata:"os=linux,not-path"`
	}
	type pools struct {
		Pools map[string]pool `json:"pools"`
	}
	f, err = FieldsFor(reflect.TypeFor[pools](), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if goos, _, ok := f.OS("/pools/a/driver"); !ok || goos != "linux" {
		t.Errorf("OS(/pools/a/driver) = %q, %t", goos, ok)
	}
}
