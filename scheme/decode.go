package scheme

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/internal/yamljson"
	"github.com/stratacfg/strata/merge"
)

// Mode is how unknown and duplicate fields are treated.
type Mode int

const (
	// Strict makes an unknown or duplicate field an error.
	Strict Mode = iota
	// Warn decodes the object and reports unknown and duplicate fields as
	// warnings (the lenient path to ship before going strict,
	// kubernetes#82924).
	Warn
	// Ignore decodes the object and says nothing about them.
	Ignore
)

// ParseMode parses "strict", "warn" or "ignore".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "strict":
		return Strict, nil
	case "warn":
		return Warn, nil
	case "ignore":
		return Ignore, nil
	}
	return Strict, fmt.Errorf("decode mode %q is not one of strict, warn, ignore", s)
}

func (m Mode) String() string {
	switch m {
	case Strict:
		return "strict"
	case Warn:
		return "warn"
	case Ignore:
		return "ignore"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// DecodeOptions say how to decode one input.
type DecodeOptions struct {
	// Source names the input in errors and warnings: a file path, a
	// ConfigMap and key.
	Source string
	Mode   Mode
	// AllowExperimental lets experimental versions decode.
	AllowExperimental bool
	// Into is the version to convert to; the hub when empty. The object
	// is always defaulted in its source version first.
	Into schema.GroupVersion
	// AnyKind accepts every kind registered in the codec's group, not
	// only the codec's Kind (for sets of manifests).
	AnyKind bool
	// Inherit, when set, is the apiVersion and kind of a document that
	// names neither (a drop-in that means the main file's kind); one
	// that names either must name both. The document is decoded as
	// written otherwise: its duplicate fields, its other documents.
	Inherit schema.GroupVersionKind
	// Filter, when set, is given each document as JSON before it is
	// decoded as the kind (each item of a List, not the List), and what
	// it returns is decoded in its place (and is the Document's JSON).
	Filter func(json []byte) []byte

	// aliases, when set, is the input's limit on what its documents'
	// YAML aliases expand to, shared by its documents.
	aliases *yamljson.Budget
}

// Document is one decoded document.
type Document struct {
	Source   string
	Document int // 1-based position in a multi-document input, 0 if alone
	Item     int // 1-based position in a v1 List, 0 if not in one
	// GVK is the group, version and kind as written.
	GVK schema.GroupVersionKind
	// JSON is the document as written, as JSON: no defaults, no
	// conversion; of a member given twice (warn and ignore modes), the
	// last, whole, as in YAML. It is what the raw layer of a file is made
	// of, and what Object is decoded from.
	JSON []byte
	// Object is the decoded object: defaulted in GVK's version, then
	// converted to DecodeOptions.Into (the hub by default).
	Object   runtime.Object
	Warnings []Warning
}

// Decode decodes an input that holds exactly one document of the codec's
// kind: YAML or JSON, defaulted, converted to opts.Into (the hub when
// empty). Every error is an *Error naming opts.Source, the document and the
// field path, and matching one of the sentinel errors with errors.Is.
// Decode never panics on any input.
func (k *Kind) Decode(data []byte, opts DecodeOptions) (*Document, error) {
	if err := k.checkInput(data, opts); err != nil {
		return nil, err
	}
	if !hasDocumentSeparator(data) {
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, &Error{Source: opts.Source, Kind: ErrEmpty, Details: []string{"the input is empty: it must hold a " + k.cfg.Kind}}
		}
		docs, err := k.decodeDocument(data, 0, opts)
		if err != nil {
			return nil, err
		}
		if len(docs) != 1 {
			return nil, &Error{Source: opts.Source, Kind: ErrSyntax, Details: []string{fmt.Sprintf("holds %d objects in a List; exactly one %s is expected", len(docs), k.cfg.Kind)}}
		}
		return docs[0], nil
	}
	docs, err := k.DecodeAll(data, opts)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, &Error{Source: opts.Source, Kind: ErrSyntax, Details: []string{fmt.Sprintf("holds %d documents; exactly one %s is expected", len(docs), k.cfg.Kind)}}
	}
	return docs[0], nil
}

// DecodeAll decodes every document of a multi-document YAML input, and
// every item of a v1 List, in order. Empty documents are skipped; an input
// with no document at all is an error. The first error stops decoding.
func (k *Kind) DecodeAll(data []byte, opts DecodeOptions) ([]*Document, error) {
	if err := k.checkInput(data, opts); err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*Document
	opts.aliases = yamljson.NewBudget(maxExpansion * k.maxBytes) // for the input: many documents are not many times it
	for n := 1; ; n++ {
		raw, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &Error{Source: opts.Source, Document: n, Kind: ErrSyntax, Details: []string{err.Error()}}
		}
		if isEmptyDocument(raw) {
			continue
		}
		docs, err := k.decodeDocument(raw, n, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
	}
	if len(out) == 0 {
		return nil, &Error{Source: opts.Source, Kind: ErrEmpty, Details: []string{"the input holds no document"}}
	}
	if len(out) == 1 && out[0].Document == 1 {
		out[0].Document = 0
		for i := range out[0].Warnings {
			out[0].Warnings[i].Document = 0
		}
	}
	return out, nil
}

// checkInput refuses an input over the size limit or not UTF-8.
func (k *Kind) checkInput(data []byte, opts DecodeOptions) error {
	if len(data) > k.maxBytes {
		return &Error{Source: opts.Source, Kind: ErrTooLarge, Details: []string{
			fmt.Sprintf("the input is %d bytes, over the limit of %d bytes", len(data), k.maxBytes)}}
	}
	if msg := invalidUTF8(data); msg != "" {
		return &Error{Source: opts.Source, Kind: ErrSyntax, Details: []string{msg}}
	}
	return nil
}

// decodeDocument decodes one YAML or JSON document, expanding a v1 List.
func (k *Kind) decodeDocument(raw []byte, n int, opts DecodeOptions) ([]*Document, error) {
	j, warnings, err := k.toJSON(raw, n, opts)
	if err != nil {
		return nil, err
	}
	doc, err := k.decodeJSON(j, n, 0, opts)
	if err == nil {
		doc.Warnings = append(warnings, doc.Warnings...)
		return []*Document{doc}, nil
	}
	var de *Error
	if !errors.As(err, &de) || de.Kind != ErrUnknownType {
		return nil, err
	}
	items, ok, lerr := listItems(j)
	if !ok {
		return nil, err
	}
	if lerr != nil {
		return nil, &Error{Source: opts.Source, Document: n, Kind: ErrSyntax, Details: []string{lerr.Error()}}
	}
	// The wrapper is decoded as strictly as what it holds: a JSON List
	// naming items twice, or a member a List has not, is what
	// apimachinery's strict decoder refuses.
	var list struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ListMeta   `json:"metadata"`
		Items      []json.RawMessage `json:"items"`
	}
	if strict, _ := kjson.UnmarshalStrict(j, &list, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields); len(strict) > 0 && opts.Mode != Ignore {
		var msgs []string
		for _, e := range strict {
			msgs = append(msgs, "the List: "+e.Error())
		}
		if opts.Mode == Strict {
			return nil, &Error{Source: opts.Source, Document: n, Kind: ErrStrict, Details: msgs}
		}
		for _, m := range msgs {
			warnings = append(warnings, Warning{Source: opts.Source, Document: n, Message: m})
		}
	}
	out := make([]*Document, 0, len(items))
	for i, item := range items {
		d, err := k.decodeJSON(item, n, i+1, opts)
		if err != nil {
			var ie *Error
			if errors.As(err, &ie) && ie.Kind == ErrUnknownType {
				if _, nested, _ := listItems(item); nested {
					return nil, &Error{Source: opts.Source, Document: n, Item: i + 1, Kind: ErrSyntax, Details: []string{"a List may not hold another List"}}
				}
			}
			return nil, err
		}
		out = append(out, d)
	}
	if len(out) > 0 {
		out[0].Warnings = append(warnings, out[0].Warnings...)
	}
	return out, nil
}

// maxExpansion bounds how much larger than the size limit a document may
// grow when its YAML aliases are expanded.
const maxExpansion = 4

var yamlDuplicate = regexp.MustCompile(`line (\d+): key "((?:[^"\\]|\\.)*)" already set in map`)

// toJSON turns one YAML or JSON document into JSON. Duplicate keys are an
// error in strict mode and warnings in warn mode. A document that starts
// with '{' and is not JSON is read as YAML in flow style (JSON is YAML
// too); if it is not that either, the error is JSON's.
func (k *Kind) toJSON(raw []byte, n int, opts DecodeOptions) ([]byte, []Warning, error) {
	fail := func(kind error, msg string) ([]byte, []Warning, error) {
		return nil, nil, &Error{Source: opts.Source, Document: n, Kind: kind, Details: []string{msg}}
	}
	j, warnings := raw, []Warning(nil)
	if looksJSON := utilyaml.IsJSONBuffer(raw); !looksJSON || !json.Valid(raw) {
		var err error
		j, warnings, err = k.yamlToJSON(raw, n, opts)
		if looksJSON && errors.Is(err, ErrSyntax) {
			return fail(ErrSyntax, jsonMessage(raw))
		}
		if err != nil {
			return nil, nil, err
		}
	} else if opts.Mode != Strict { // strict: the strict decoder refuses a member given twice
		if twice := duplicates(raw); len(twice) > 0 {
			// The last wins whole, as in a YAML document (yamlToJSON);
			// the decoder would read the others (a value it refuses, two
			// objects merged into one struct).
			j = lastGiven(raw)
			if opts.Mode == Warn {
				for _, m := range twice {
					warnings = append(warnings, Warning{Source: opts.Source, Document: n, Message: m})
				}
			}
		}
	}
	t := bytes.TrimSpace(j)
	switch {
	case len(t) == 0 || string(t) == "null":
		return fail(ErrEmpty, "the document is empty: it must hold a "+k.cfg.Kind)
	case t[0] != '{':
		return fail(ErrSyntax, "the document is not an object with apiVersion and kind")
	}
	return j, warnings, nil
}

// jsonMessage says where a document that is not JSON goes wrong.
func jsonMessage(raw []byte) string {
	err := json.Unmarshal(raw, new(any))
	var se *json.SyntaxError
	if !errors.As(err, &se) || se.Offset < 1 || se.Offset > int64(len(raw)) {
		return "not valid JSON"
	}
	before := raw[:se.Offset-1] // the byte at fault is the last read
	line, col := 1+bytes.Count(before, []byte("\n")), len(before)-bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("not valid JSON: line %d, column %d: %v", line, col, se)
}

// yamlToJSON is toJSON of a YAML document.
func (k *Kind) yamlToJSON(raw []byte, n int, opts DecodeOptions) ([]byte, []Warning, error) {
	fail := func(kind error, msg string) ([]byte, []Warning, error) {
		return nil, nil, &Error{Source: opts.Source, Document: n, Kind: kind, Details: []string{msg}}
	}
	var warnings []Warning
	if (bytes.HasPrefix(raw, []byte("...")) || bytes.Contains(raw, []byte("\n..."))) && !yamljson.Single(raw) {
		return fail(ErrSyntax, "a document follows a line '...', which ends the one before: exactly one "+k.cfg.Kind+" is expected in a document")
	}
	aliases := opts.aliases
	if aliases == nil {
		aliases = yamljson.NewBudget(maxExpansion * k.maxBytes)
	}
	err := aliases.Check(raw)
	switch {
	case errors.Is(err, yamljson.ErrUnbounded):
		return fail(ErrSyntax, "not valid YAML, and so its aliases cannot be bounded: "+strings.TrimPrefix(err.Error(), yamljson.ErrUnbounded.Error()+": "))
	case err != nil:
		return fail(ErrAliases, "the YAML document is an alias bomb: "+strings.TrimPrefix(err.Error(), ErrAliases.Error()+": "))
	}
	j, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		lenient, lerr := yaml.YAMLToJSON(raw)
		if lerr != nil {
			if msg := nonFiniteField(raw); msg != "" {
				return fail(ErrInvalid, msg)
			}
			return fail(yamlErrorKind(lerr), yamlMessage(lerr))
		}
		j = lenient
		// A file of a million duplicate keys is described, not
		// listed: the first few, then how many more.
		dups := yamlDuplicate.FindAllStringSubmatch(err.Error(), text.MaxListed-1)
		if len(dups) == 0 {
			return fail(ErrSyntax, yamlMessage(err))
		}
		var msgs []string
		for _, d := range dups {
			msgs = append(msgs, fmt.Sprintf("duplicate field %q (line %s)", d[2], d[1]))
		}
		if more := strings.Count(err.Error(), "already set in map") - len(dups); more > 0 {
			msgs = append(msgs, fmt.Sprintf("%d more duplicate fields", more))
		}
		switch opts.Mode {
		case Strict:
			return nil, nil, &Error{Source: opts.Source, Document: n, Kind: ErrStrict, Details: msgs}
		case Warn:
			for _, m := range msgs {
				warnings = append(warnings, Warning{Source: opts.Source, Document: n, Message: m})
			}
		}
	}
	if len(j) > maxExpansion*k.maxBytes {
		return fail(ErrAliases, fmt.Sprintf("the document expands to %d bytes of JSON, over %d times the size limit: refusing a YAML alias bomb", len(j), maxExpansion))
	}
	return j, warnings, nil
}

func yamlErrorKind(err error) error {
	if strings.Contains(err.Error(), "excessive aliasing") {
		return ErrAliases
	}
	return ErrSyntax
}

func yamlMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	if strings.Contains(msg, "excessive aliasing") {
		return "the YAML document uses its aliases too often (an alias bomb): " + msg
	}
	return "not valid YAML: " + msg
}

func (k *Kind) decodeJSON(j []byte, n, item int, opts DecodeOptions) (*Document, error) {
	fail := func(kind error, msgs ...string) (*Document, error) {
		return nil, &Error{Source: opts.Source, Document: n, Item: item, Kind: kind, Details: msgs}
	}
	if opts.Filter != nil {
		j = opts.Filter(j)
	}
	d := k.lenient.UniversalDeserializer()
	if opts.Mode != Ignore {
		d = k.strict.UniversalDeserializer()
	}
	obj, gvk, err := d.Decode(j, nil, nil)
	if (runtime.IsMissingVersion(err) || runtime.IsMissingKind(err)) && gvk != nil && gvk.Empty() && !opts.Inherit.Empty() {
		obj, gvk, err = d.Decode(j, &opts.Inherit, nil)
	}
	if gvk != nil && gvk.Version == runtime.APIVersionInternal {
		return fail(ErrUnknownType, fmt.Sprintf("apiVersion %s is the in-memory version, never written down; use one of %s", gvk.GroupVersion(), k.knownVersions()))
	}
	var strictErrs []error
	if err != nil {
		if se, ok := runtime.AsStrictDecodingError(err); ok && obj != nil {
			strictErrs = se.Errors()
		} else {
			switch {
			case runtime.IsMissingVersion(err):
				return fail(ErrTypeMeta, fmt.Sprintf("the document has no apiVersion: set apiVersion to one of %s", k.knownVersions()))
			case runtime.IsMissingKind(err):
				return fail(ErrTypeMeta, fmt.Sprintf("the document has no kind: set kind to %s", k.cfg.Kind))
			case runtime.IsNotRegisteredError(err) && gvk != nil:
				return nil, k.unknownType(*gvk, n, item, opts)
			case gvk != nil:
				if msg := k.unmarshalerField(j, *gvk); msg != "" {
					return fail(ErrInvalid, msg)
				}
			}
			return fail(ErrInvalid, fieldMessage(err, j))
		}
	}
	if gvk == nil {
		return fail(ErrTypeMeta, "the document has no apiVersion or kind")
	}
	if err := k.checkType(*gvk, n, item, opts); err != nil {
		return nil, err
	}
	obj, err = k.defaultAndConvert(obj, gvk.GroupVersion(), opts.Into)
	if err != nil {
		return fail(ErrInvalid, err.Error())
	}
	doc := &Document{Source: opts.Source, Document: n, Item: item, GVK: *gvk, JSON: j, Object: obj}
	if v := k.versions[gvk.Version]; v != nil && v.Lifecycle == Deprecated {
		doc.Warnings = append(doc.Warnings, Warning{Source: opts.Source, Document: n, Item: item,
			Message: k.lifecycleMessage(v, "is deprecated")})
	}
	if v := k.versions[gvk.Version]; v != nil {
		for _, f := range v.Fields {
			if f.Lifecycle == Deprecated && sets(j, f.Key) {
				doc.Warnings = append(doc.Warnings, Warning{Source: opts.Source, Document: n, Item: item, Message: f.String()})
			}
		}
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
			if name, ok := strings.CutPrefix(msgs[i], "unknown field "); ok {
				if name, err := strconv.Unquote(name); err == nil {
					if f := k.removedNamed(gvk.Version, name); f != nil {
						msgs[i] = f.String()
					}
				}
			}
		}
		if opts.Mode == Strict {
			return fail(ErrStrict, msgs...)
		}
		for _, m := range msgs {
			doc.Warnings = append(doc.Warnings, Warning{Source: opts.Source, Document: n, Item: item, Message: m})
		}
	}
	return doc, nil
}

// duplicates returns what a JSON document gives twice, each as strict
// decoding says it.
func duplicates(j []byte) []string {
	strict, err := kjson.UnmarshalStrict(j, new(any), kjson.DisallowDuplicateFields)
	if err != nil {
		return nil
	}
	out := make([]string, len(strict))
	for i, e := range strict {
		out[i] = e.Error()
	}
	return out
}

// lastGiven returns a JSON document that gives a member twice with each
// member once, the last given, which the Document's Object is decoded
// from. Numbers keep their text.
func lastGiven(j []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return j
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if e.Encode(v) != nil {
		return j
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// defaultAndConvert defaults obj in its version from, then converts it to
// into (the hub when empty). apimachinery converts between two external
// versions only through a function registered for that pair, so a
// conversion between external versions goes through the hub.
func (k *Kind) defaultAndConvert(obj runtime.Object, from, into schema.GroupVersion) (out runtime.Object, err error) {
	defer func() {
		// A defaulter or a conversion that panics (kubelet's defaulter
		// does, on a feature gate it cannot set) fails the decode of
		// this input, with its name, instead of the process.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("defaulting or converting %s panicked: %v", from, r)
		}
	}()
	k.scheme.Default(obj)
	if into.Empty() {
		into = k.hub
	}
	if from == into {
		return obj, nil
	}
	return k.convert(obj, from, into)
}

// convert converts obj from version from to version into through the hub.
func (k *Kind) convert(obj runtime.Object, from, into schema.GroupVersion) (runtime.Object, error) {
	if from != k.hub {
		hub, err := k.scheme.ConvertToVersion(obj, k.hub)
		if err != nil {
			return nil, fmt.Errorf("converting %s to %s: %w", from, k.hub, err)
		}
		obj = hub
	}
	if into == k.hub {
		return obj, nil
	}
	out, err := k.scheme.ConvertToVersion(obj, into)
	if err != nil {
		return nil, fmt.Errorf("converting %s to %s: %w", k.hub, into, err)
	}
	return out, nil
}

// checkType enforces the kind and the version lifecycle.
func (k *Kind) checkType(gvk schema.GroupVersionKind, n, item int, opts DecodeOptions) error {
	fail := func(kind error, msg string) error {
		return &Error{Source: opts.Source, Document: n, Item: item, Kind: kind, Details: []string{msg}}
	}
	if gvk.Group != k.cfg.Group {
		return k.unknownType(gvk, n, item, opts)
	}
	if !opts.AnyKind && gvk.Kind != k.cfg.Kind {
		return fail(ErrUnknownType, fmt.Sprintf("kind is %s, want %s", gvk.Kind, k.cfg.Kind))
	}
	v := k.versions[gvk.Version]
	if v != nil && v.Lifecycle == Experimental && !opts.AllowExperimental {
		return fail(ErrExperimentalVersion, fmt.Sprintf("apiVersion %s is experimental and may change or go away without notice; opt in to use it, or use %s",
			gvk.GroupVersion(), k.replacement(v)))
	}
	return nil
}

func (k *Kind) unknownType(gvk schema.GroupVersionKind, n, item int, opts DecodeOptions) error {
	e := &Error{Source: opts.Source, Document: n, Item: item, Kind: ErrUnknownType}
	v := k.versions[gvk.Version]
	switch {
	case gvk.Group == k.cfg.Group && v != nil && v.Lifecycle == Removed:
		e.Kind = ErrRemovedVersion
		e.Details = []string{k.lifecycleMessage(v, "was removed")}
	case gvk.Group == k.cfg.Group && v == nil:
		e.Details = []string{fmt.Sprintf("apiVersion %s is not known; use one of %s", gvk.GroupVersion(), k.knownVersions())}
	case gvk.Group != k.cfg.Group:
		e.Details = []string{fmt.Sprintf("apiVersion %s is not in group %s; use one of %s", gvk.GroupVersion(), k.cfg.Group, k.knownVersions())}
	case opts.AnyKind:
		e.Details = []string{fmt.Sprintf("kind %s is not known in %s; want one of %s", gvk.Kind, gvk.GroupVersion(), k.kindsIn(gvk.GroupVersion()))}
	default:
		e.Details = []string{fmt.Sprintf("kind %s is not known in %s; want %s", gvk.Kind, gvk.GroupVersion(), k.cfg.Kind)}
	}
	return e
}

// kindsIn lists the kinds registered in gv, sorted, but List kinds and
// the meta kinds every group version carries.
func (k *Kind) kindsIn(gv schema.GroupVersion) string {
	var kinds []string
	for k := range k.scheme.KnownTypes(gv) {
		if !strings.HasSuffix(k, "List") && !strings.HasSuffix(k, "Options") && k != "WatchEvent" && k != "Status" {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return strings.Join(kinds, ", ")
}

func (k *Kind) replacement(v *Version) string {
	if v.Replacement != "" {
		return k.cfg.Group + "/" + v.Replacement
	}
	return k.Preferred().String()
}

func (k *Kind) lifecycleMessage(v *Version, what string) string {
	msg := fmt.Sprintf("apiVersion %s/%s %s", k.cfg.Group, v.Version, what)
	if v.Release != "" {
		msg += " in " + v.Release
	}
	msg += "; use " + k.replacement(v)
	if v.Migrate != "" {
		msg += ": to migrate, run " + v.Migrate
	}
	return msg
}

// fieldMessage turns a decoding error of the JSON document j into a
// message that names the field. A number too large for its field is named
// as one, whether JSON holds it as a number or (beyond float64, where
// YAML gives up on it) as a string.
func fieldMessage(err error, j []byte) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return err.Error()
	}
	if msg := numberMessage(te, j); msg != "" {
		return fmt.Sprintf("field %s: %s", te.Field, msg)
	}
	return fmt.Sprintf("field %s: %s is not a valid %s", te.Field, te.Value, te.Type)
}

// numberMessage says what is wrong with a number te refused: out of the
// range of its Go type, or not an integer. It returns "" when te is about
// something else.
func numberMessage(te *json.UnmarshalTypeError, j []byte) string {
	var kind reflect.Kind
	if te.Type != nil {
		kind = te.Type.Kind()
	}
	isInt := kind >= reflect.Int && kind <= reflect.Uint64
	if !isInt && kind != reflect.Float32 && kind != reflect.Float64 {
		return ""
	}
	var lit string
	switch {
	case strings.HasPrefix(te.Value, "number "):
		lit = strings.TrimPrefix(te.Value, "number ")
	case te.Value == "string":
		s, ok := stringAt(j, strings.Split(te.Field, "."))
		if !ok {
			return ""
		}
		if _, err := strconv.ParseFloat(s, 64); !errors.Is(err, strconv.ErrRange) {
			return ""
		}
		lit = s
	default:
		return ""
	}
	shown := text.Cut(lit, text.MaxQuoted)
	if isInt {
		f, err := strconv.ParseFloat(lit, 64)
		switch {
		case err == nil && f != math.Trunc(f):
			return fmt.Sprintf("%s is not an integer (%s)", shown, te.Type)
		case err == nil && fitsInt(f, te.Type):
			return fmt.Sprintf("%s is not written as an integer (%s)", shown, te.Type)
		}
	}
	return fmt.Sprintf("%s is out of range for %s", shown, te.Type)
}

// fitsInt reports whether the integral f lies within the range of the
// integer type t.
func fitsInt(f float64, t reflect.Type) bool {
	bits := t.Bits()
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		return f >= 0 && f < math.Ldexp(1, bits)
	}
	return f >= -math.Ldexp(1, bits-1) && f < math.Ldexp(1, bits-1)
}

// stringAt returns the string at the path of object keys in the JSON
// document j.
func stringAt(j []byte, path []string) (string, bool) {
	var v any
	if json.Unmarshal(j, &v) != nil {
		return "", false
	}
	for _, seg := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = m[seg]; !ok {
			return "", false
		}
	}
	s, ok := v.(string)
	return s, ok
}

// listItems reports whether j is a v1 List and returns its items.
func listItems(j []byte) ([]json.RawMessage, bool, error) {
	var l struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(j, &l); err != nil {
		return nil, false, nil
	}
	if l.APIVersion != "v1" || l.Kind != "List" {
		return nil, false, nil
	}
	for i, it := range l.Items {
		if t := bytes.TrimSpace(it); len(t) == 0 || t[0] != '{' {
			return nil, true, fmt.Errorf("item %d of the List is not an object", i+1)
		}
	}
	return l.Items, true, nil
}

// hasDocumentSeparator reports whether data may hold several YAML documents.
func hasDocumentSeparator(data []byte) bool {
	return bytes.HasPrefix(data, []byte("---")) || bytes.Contains(data, []byte("\n---"))
}

func isEmptyDocument(raw []byte) bool {
	for _, line := range bytes.Split(raw, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) {
			return false
		}
	}
	return true
}

// sets reports whether the JSON document j sets key, a JSON pointer of
// object members.
func sets(j []byte, key string) bool {
	segs, ok := merge.Segments(key)
	if !ok {
		return false
	}
	for _, seg := range segs {
		var m map[string]json.RawMessage
		if json.Unmarshal(j, &m) != nil {
			return false
		}
		if j, ok = m[seg]; !ok {
			return false
		}
	}
	return true
}

// removedNamed returns the removed field of version v that the decoder
// names name ("clientConnection.insecure"), or nil.
func (k *Kind) removedNamed(v, name string) *Field {
	ver := k.versions[v]
	if ver == nil {
		return nil
	}
	for i, f := range ver.Fields {
		if f.Lifecycle == Removed && dotted(f.Key) == name {
			return &ver.Fields[i]
		}
	}
	return nil
}
