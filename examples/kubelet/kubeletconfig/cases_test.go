package kubeletconfig_test

import "strings"

const (
	h      = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	jsonTM = `"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration"`
)

// cfg and dir are the usual command lines of the cases.
var (
	cfg    = []string{"--config", "$DIR/kubelet.yaml"}
	dir    = []string{"--config-dir", "$DIR/conf.d"}
	cfgDir = []string{"--config", "$DIR/kubelet.yaml", "--config-dir", "$DIR/conf.d"}
)

func with(args []string, more ...string) []string {
	return append(append([]string(nil), args...), more...)
}

// cases are kubelet's own tests of its loading, as directories
// (cmd/kubelet/app/server_test.go, pkg/kubelet/kubeletconfig/configfiles
// and test/e2e_node/kubelet_config_dir_test.go), and the edges of what it
// does.
var cases = []dirCase{
	// os.ReadFile of a directory: "is a directory"
	// (pkg/kubelet/kubeletconfig/configfiles/configfiles.go,
	// cmd/kubelet/app/server.go), for the file and for a drop-in, which
	// a link may name.
	{name: "--config names a directory", files: map[string]string{"kubelet.yaml/a.yaml": h + "port: 1234\n"}, args: cfg, fails: true},
	{name: "--config names a directory holding a dot-file", files: map[string]string{"kubelet.yaml/.keep": "x"}, args: cfg, fails: true},
	{name: "a drop-in that is a link to a directory", files: map[string]string{"kubelet.yaml": h, "target/a.yaml": h + "port: 1234\n", "conf.d/README": "x"},
		links: map[string]string{"conf.d/10.conf": "../target"}, args: cfgDir, fails: true},
	{name: "a drop-in that is a link to an empty directory", files: map[string]string{"kubelet.yaml": h, "target/.keep": "x", "conf.d/README": "x"},
		links: map[string]string{"conf.d/10.conf": "../target"}, args: cfgDir, fails: true},
	// kubelet converts the file with yaml.YAMLToJSON, which reads its
	// first YAML document, directives included, and its codec knows no
	// v1 List (pkg/kubelet/kubeletconfig/util/codec).
	{name: "a comment, then a %YAML directive", files: map[string]string{"kubelet.yaml": "# managed by ansible\n\n%YAML 1.1\n---\n" + h + "port: 1234\n"}, args: cfg, want: map[string]any{"/port": 1234}},
	{name: "a %YAML directive", files: map[string]string{"kubelet.yaml": "%YAML 1.1\n---\n" + h + "port: 1234\n"}, args: cfg, want: map[string]any{"/port": 1234}},
	{name: "an empty first document", files: map[string]string{"kubelet.yaml": "---\n# generated\n---\n" + h + "port: 1234\n"}, args: cfg, fails: true},
	{name: "the file a v1 List", files: map[string]string{"kubelet.yaml": "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(h, "\n", "\n  ") + "port: 1234\n"}, args: cfg, fails: true},
	// A drop-in that starts with "{" is JSON to kubelet's codec (its
	// recognizer), whatever YAML would make of it.
	{name: "a JSON drop-in in YAML's flow style", files: map[string]string{"kubelet.yaml": h,
		"conf.d/10.conf": "{apiVersion: kubelet.config.k8s.io/v1beta1, kind: KubeletConfiguration, port: 1234}\n"}, args: cfgDir, fails: true},
	{name: "a JSON drop-in with a trailing comma", files: map[string]string{"kubelet.yaml": h,
		"conf.d/10.conf": "{" + jsonTM + `,"port":1234,}`}, args: cfgDir, fails: true},
	{name: "a JSON drop-in with an escaped slash", files: map[string]string{"kubelet.yaml": h,
		"conf.d/10.conf": "{" + jsonTM + `,"staticPodPath":"\/etc\/kubernetes\/manifests"}`}, args: cfgDir,
		want: map[string]any{"/staticPodPath": "/etc/kubernetes/manifests"}},
	{name: "a JSON drop-in with a member's colon on the next line", files: map[string]string{"kubelet.yaml": h,
		"conf.d/10.conf": "{" + jsonTM + ",\n\"port\"\n: 1234}\n"}, args: cfgDir, want: map[string]any{"/port": 1234}},
	// Each drop-in is a JSON merge patch (RFC 7386): an empty object is
	// an object, which replaces a value that is not one.
	{name: "{} over a number", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "port: {}\n"}, args: cfgDir, fails: true},
	{name: "a drop-in's tracing: {}", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "tracing: {}\n"}, args: cfgDir},
	{name: "the file's tracing: {} beside a drop-in directory", files: map[string]string{"kubelet.yaml": h + "tracing: {}\n", "conf.d/README": "x"}, args: cfgDir},
	// Members named "$" are members like any other to kubelet.
	{name: "an object of one $ref member", files: map[string]string{
		"kubelet.yaml":   h + "authentication: {x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}}\n",
		"conf.d/10.conf": h + "authentication: {$ref: \"secret a/b#c\"}\n",
	}, args: cfgDir, want: map[string]any{"/authentication/x509/clientCAFile": "/etc/kubernetes/pki/ca.crt"}},
	{name: "a $deleteFromPrimitiveList member", files: map[string]string{
		"kubelet.yaml":   h + "clusterDNS: [10.0.0.10]\n",
		"conf.d/10.conf": h + "$deleteFromPrimitiveList/clusterDNS: [10.0.0.10]\n",
	}, args: cfgDir, want: map[string]any{"/clusterDNS": []any{"10.0.0.10"}}},
	// os.ReadFile follows a link wherever it leads, out of a checkout too.
	{name: "--config a link out of a checkout", files: map[string]string{"repo/.git": "gitdir: x", "elsewhere/k.yaml": h + "port: 1234\n"},
		links: map[string]string{"repo/kubelet.yaml": "../elsewhere/k.yaml"}, args: []string{"--config", "$DIR/repo/kubelet.yaml"}, want: map[string]any{"/port": 1234}},
	// cmd/kubelet/app TestMergeKubeletConfigurations
	{name: "drop-ins override the file", files: map[string]string{
		"kubelet.yaml":           h + "port: 9090\nreadOnlyPort: 10257\n",
		"conf.d/10-kubelet.conf": h + "port: 9090\n",
		"conf.d/20-kubelet.conf": h + "port: 8080\nreadOnlyPort: 10255\n",
	}, args: cfgDir, want: map[string]any{"/port": 8080, "/readOnlyPort": 10255}},
	{name: "drop-ins merge a map per key", files: map[string]string{
		"kubelet.yaml":           h + "readOnlyPort: 10256\nkubeReserved: {memory: 100Mi}\nsyncFrequency: 5m\n",
		"conf.d/10-kubelet.conf": h + "readOnlyPort: 10255\nkubeReserved: {memory: 150Mi, cpu: 200m}\n",
		"conf.d/20-kubelet.conf": h + "readOnlyPort: 10257\nkubeReserved: {memory: 100Mi}\n",
	}, args: cfgDir, want: map[string]any{"/readOnlyPort": 10257, "/kubeReserved/cpu": "200m", "/kubeReserved/memory": "100Mi", "/syncFrequency": "5m0s"}},
	{name: "drop-ins replace lists", files: map[string]string{
		"kubelet.yaml":           h + "port: 9090\nclusterDNS: [192.168.1.3, 192.168.1.4]\n",
		"conf.d/10-kubelet.conf": h + "port: 9090\nsystemReserved: {memory: 1Gi}\n",
		"conf.d/20-kubelet.conf": h + "port: 8080\nreadOnlyPort: 10255\nsystemReserved: {memory: 2Gi}\nclusterDNS: [192.168.1.1, 192.168.1.5, 192.168.1.8]\n",
	}, args: cfgDir, want: map[string]any{"/port": 8080, "/systemReserved/memory": "2Gi", "/clusterDNS": []any{"192.168.1.1", "192.168.1.5", "192.168.1.8"}}},
	{name: "flags override drop-ins", files: map[string]string{
		"conf.d/10-kubelet.conf": h + "port: 9090\n",
		"conf.d/20-kubelet.conf": h + "port: 8080\nreadOnlyPort: 10255\n",
	}, args: with(dir, "--port=8081", "--read-only-port=10256"), want: map[string]any{"/port": 8081, "/readOnlyPort": 10256}},
	{name: "flags override the file", files: map[string]string{
		"kubelet.yaml": h + "port: 9090\nclusterDNS: [192.168.1.3]\n",
	}, args: with(cfg, "--port=9090", "--cluster-dns=192.168.1.2"), want: map[string]any{"/port": 9090, "/clusterDNS": []any{"192.168.1.2"}}},
	{name: "a drop-in's zero is defaulted again", files: map[string]string{
		"kubelet.yaml":           h + "resolvConf: original\nport: 123\nreadOnlyPort: 234\n",
		"conf.d/10-kubelet.conf": h + "resolvConf: dropin1\n",
		"conf.d/20-kubelet.conf": h + "port: 0\n",
	}, args: cfgDir, want: map[string]any{"/resolvConf": "dropin1", "/port": 10250, "/readOnlyPort": 234}},
	{name: "a drop-in of another version", files: map[string]string{
		"kubelet.yaml": h, "conf.d/10.conf": "apiVersion: kubelet.config.k8s.io/v1beta2\nkind: KubeletConfiguration\nport: 1\n",
	}, args: cfgDir, fails: true},
	{name: "a drop-in of another kind", files: map[string]string{
		"kubelet.yaml": h, "conf.d/10.conf": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration2\nport: 1\n",
	}, args: cfgDir, fails: true},
	{name: "a drop-in without apiVersion and kind", files: map[string]string{
		"kubelet.yaml": h, "conf.d/10.conf": "port: 123\n",
	}, args: cfgDir, fails: true},
	{name: "a drop-in with kind but no apiVersion", files: map[string]string{
		"kubelet.yaml": h, "conf.d/10.conf": "kind: KubeletConfiguration\nport: 123\n",
	}, args: cfgDir, fails: true},
	{name: "a drop-in the same as the file", files: map[string]string{
		"kubelet.yaml": h + "port: 9090\nreadOnlyPort: 10255\n", "conf.d/10.conf": h + "port: 9090\nreadOnlyPort: 10255\n",
	}, args: cfgDir, want: map[string]any{"/port": 9090}},
	{name: "only .conf files are drop-ins", files: map[string]string{
		"kubelet.yaml":                     h + "port: 9090\n",
		"conf.d/10-should-be-ignored.yaml": h + "port: 7777\n",
		"conf.d/20-should-be-ignored.txt":  "readme text",
		"conf.d/30-valid.conf":             h + "readOnlyPort: 10255\n",
	}, args: cfgDir, want: map[string]any{"/port": 9090, "/readOnlyPort": 10255}},
	{name: "a drop-in that is not YAML", files: map[string]string{
		"kubelet.yaml": h, "conf.d/10-malformed.conf": h + "port: [this is not valid\n  yaml: {\n",
	}, args: cfgDir, fails: true},

	// cmd/kubelet/app TestMergeKubeletConfigsWithSubdirs
	{name: "a subdirectory after its parent's files", files: map[string]string{
		"kubelet.yaml":                  h + "port: 9090\nreadOnlyPort: 10257\n",
		"conf.d/10-kubelet.conf":        h + "port: 8080\n",
		"conf.d/subdir/20-kubelet.conf": h + "port: 7777\nreadOnlyPort: 9999\n",
	}, args: cfgDir, want: map[string]any{"/port": 7777, "/readOnlyPort": 9999}},
	{name: "one name in several subdirectories", files: map[string]string{
		"kubelet.yaml":                    h + "port: 9090\nreadOnlyPort: 10255\n",
		"conf.d/10-kubelet.conf":          h + "port: 8080\n",
		"conf.d/sub-dir1/10-kubelet.conf": h + "port: 7070\nreadOnlyPort: 8888\n",
		"conf.d/sub-dir2/10-kubelet.conf": h + "port: 6060\nreadOnlyPort: 9999\n",
	}, args: cfgDir, want: map[string]any{"/port": 6060, "/readOnlyPort": 9999}},
	{name: "a subdirectory walked before a file that sorts after it", files: map[string]string{
		"conf.d/a/z.conf": h + "port: 2000\n", "conf.d/a-b.conf": h + "port: 3000\n",
	}, args: dir, want: map[string]any{"/port": 3000}},

	// pkg/kubelet/kubeletconfig/configfiles TestLoad
	{name: "a missing file", files: map[string]string{}, args: cfg, fails: true},
	{name: "an empty file", files: map[string]string{"kubelet.yaml": ""}, args: cfg, fails: true},
	{name: "invalid YAML", files: map[string]string{"kubelet.yaml": "*"}, args: cfg, fails: true},
	{name: "invalid JSON", files: map[string]string{"kubelet.yaml": "{*"}, args: cfg, fails: true},
	{name: "no kind", files: map[string]string{"kubelet.yaml": "apiVersion: kubelet.config.k8s.io/v1beta1\n"}, args: cfg, fails: true},
	{name: "no apiVersion", files: map[string]string{"kubelet.yaml": "kind: KubeletConfiguration\n"}, args: cfg, fails: true},
	{name: "another kind", files: map[string]string{"kubelet.yaml": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: BogusKind\n"}, args: cfg, fails: true},
	{name: "another version", files: map[string]string{"kubelet.yaml": "apiVersion: kubelet.config.k8s.io/bogusversion\nkind: KubeletConfiguration\n"}, args: cfg, fails: true},
	{name: "defaults from YAML", files: map[string]string{"kubelet.yaml": h}, args: cfg, want: map[string]any{"/port": 10250}},
	{name: "defaults from JSON", files: map[string]string{"kubelet.yaml": `{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration"}`}, args: cfg},
	{name: "a relative path in the file", files: map[string]string{"kubelet.yaml": h + "staticPodPath: relative/path/test\n"}, args: cfg},
	{name: "a relative path in a JSON file", files: map[string]string{"kubelet.yaml": `{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","staticPodPath":"relative/path/test"}`}, args: cfg},
	{name: "a duplicate field in the file, the last wins", files: map[string]string{"kubelet.yaml": h + "staticPodPath: relative/path/test\nstaticPodPath: relative/path/test/foo\n"}, args: cfg},
	{name: "an unknown field in the file", files: map[string]string{"kubelet.yaml": h + "foo: bar\n"}, args: cfg},

	// test/e2e_node/kubelet_config_dir_test.go
	{name: "the node e2e drop-ins", files: map[string]string{
		"kubelet.yaml": h + "port: 10250\nreadOnlyPort: 10255\nauthorization: {mode: Webhook}\n",
		"conf.d/10-kubelet.conf": h + `port: 10255
readOnlyPort: 10257
clusterDNS: [192.168.1.10]
systemReserved: {memory: 1Gi}
authorization: {mode: Webhook, webhook: {cacheAuthorizedTTL: 5m, cacheUnauthorizedTTL: 30s}}
staticPodURLHeader: {kubelet-api-support: ['Authorization: 234APSDFA', 'X-Custom-Header: 123'], custom-static-pod: ['Authorization: 223EWRWER', 'X-Custom-Header: 456']}
shutdownGracePeriodByPodPriority: [{priority: 1, shutdownGracePeriodSeconds: 60}, {priority: 2, shutdownGracePeriodSeconds: 45}, {priority: 3, shutdownGracePeriodSeconds: 30}]
featureGates: {PodAndContainerStatsFromCRI: true}
`,
		"conf.d/20-kubelet.conf": h + `clusterDNS: [192.168.1.1, 192.168.1.5, 192.168.1.8]
port: 8080
cpuManagerReconcilePeriod: 1s
systemReserved: {memory: 2Gi}
authorization: {mode: Webhook, webhook: {cacheAuthorizedTTL: 6m, cacheUnauthorizedTTL: 40s}}
staticPodURLHeader: {kubelet-api-support: ['Authorization: 8945AFSG1', 'X-Custom-Header: 987'], custom-static-pod: ['Authorization: 223EWRWER', 'X-Custom-Header: 345']}
shutdownGracePeriodByPodPriority: [{priority: 1, shutdownGracePeriodSeconds: 19}, {priority: 2, shutdownGracePeriodSeconds: 41}, {priority: 6, shutdownGracePeriodSeconds: 30}]
featureGates: {PodAndContainerStatsFromCRI: false, MemoryQoS: true}
`,
	}, args: cfgDir, want: map[string]any{"/port": 8080, "/readOnlyPort": 10257, "/systemReserved/memory": "2Gi", "/authorization/webhook/cacheAuthorizedTTL": "6m0s"}},

	// The edges.
	{name: "no files: defaults, legacy defaults and flags", files: nil, args: []string{"--port=1234", "--kube-reserved=cpu=1"}, want: map[string]any{"/port": 1234, "/readOnlyPort": 10255, "/authentication/anonymous/enabled": true}},
	{name: "underscore spellings", files: map[string]string{"kubelet.yaml": h}, args: with(cfg, "--read_only_port=0", "--max_pods=50"), want: map[string]any{"/maxPods": 50}},
	{name: "a map flag replaces the file's map", files: map[string]string{"kubelet.yaml": h + "kubeReserved: {cpu: 100m, memory: 1Gi}\nevictionHard: {memory.available: 1Gi}\n"},
		args: with(cfg, "--kube-reserved=cpu=200m", "--eviction-hard=nodefs.available<5%"), want: map[string]any{"/kubeReserved/cpu": "200m", "/kubeReserved/memory": nil}},
	{name: "--feature-gates adds to the file's gates", files: map[string]string{"kubelet.yaml": h + "featureGates: {MemoryQoS: true, KubeletCrashLoopBackOffMax: true}\n"},
		args: with(cfg, "--feature-gates=MemoryQoS=false"), want: map[string]any{"/featureGates/MemoryQoS": false, "/featureGates/KubeletCrashLoopBackOffMax": true}},
	{name: "a gate locked to its default", files: map[string]string{"kubelet.yaml": h}, args: with(cfg, "--feature-gates=DynamicResourceAllocation=false"), fails: true},
	{name: "an empty map flag clears the map", files: map[string]string{"kubelet.yaml": h + "systemReserved: {cpu: 100m}\n"}, args: with(cfg, "--system-reserved=")},
	{name: "list flags", files: map[string]string{"kubelet.yaml": h + "clusterDNS: [10.0.0.10]\nallowedUnsafeSysctls: [kernel.msg*]\n"},
		args: with(cfg, "--cluster-dns=10.0.0.1,10.0.0.2", "--cluster-dns=10.0.0.3", "--allowed-unsafe-sysctls=net.core.somaxconn")},
	{name: "--vmodule appends to the file's", files: map[string]string{"kubelet.yaml": h + "logging: {vmodule: [{filePattern: a, verbosity: 1}]}\n"}, args: with(cfg, "--vmodule=b=2")},
	{name: "the split-stream options reset by the second parse", files: map[string]string{"kubelet.yaml": h + "logging: {options: {text: {splitStream: true}}}\n"}, args: cfg},
	{name: "logging flags", files: map[string]string{"kubelet.yaml": h + "logging: {verbosity: 2}\n"}, args: with(cfg, "-v=4", "--log-flush-frequency=10s", "--logging-format=json")},
	{name: "eviction defaults only when the file sets none", files: map[string]string{"kubelet.yaml": h + "evictionHard: {memory.available: 200Mi}\n"}, args: cfg, want: map[string]any{"/evictionHard/nodefs.available": nil}},
	{name: "eviction defaults merged on request", files: map[string]string{"kubelet.yaml": h + "evictionHard: {memory.available: 200Mi}\nmergeDefaultEvictionSettings: true\n"}, args: cfg, want: map[string]any{"/evictionHard/nodefs.available": "10%"}},
	{name: "no eviction defaults without --config", files: map[string]string{"conf.d/10.conf": h + "port: 1\n"}, args: dir},
	{name: "a drop-in's null removes the eviction thresholds", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "evictionHard: null\n"}, args: cfgDir},
	{name: "a drop-in's empty map changes nothing", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "evictionHard: {}\n"}, args: cfgDir},
	{name: "derived defaults stay as the file made them", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "nodeStatusUpdateFrequency: 20s\n"}, args: cfgDir},
	{name: "an unknown key in a drop-in", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "bogus: 1\nport: 1111\n"}, args: cfgDir, want: map[string]any{"/port": 1111}},
	{name: "a mis-cased key the file sets", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "Port: 1111\n"}, args: cfgDir, want: map[string]any{"/port": 10250}},
	{name: "a mis-cased key nothing sets", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "StaticPodPath: /etc/kubernetes/manifests\n"}, args: cfgDir, want: map[string]any{"/staticPodPath": "/etc/kubernetes/manifests"}},
	{name: "a wrong type a later drop-in corrects", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "port: eighty\n", "conf.d/20.conf": h + "port: 8080\n"}, args: cfgDir, want: map[string]any{"/port": 8080}},
	{name: "a wrong type left", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "port: eighty\n"}, args: cfgDir, fails: true},
	{name: "a duplicate key in a drop-in", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "port: 1\nport: 2\n"}, args: cfgDir, fails: true},
	{name: "an empty drop-in", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": ""}, args: cfgDir, fails: true},
	{name: "hidden drop-ins and directories", files: map[string]string{"conf.d/.10.conf": h + "port: 1000\n", "conf.d/.hidden/20.conf": h + "readOnlyPort: 2000\n"}, args: dir, want: map[string]any{"/port": 1000, "/readOnlyPort": 2000}},
	{name: "an empty drop-in directory", files: map[string]string{"kubelet.yaml": h + "port: 1\n", "conf.d/README": "x"}, args: cfgDir},
	{name: "a relative path in a drop-in stays relative", files: map[string]string{"kubelet.yaml": h + "staticPodPath: a\n", "conf.d/10.conf": h + "staticPodPath: b\n"}, args: cfgDir, want: map[string]any{"/staticPodPath": "b"}},
	{name: "a drop-in with a nested object", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "authentication: {anonymous: {enabled: true}, webhook: {cacheTTL: 10s}}\n"}, args: cfgDir},
	{name: "a drop-in in JSON", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": `{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","maxPods":42}`}, args: cfgDir, want: map[string]any{"/maxPods": 42}},
	{name: "an invalid configuration", files: map[string]string{"kubelet.yaml": h + "imageGCHighThresholdPercent: 101\n"}, args: cfg, fails: true},
	{name: "a flag that makes it invalid", files: map[string]string{"kubelet.yaml": h}, args: with(cfg, "--image-gc-high-threshold=101"), fails: true},
	{name: "an unknown flag", files: map[string]string{"kubelet.yaml": h}, args: with(cfg, "--no-such-flag"), fails: true},
	{name: "an unknown gate", files: map[string]string{"kubelet.yaml": h}, args: with(cfg, "--feature-gates=NoSuchGate=true"), fails: true},
	{name: "reserved memory", files: map[string]string{"kubelet.yaml": h + "reservedMemory: [{numaNode: 0, limits: {memory: 1100Mi}}]\nkubeReserved: {memory: 500Mi}\nsystemReserved: {memory: 500Mi}\nevictionHard: {memory.available: 100Mi}\nmemoryManagerPolicy: Static\n"}, args: cfg},
	{name: "register with taints", files: map[string]string{"kubelet.yaml": h + "registerWithTaints: [{key: a, value: b, effect: NoSchedule}]\n"}, args: with(cfg, "--register-with-taints=c=d:NoExecute")},
}

func init() {
	cases = append(cases,
		dirCase{name: "an unknown gate in the file", files: map[string]string{"kubelet.yaml": h + "featureGates: {NoSuchGate: true}\n"}, args: cfg, fails: true},
		dirCase{name: "a locked gate in a drop-in", files: map[string]string{"kubelet.yaml": h, "conf.d/10.conf": h + "featureGates: {DynamicResourceAllocation: false}\n"}, args: cfgDir, fails: true},
		dirCase{name: "a main file of two documents", files: map[string]string{"kubelet.yaml": h + "port: 1111\n---\n" + h + "port: 2222\n"}, args: cfg},
	)
}
