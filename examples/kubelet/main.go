// Command kubelet-config loads kubelet's configuration, its real
// KubeletConfiguration and its real configuration flags (k8s.io/kubernetes
// v1.37.2), through strata, and prints it:
//
//	kubelet-config [--profile kubelet|strata] [--config FILE] [--config-dir DIR] [kubelet's flags] --print-config
//
// --print-config prints the effective configuration as one
// kubelet.config.k8s.io/v1beta1 KubeletConfiguration JSON object;
// --explain prints it with the provenance of every key, as
// examples/component does. On an error the command prints nothing on
// stdout, names the file or flag and the problem on stderr, and exits 1
// (2 for a command line it cannot parse).
//
// --profile kubelet, the default, loads exactly as kubelet v1.37.2 does;
// --profile strata keeps strata's stricter rules. docs/KUBELET.md lists
// every difference.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/stratacfg/strata/examples/kubelet/kubeletconfig"
	"github.com/stratacfg/strata/layers"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	profile, print, explain, rest, err := ownFlags(args)
	if err != nil {
		fmt.Fprintln(stderr, "kubelet-config:", err)
		return 2
	}
	k, err := kubeletconfig.NewKind()
	if err != nil {
		fmt.Fprintln(stderr, "kubelet-config:", err)
		return 1
	}
	r, err := kubeletconfig.Load(k, profile, rest)
	if err != nil {
		fmt.Fprintln(stderr, "kubelet-config:", err)
		var usage *layers.UsageError
		if errors.As(err, &usage) {
			return 2
		}
		return 1
	}
	for _, w := range r.Warnings {
		fmt.Fprintln(stderr, "kubelet-config: warning:", w)
	}
	var out []byte
	switch {
	case explain:
		e, err := kubeletconfig.Explain(k, r)
		if err == nil {
			out, err = json.MarshalIndent(e, "", "  ")
		}
		if err != nil {
			fmt.Fprintln(stderr, "kubelet-config:", err)
			return 1
		}
	case print:
		if out, err = kubeletconfig.JSON(k, r.Config); err != nil {
			fmt.Fprintln(stderr, "kubelet-config:", err)
			return 1
		}
	default:
		fmt.Fprintf(stderr, "kubelet-config: the configuration loads (profile %s); --print-config prints it\n", profile)
		return 0
	}
	fmt.Fprintln(stdout, string(out))
	return 0
}

// ownFlags takes the command's own flags (--profile, --print-config,
// --explain) out of args and leaves kubelet's.
func ownFlags(args []string) (profile string, print, explain bool, rest []string, err error) {
	profile = kubeletconfig.ProfileKubelet
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i:]...)
			return profile, print, explain, rest, nil
		case a == "--print-config" || a == "--print_config":
			print = true
		case a == "--explain":
			explain = true
		case a == "--profile":
			if i+1 == len(args) {
				return "", false, false, nil, errors.New("flag needs an argument: --profile")
			}
			i++
			profile = args[i]
		case strings.HasPrefix(a, "--profile="):
			profile = strings.TrimPrefix(a, "--profile=")
		default:
			rest = append(rest, a)
		}
	}
	if profile != kubeletconfig.ProfileKubelet && profile != kubeletconfig.ProfileStrata {
		return "", false, false, nil, fmt.Errorf("--profile %q: want %s or %s", profile, kubeletconfig.ProfileKubelet, kubeletconfig.ProfileStrata)
	}
	return profile, print, explain, rest, nil
}
