package validation

import (
	"reflect"
	"testing"
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
	f, err := FieldsFor(reflect.TypeFor[doc](), map[string]Marker{"/volumes/*": Path})
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
