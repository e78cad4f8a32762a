package scheme

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Format is an output format for Encode.
type Format string

const (
	YAML Format = "yaml"
	JSON Format = "json"
)

// Encode converts obj (of any registered version, usually the hub) to the
// external version gv and serialises it with apiVersion and kind set. It
// does not default. It is the basis of --print-config and of migrating a
// file to a newer version.
func (c *Codec) Encode(obj runtime.Object, gv schema.GroupVersion, format Format) ([]byte, error) {
	if v := c.versions[gv.Version]; gv.Group != c.cfg.Group || v == nil || v.Lifecycle == Removed {
		return nil, fmt.Errorf("cannot encode to %s: use one of %s", gv, c.knownVersions())
	}
	media := "application/yaml"
	if format == JSON {
		media = "application/json"
	}
	info, ok := runtime.SerializerInfoForMediaType(c.lenient.SupportedMediaTypes(), media)
	if !ok {
		return nil, fmt.Errorf("no serializer for %s", media)
	}
	s := info.Serializer
	if format == JSON && info.PrettySerializer != nil {
		s = info.PrettySerializer
	}
	var buf bytes.Buffer
	if err := c.lenient.EncoderForVersion(s, gv).Encode(obj, &buf); err != nil {
		return nil, fmt.Errorf("encoding %s as %s: %w", c.cfg.Kind, gv, err)
	}
	return buf.Bytes(), nil
}

// ConvertJSON converts a document written in version from to version to,
// through the hub, without defaulting. Fields the document does not set
// stay unset wherever the types can say so; see layers for how partial
// documents are converted key by key. The result is JSON with apiVersion
// and kind of the target.
func (c *Codec) ConvertJSON(doc []byte, from, to schema.GroupVersion) ([]byte, error) {
	src, err := c.New(from)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(doc, src); err != nil {
		return nil, fmt.Errorf("reading %s as %s: %w", c.cfg.Kind, from, err)
	}
	src.GetObjectKind().SetGroupVersionKind(from.WithKind(c.cfg.Kind))
	out, err := c.convert(src, from, to)
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", c.cfg.Kind, err)
	}
	out.GetObjectKind().SetGroupVersionKind(to.WithKind(c.cfg.Kind))
	return json.Marshal(out)
}

// Default applies the scheme's defaulting functions to obj in place.
func (c *Codec) Default(obj runtime.Object) { c.scheme.Default(obj) }

// Convert converts in to the type of out, both registered in the scheme.
func (c *Codec) Convert(in, out runtime.Object) error { return c.scheme.Convert(in, out, nil) }
