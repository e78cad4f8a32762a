package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWriterCannotOptOutOfOverrides: a Plugin's writer cannot turn the
// operator's PluginOverrides off by adding a value strata refuses and
// Greenhouse takes (a secret option's literal vault+kvv2 reference): the
// write is stored with the overrides applied.
func TestWriterCannotOptOutOfOverrides(t *testing.T) {
	objs := objects(t, definition, cluster, presetPlugin,
		override("o", "2026-01-01T00:00:00Z", "  - {name: size, value: 5}\n"))
	plugin := written(t, nil, "  - {name: size, value: 2}\n  - {name: must, value: x}\n"+
		"  - {name: password, value: \"vault+kvv2:///secret/data/app/password\"}\n")

	out, warnings := throughWebhook(t, objs, plugin)
	overridesOff(t, "a secret option's vault+kvv2 literal", out, warnings)
}

// TestDiffOverrideFileOfOneOverride: `plugins diff --override FILE` takes
// a file holding one PluginOverride; one holding two is an error naming
// the file, not its first with the second dropped.
func TestDiffOverrideFileOfOneOverride(t *testing.T) {
	dir := scenario(t, definition, cluster, presetHead+"    optionValues: [{name: must, value: x}]\n", presetPlugin)
	file := filepath.Join(t.TempDir(), "o.yaml")
	two := override("first", "2026-01-01T00:00:00Z", "  - {name: token, value: t1}\n") + "---\n" +
		override("second", "2026-01-01T00:00:00Z", "  - {name: size, value: 9}\n")
	if err := os.WriteFile(file, []byte(two), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"diff", "--override", file, "--from-dir", dir}, &stdout, &stderr)
	if code == 0 {
		t.Errorf("a file of two PluginOverrides: exit 0, stdout %s; want an error naming %s", stdout.String(), file)
	}
	if code != 0 && !strings.Contains(stderr.String(), file) {
		t.Errorf("exit %d, stderr %q: want the file named", code, stderr.String())
	}
}

// TestNamespacelessManifestStaysOutOfNamespaces: a PluginOverride
// manifest without metadata.namespace is refused, naming its file, not
// applied to the namespace that shares its name.
func TestNamespacelessManifestStaysOutOfNamespaces(t *testing.T) {
	namespaceless := `apiVersion: greenhouse.sap/v1alpha1
kind: PluginOverride
metadata: {name: org, creationTimestamp: "2030-01-01T00:00:00Z"}
spec:
  pluginDefinitionNames: [app]
  overrides:
  - {name: token, value: from-nowhere}
`
	dir := scenario(t, definition, cluster, presetHead+"    optionValues: [{name: must, value: x}]\n", presetPlugin, namespaceless)
	code, out, stderr := runTemplate(t, "--from-dir", dir, "--plugin", "org/p-c1")
	if code != 0 {
		return // refused
	}
	got, res := values(t, out)
	if got["token"] == `"from-nowhere"` || slices.Contains(res.AppliedOverrides, "PluginOverride org") {
		t.Errorf("a PluginOverride in no namespace, named org, applies to namespace org: token = %s, applied %v (stderr %q)", got["token"], res.AppliedOverrides, stderr)
	}
}
