package kubeobjects

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratacfg/strata/internal/text"
)

// TestDecode reads what kubectl prints: documents and v1 Lists of
// ConfigMaps and Namespaces, strictly, each object once.
func TestDecode(t *testing.T) {
	list := `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: a, namespace: ci}
  data: {k: v}
- apiVersion: v1
  kind: Namespace
  metadata: {name: ci}
---
# only a comment
---
{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "ci"}, "binaryData": {"z": "AAE="}}
`
	objs, err := Decode("stdin", []byte(list))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 || objs[0].(*corev1.ConfigMap).Data["k"] != "v" || objs[1].(*corev1.Namespace).Name != "ci" ||
		string(objs[2].(*corev1.ConfigMap).BinaryData["z"]) != "\x00\x01" {
		t.Fatalf("%+v", objs)
	}
	for _, tc := range []struct{ in, want string }{
		{list + "---\n" + `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ci"}}`, "stdin: document 4: ConfigMap ci/a is also defined in stdin: document 1, item 1"},
		{"apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ci}\n", "is neither a ConfigMap nor a Namespace"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ci}\ndata: {k: v}\nunknown: 1\n", `unknown field "unknown"`},
		{"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n", "stdin: document 1, item 1: ConfigMap a has no namespace"},
	} {
		if _, err := Decode("stdin", []byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}

// FuzzDecode feeds arbitrary text to the decoder: it never panics, and
// what it returns are ConfigMaps with a namespace and Namespaces.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: b}}\n"))
	f.Add([]byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n{}"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Decode("fuzz", data)
		if err != nil {
			return
		}
		for _, o := range objs {
			switch o := o.(type) {
			case *corev1.ConfigMap:
				if o.Namespace == "" {
					t.Fatalf("a ConfigMap with no namespace: %+v", o)
				}
			case *corev1.Namespace:
			default:
				t.Fatalf("decoded a %T", o)
			}
		}
	})
}

// TestDecodeAliasBomb: a ConfigMap file of 85 KB whose YAML aliases one
// 64 KiB scalar 4,000 times (262 MB written out) is refused before the
// decoder expands it, naming the document.
func TestDecodeAliasBomb(t *testing.T) {
	doc := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: ns}\n" +
		"data:\n  a: &a " + strings.Repeat("x", 64<<10) + "\nlist:\n" + strings.Repeat("- *a\n", 4000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Decode("bomb.yaml", []byte(doc))
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "bomb.yaml: document 1: excessive YAML aliasing") {
		t.Errorf("%v, want the aliases refused naming the document", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("refusing it allocated %d MiB", alloc>>20)
	}
}

// TestDecodeErrorIsBounded: the error about a manifest with many
// mistakes (100 unknown fields of 20,000 bytes each, 2 MB, under the 4 MiB
// a file may hold) lists at most text.MaxListed of them, each cut, and
// counts the rest.
func TestDecodeErrorIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ci"}`)
	for i := range 100 {
		fmt.Fprintf(&b, `, "unknownfield%03d%s": 1`, i, strings.Repeat("x", 20000))
	}
	b.WriteString("}\n")
	_, err := Decode("cm.yaml", []byte(b.String()))
	if err == nil {
		t.Fatal("decoded")
	}
	msg := err.Error()
	if n := strings.Count(msg, "unknown field"); n > text.MaxListed || len(msg) > text.MaxListed*(text.MaxMessage+2)+200 {
		t.Errorf("the error names %d unknown fields in %d bytes; want at most %d named: %.200s…", n, len(msg), text.MaxListed, msg)
	}
}
