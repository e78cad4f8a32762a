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
func (k *Kind) Encode(obj runtime.Object, gv schema.GroupVersion, format Format) ([]byte, error) {
	if v := k.versions[gv.Version]; gv.Group != k.cfg.Group || v == nil || v.Lifecycle == Removed {
		return nil, fmt.Errorf("cannot encode to %s: use one of %s", gv, k.knownVersions())
	}
	media := "application/yaml"
	if format == JSON {
		media = "application/json"
	}
	info, ok := runtime.SerializerInfoForMediaType(k.lenient.SupportedMediaTypes(), media)
	if !ok {
		return nil, fmt.Errorf("no serializer for %s", media)
	}
	s := info.Serializer
	if format == JSON && info.PrettySerializer != nil {
		s = info.PrettySerializer
	}
	var buf bytes.Buffer
	if err := k.lenient.EncoderForVersion(s, gv).Encode(obj, &buf); err != nil {
		return nil, fmt.Errorf("encoding %s as %s: %w", k.cfg.Kind, gv, err)
	}
	return buf.Bytes(), nil
}

// ConvertDocument converts a document, JSON written in version from, to
// version to, through the hub, without defaulting. Fields the document
// does not set stay unset wherever the types can say so; see layers for
// how partial documents are converted key by key. The result is a value
// of version to's type with its apiVersion and kind set.
func (k *Kind) ConvertDocument(doc []byte, from, to schema.GroupVersion) (runtime.Object, error) {
	src, err := k.New(from)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(doc, src); err != nil {
		return nil, fmt.Errorf("reading %s as %s: %w", k.cfg.Kind, from, err)
	}
	src.GetObjectKind().SetGroupVersionKind(from.WithKind(k.cfg.Kind))
	out, err := k.convert(src, from, to)
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", k.cfg.Kind, err)
	}
	out.GetObjectKind().SetGroupVersionKind(to.WithKind(k.cfg.Kind))
	return out, nil
}
