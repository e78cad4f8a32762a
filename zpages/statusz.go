package zpages

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeStatusz is Kubernetes' Statusz object (config.k8s.io/v1beta1).
type KubeStatusz struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	StartTime         metav1.Time `json:"startTime"`
	UptimeSeconds     int64       `json:"uptimeSeconds"`
	GoVersion         string      `json:"goVersion"`
	BinaryVersion     string      `json:"binaryVersion"`
	EmulationVersion  string      `json:"emulationVersion,omitempty"`
	Paths             []string    `json:"paths"`
}

// Statusz is strata's /statusz object: Kubernetes' and the configuration.
type Statusz struct {
	KubeStatusz   `json:",inline"`
	Configuration *Status `json:"configuration,omitempty"`
}

func (p *Pages) statusz(_ *http.Request, paths []string) (*reply, error) {
	now := time.Now()
	kube := KubeStatusz{
		TypeMeta:      metav1.TypeMeta{Kind: "Statusz", APIVersion: kubeGroup + "/" + kubeVersion},
		ObjectMeta:    p.objectMeta(),
		StartTime:     metav1.NewTime(p.Started),
		UptimeSeconds: int64(now.Sub(p.Started).Seconds()),
		GoVersion:     runtime.Version(),
		BinaryVersion: p.BinaryVersion,
		Paths:         paths,
	}
	own := &Statusz{KubeStatusz: kube}
	own.APIVersion = strataGroup + "/" + strataVersion
	var b strings.Builder
	b.WriteString(p.header("statusz"))
	up := now.Sub(p.Started)
	fmt.Fprintf(&b, "Started: %s\nUp: %d hr %02d min %02d sec\nGo version: %s\nBinary version: %s\nPaths: %s\n",
		p.Started.Format(time.UnixDate), int(up.Hours()), int(up.Minutes())%60, int(up.Seconds())%60,
		kube.GoVersion, kube.BinaryVersion, strings.Join(paths, " "))
	if p.Status != nil {
		s := p.Status()
		own.Configuration = &s
		if !s.Loaded.IsZero() {
			fmt.Fprintf(&b, "Configuration loaded: %s\n", s.Loaded.Format(time.UnixDate))
		}
		if s.Hash != "" {
			fmt.Fprintf(&b, "Configuration hash: %s\n", s.Hash)
		}
		if len(s.Sources) > 0 {
			fmt.Fprintf(&b, "Configuration sources: %s\n", strings.Join(s.Sources, ", "))
		}
		if len(s.RestartRequired) > 0 {
			fmt.Fprintf(&b, "Restart required: %s\n", strings.Join(s.RestartRequired, " "))
		}
		if s.LastError != "" {
			fmt.Fprintf(&b, "Last reload refused: %s\n", s.LastError)
		}
	}
	return &reply{text: b.String(), objects: map[object]any{
		{"Statusz", kubeVersion, kubeGroup}:     kube,
		{"Statusz", strataVersion, strataGroup}: own,
	}}, nil
}
