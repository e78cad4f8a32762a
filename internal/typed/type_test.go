package typed

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

type duration struct{ time.Duration }

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	d.Duration = v
	return err
}

func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

type level uint8

func (l *level) Set(s string) error {
	switch s {
	case "low":
		*l = 1
	case "high":
		*l = 2
	default:
		return fmt.Errorf("want low or high")
	}
	return nil
}

type inner struct {
	Kubeconfig string  `json:"kubeconfig"`
	QPS        float32 `json:"qps"`
}

type typeMeta struct {
	Kind string `json:"kind,omitempty"`
}

type doc struct {
	typeMeta `json:",inline"`
	Port     *int32            `json:"port,omitempty"`
	Enabled  *bool             `json:"enabled,omitempty"`
	Gates    map[string]bool   `json:"featureGates,omitempty"`
	Sync     duration          `json:"syncFrequency"`
	Origins  []string          `json:"allowedOrigins"`
	Conn     inner             `json:"clientConnection"`
	Labels   map[string]string `json:"labels"`
	Level    level             `json:"level"`
	Extra    any               `json:"extra"`
	Skipped  string            `json:"-"`
}

func TestConvert(t *testing.T) {
	t.Parallel()
	s := For(reflect.TypeFor[doc]())
	tests := []struct {
		key, in, want, err string
	}{
		{key: "/port", in: "8080", want: "8080"},
		{key: "/port", in: " 0 ", want: "0"},
		{key: "/port", in: "99999999999", err: "fits in 32 bits"},
		{key: "/port", in: "ten", err: `"/port": "ten" is not an integer`},
		{key: "/enabled", in: "false", want: "false"},
		{key: "/enabled", in: "yes", err: "is not a boolean"},
		{key: "/featureGates/A", in: "true", want: "true"},
		{key: "/featureGates", in: `{A: true, B: false}`, want: `{"A":true,"B":false}`},
		{key: "/featureGates", in: `{A: true, A: false}`, err: "is not valid YAML"},
		{key: "/featureGates", in: `{A: 1}`, err: "is not a valid map of bool"},
		{key: "/featureGates", in: `{"A": true}`, want: `{"A":true}`},
		{key: "/syncFrequency", in: "1m30s", want: `"1m30s"`},
		{key: "/syncFrequency", in: "soon", err: "is not a valid"},
		{key: "/allowedOrigins", in: `["a","b"]`, want: `["a","b"]`},
		{key: "/clientConnection/qps", in: "2.5", want: "2.5"},
		{key: "/clientConnection/kubeconfig", in: "a<b", want: `"a<b"`},
		{key: "/clientConnection", in: `{"qps": 1, "nope": 2}`, err: "unknown field"},
		{key: "/labels/app.kubernetes.io~1name", in: "x", want: `"x"`},
		{key: "/level", in: "high", want: "2"},
		{key: "/level", in: "mid", err: "want low or high"},
		{key: "/kind", in: "X", want: `"X"`},
		{key: "/extra/anything/deep", in: `{"a":1}`, want: `{"a":1}`},
		{key: "/nope", in: "1", err: "no such field"},
		{key: "/Skipped", in: "1", err: "no such field"},
		{key: "/port/x", in: "1", err: "no such field"},
		{key: "/syncFrequency/Duration", in: "1", err: "no such field"},
	}
	for _, tc := range tests {
		got, err := s.Convert(tc.key, tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Convert(%s, %q) error = %v, want one containing %q", tc.key, tc.in, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("Convert(%s, %q) failed: %v", tc.key, tc.in, err)
		case tc.err == "" && got != tc.want:
			t.Errorf("Convert(%s, %q) = %s, want %s", tc.key, tc.in, got, tc.want)
		}
	}
}
