package scheme

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stratacfg/strata/internal/files"
	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/internal/yamljson"
)

// Sentinel errors, for errors.Is on what Decode returns.
var (
	// ErrTooLarge: the input is over the size limit. It is
	// watch.ErrTooLarge too: one error wherever strata reads.
	ErrTooLarge = files.ErrTooLarge
	// ErrAliases: a YAML document expands its aliases too far (an alias
	// bomb), refused before anything expands.
	ErrAliases = yamljson.ErrAliases
	// ErrSyntax: the input is not YAML or JSON, or not an object.
	ErrSyntax = errors.New("not a YAML or JSON object")
	// ErrEmpty: there is no document.
	ErrEmpty = errors.New("no document")
	// ErrTypeMeta: a document lacks apiVersion or kind.
	ErrTypeMeta = errors.New("missing apiVersion or kind")
	// ErrUnknownType: the apiVersion or kind is not one this codec knows.
	ErrUnknownType = errors.New("unknown apiVersion or kind")
	// ErrRemovedVersion: the version was removed; the message says how to
	// migrate.
	ErrRemovedVersion = errors.New("removed version")
	// ErrExperimentalVersion: the version is experimental and the caller
	// did not opt in.
	ErrExperimentalVersion = errors.New("experimental version")
	// ErrStrict: an unknown or duplicate field in strict mode.
	ErrStrict = errors.New("strict decoding error")
	// ErrInvalid: a field has a value of the wrong type or shape.
	ErrInvalid = errors.New("invalid value")
)

// Error is a decoding error with where it happened. Kind is one of the
// sentinel errors above; errors.Is matches it.
type Error struct {
	// Source names the input: a file path or a ConfigMap key.
	Source string
	// Document is the 1-based position of the YAML document in a
	// multi-document input, 0 when the input has one document.
	Document int
	// Item is the 1-based position in a v1 List, 0 when not in a List.
	Item int
	Kind error
	// Details are the messages, one per problem, each naming the field
	// path where there is one.
	Details []string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.where())
	if len(e.Details) == 0 {
		b.WriteString(e.Kind.Error())
	}
	b.WriteString(text.Join(e.Details, "; "))
	return b.String()
}

func (e *Error) where() string {
	var parts []string
	if e.Source != "" {
		parts = append(parts, e.Source)
	}
	if e.Document > 0 {
		parts = append(parts, fmt.Sprintf("document %d", e.Document))
	}
	if e.Item > 0 {
		parts = append(parts, fmt.Sprintf("List item %d", e.Item))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ": ") + ": "
}

// Is reports whether target is e's Kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Warning is a problem that did not stop decoding: an unknown or duplicate
// field in warn mode, a deprecated version.
type Warning struct {
	Source   string
	Document int
	Item     int
	Message  string
}

func (w Warning) String() string {
	e := Error{Source: w.Source, Document: w.Document, Item: w.Item}
	return e.where() + w.Message
}
