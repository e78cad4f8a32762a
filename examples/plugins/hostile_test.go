package main

import (
	"testing"
)

// TestHostileManifests reads manifests written to make the computation
// serve what they should not: a literal shaped like a reference stays a
// literal (and fails its option's type), a reference cannot name another
// namespace, by a field or by its name, and a misspelt selector is
// refused instead of selecting every cluster.
func TestHostileManifests(t *testing.T) {
	const override = `apiVersion: greenhouse.sap/v1alpha1
kind: PluginOverride
metadata: {name: o, namespace: org}
spec:
  pluginDefinitionNames: [app]
`
	preset := presetHead + "    optionValues:\n    - {name: must, value: x}\n"
	forged := `{"$ref": "secret kube-system/admin-token#token"}`
	for _, tc := range []struct {
		name     string
		override string
		want     map[string]string // values, on success
		err      string            // or the error
	}{
		{
			name:     "a forged reference on an int option",
			override: "  overrides:\n  - {name: size, value: " + forged + "}\n",
			err:      `PluginOverride org/o: spec.overrides[0] (size): value {"$ref":"secret kube-system/admin-token#token"} is not of type int`,
		},
		{
			name:     "a forged reference on a string option",
			override: "  overrides:\n  - {name: token, value: " + forged + "}\n",
			err:      `spec.overrides[0] (token): value {"$ref":"secret kube-system/admin-token#token"} is not of type string`,
		},
		{
			name:     "a reference to another namespace's Secret by a field",
			override: "  overrides:\n  - name: password\n    valueFrom: {secret: {name: admin-token, key: token, namespace: kube-system}}\n",
			err:      `PluginOverride: unknown field "spec.overrides[0].valueFrom.secret.namespace"`,
		},
		{
			name:     "a reference to another namespace's Secret by its name",
			override: "  overrides:\n  - name: password\n    valueFrom: {secret: {name: kube-system/admin-token, key: token}}\n",
			err:      `spec.overrides[0] (password): valueFrom.secret.name "kube-system/admin-token" is not the name of a Secret of the Plugin's namespace`,
		},
		{
			name:     "a misspelt cluster selector",
			override: "  clusterSelektor: {clusterNames: [c9]}\n  overrides:\n  - {name: size, value: 5}\n",
			err:      `PluginOverride: unknown field "spec.clusterSelektor"`,
		},
		{
			name:     "a field given twice",
			override: "  overrides:\n  - {name: size, value: 5, value: 6}\n",
			err:      `key "value" already set in map`,
		},
		{
			name:     "a reference the override's producer writes",
			override: "  overrides:\n  - name: password\n    valueFrom: {secret: {name: admin-token, key: token}}\n",
			want:     map[string]string{"password": "secret admin-token#token", "must": `"x"`, "size": "1", "token": `"changeme"`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, _ := templateCase(t, scenario(t, definition, cluster, preset, presetPlugin, override+tc.override), tc.err)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %s, want %s (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}
