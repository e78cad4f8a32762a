package validation

import (
	"reflect"
	"strings"
	"testing"

	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
)

// TestReadyMadeMarkersInline: a component-base struct embedded inline
// carries its markers too, "wherever they are" (FieldsFor).
func TestReadyMadeMarkersInline(t *testing.T) {
	type doc struct {
		componentbaseconfigv1alpha1.ClientConnectionConfiguration `json:",inline"`
		Port                                                      int `json:"port"`
	}
	f, err := FieldsFor(reflect.TypeFor[doc](), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Has("/kubeconfig", Path) {
		t.Errorf("/kubeconfig of an inline ClientConnectionConfiguration is no path: paths %v", f.Keys(Path))
	}
	if u := f.undeclaredStrings(); len(u) != 0 {
		t.Errorf("strings declared neither path nor not-path: %v", u)
	}
}

// TestTagOnInlineEmbeddedStruct: a marker on a struct embedded inline
// applies to its members, or is refused; it is not dropped.
func TestTagOnInlineEmbeddedStruct(t *testing.T) {
	type Creds struct {
		Token string `json:"token" strata:"not-path"`
	}
	type doc struct {
		Creds `json:",inline" strata:"secret"`
	}
	f, err := FieldsFor(reflect.TypeFor[doc](), nil, nil)
	if err == nil && !f.Has("/token", Secret) {
		t.Errorf("secret on an inline embedded struct neither applies to /token nor is refused: secrets %v", f.Keys(Secret))
	}
	type bogus struct {
		Creds `json:",inline" strata:"pth"`
	}
	if _, err := FieldsFor(reflect.TypeFor[bogus](), nil, nil); err == nil {
		t.Error("an unknown strata tag on an inline embedded struct was accepted")
	}
}

// TestUnknownTagInListElement: FieldsFor "fails on an unknown tag value",
// inside a list element too.
func TestUnknownTagInListElement(t *testing.T) {
	type elem struct {
		Name string   `json:"name" strata:"pth"`
		Set  []string `json:"set" strata:"list-type=bogus"`
	}
	type doc struct {
		Items []elem `json:"items"`
	}
	_, err := FieldsFor(reflect.TypeFor[doc](), nil, nil)
	for _, want := range []string{`field /items/*/name: unknown strata tag "pth"`, `list-type="bogus" is neither set nor append`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error containing %q", err, want)
		}
	}
}

// TestFeatureGateInListElement: a feature gate on a field inside a list
// element is either enforced (Gates lists it) or refused, as secret and
// os= are; it is not silently dropped.
func TestFeatureGateInListElement(t *testing.T) {
	type elem struct {
		Name  string `json:"name" strata:"not-path"`
		Items int    `json:"items" strata:"feature-gate=AlphaThing"`
	}
	type doc struct {
		Elems []elem `json:"elems" strata:"list-map-key=name"`
	}
	f, err := FieldsFor(reflect.TypeFor[doc](), nil, nil)
	if err == nil && len(f.Gates()) == 0 {
		t.Errorf("feature-gate=AlphaThing on /elems/*/items neither refused nor in Gates(): %v", f.Gates())
	}
}

// TestListElementFieldsAreFields: the fields inside a plain list's
// elements, whose tags FieldsFor reads, can be declared and marked
// empty-is-unset like any other.
func TestListElementFieldsAreFields(t *testing.T) {
	type elem struct {
		URL    string            `json:"url" strata:"not-path"`
		Labels map[string]string `json:"labels" strata:"empty-is-unset"`
	}
	type doc struct {
		Items []elem `json:"items"`
	}
	if _, err := FieldsFor(reflect.TypeFor[doc](), nil, nil); err != nil {
		t.Errorf("empty-is-unset on a map inside a list element: %v", err)
	}
	type plain struct {
		URL string `json:"url"`
	}
	type doc2 struct {
		Items []plain `json:"items"`
	}
	if _, err := FieldsFor(reflect.TypeFor[doc2](), map[string]Marker{"/items/*/url": NotPath}, nil); err != nil {
		t.Errorf("declaring a field inside a list element: %v", err)
	}
}

type treeNode struct {
	Token string    `json:"token" strata:"secret"`
	Child *treeNode `json:"child,omitempty"`
}

// TestMarkersOfRecursiveTypes: a marker holds at every depth of a
// recursive type, not only the first.
func TestMarkersOfRecursiveTypes(t *testing.T) {
	f, err := FieldsFor(reflect.TypeFor[treeNode](), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"/child/token", "/child/child/child/token"} {
		if !f.Has(key, Secret) {
			t.Errorf("%s is not secret; secrets %v", key, f.Keys(Secret))
		}
	}
	if !f.Holds("/child/child", Secret) || f.Has("/child", Secret) {
		t.Errorf("/child/child holds a secret %v, /child is one %v; want true, false", f.Holds("/child/child", Secret), f.Has("/child", Secret))
	}
}

// TestUndeclaredStringsEverywhere: CheckStrings "fails t for every string
// field that is declared neither a path nor not a path", those inside a
// keyed list's elements (whose path markers are resolved) and a list of
// *string included.
func TestUndeclaredStringsEverywhere(t *testing.T) {
	type elem struct {
		Name    string `json:"name" strata:"not-path"`
		HostDir string `json:"hostDir"`
	}
	type doc struct {
		Mounts []elem    `json:"mounts" strata:"list-map-key=name"`
		Dirs   []*string `json:"dirs"`
	}
	f, err := FieldsFor(reflect.TypeFor[doc](), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(f.undeclaredStrings(), " ")
	for _, want := range []string{"/mounts/*/hostDir", "/dirs"} {
		if !strings.Contains(got, want) {
			t.Errorf("undeclaredStrings() = %q, missing %s", got, want)
		}
	}
}

type pathRefsInner struct{ Dir string }
type pathRefsInternal struct{ Sub pathRefsInner }
type pathRefsVersioned struct {
	// A named field tagged ",inline" is not inlined: encoding/json and
	// sigs.k8s.io/json read it as the member "Sub".
	Sub pathRefsInner `json:",inline"`
}

// TestPathRefsNamedInlineField: PathRefs keys a field as the decoder
// reads it.
func TestPathRefsNamedInlineField(t *testing.T) {
	got, err := PathRefs(func(c *pathRefsInternal) []*string { return []*string{&c.Sub.Dir} }, reflect.TypeFor[pathRefsVersioned]())
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]Marker{"/Sub/Dir": Path}; !reflect.DeepEqual(got, want) {
		t.Errorf("PathRefs = %v, want %v", got, want)
	}
}

type mapTreeNode struct {
	Token    string                 `json:"token" strata:"secret"`
	Children map[string]mapTreeNode `json:"children,omitempty"`
}

// TestMarkersOfRecursiveTypesUnderAMap: "a struct type met inside
// itself carries its markers at every depth" — also when its first place
// is a map's value (a tree of named nodes), where secret is allowed.
func TestMarkersOfRecursiveTypesUnderAMap(t *testing.T) {
	type doc struct {
		Nodes map[string]mapTreeNode `json:"nodes"`
		Root  *mapTreeNode           `json:"root"`
	}
	f, err := FieldsFor(reflect.TypeFor[doc](), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"/root/token", "/root/children/a/token", "/root/children/a/children/b/token",
		"/nodes/a/token", "/nodes/a/children/b/token", "/nodes/a/children/b/children/c/token"} {
		if !f.Has(key, Secret) {
			t.Errorf("%s is not secret; secrets %v", key, f.Keys(Secret))
		}
	}
}
