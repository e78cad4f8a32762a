package zpages

import (
	"fmt"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spf13/pflag"
)

// KubeFlagz is Kubernetes' Flagz object (config.k8s.io/v1beta1).
type KubeFlagz struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Flags             map[string]string `json:"flags,omitempty"`
}

// Flagz is strata's /flagz object: each flag's value, whether the command
// line set it, and the configuration key it sets.
type Flagz struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Flags             map[string]Flag `json:"flags"`
}

// Flag is one flag as set.
type Flag struct {
	Value string `json:"value"`
	// Set says that the command line set it; otherwise Value is its
	// default.
	Set bool `json:"set"`
	// Key is the configuration key the flag sets, if it sets one.
	Key string `json:"key,omitempty"`
}

func (p *Pages) flagz(*http.Request) (*reply, error) {
	kube := &KubeFlagz{TypeMeta: metav1.TypeMeta{Kind: "Flagz", APIVersion: kubeGroup + "/" + kubeVersion}, ObjectMeta: p.objectMeta(), Flags: map[string]string{}}
	own := &Flagz{TypeMeta: metav1.TypeMeta{Kind: "Flagz", APIVersion: strataGroup + "/" + strataVersion}, ObjectMeta: p.objectMeta(), Flags: map[string]Flag{}}
	var b strings.Builder
	b.WriteString(p.header("flagz"))
	p.Flags.VisitAll(func(f *pflag.Flag) {
		key := p.FlagKeys[f.Name]
		value := f.Value.String()
		if len(f.Annotations["classified"]) > 0 || key != "" && p.SecretKey != nil && p.SecretKey(key) {
			value = Classified
		}
		kube.Flags[f.Name] = value
		own.Flags[f.Name] = Flag{Value: value, Set: f.Changed, Key: key}
		from := "default"
		if f.Changed {
			from = "command line"
		}
		if key != "" {
			from += ", sets " + key
		}
		fmt.Fprintf(&b, "%s=%s (%s)\n", f.Name, value, from)
	})
	return &reply{text: b.String(), objects: map[object]any{
		{"Flagz", kubeVersion, kubeGroup}:     kube,
		{"Flagz", strataVersion, strataGroup}: own,
	}}, nil
}
