package namespaced

import (
	"context"
	"fmt"
	"hash/maphash"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	legacy "k8s.io/client-go/tools/record"

	"github.com/stratacfg/strata/internal/text"
)

// Event reasons.
const (
	// ReasonInvalidConfiguration is the reason of the Warning Event on a
	// ConfigMap that was refused (cluster) or ignored (selector,
	// namespace) because it is invalid.
	ReasonInvalidConfiguration = "InvalidConfiguration"
	// ReasonKeysRefused is the reason of the Warning Event on a namespace
	// or selector ConfigMap some of whose keys the tenant policy refused:
	// its note names each key and why, so that a tenant who can read the
	// Events of their namespace learns it without asking the operator.
	ReasonKeysRefused = "KeysRefused"
	// ReasonContestedKeys is the reason of the Warning Event on each
	// selector ConfigMap that sets a key another selector ConfigMap as
	// specific sets otherwise, where both apply: its note names the keys,
	// the values and which wins.
	ReasonContestedKeys = "ContestedKeys"
)

// maxNote bounds the text of an Event: events.k8s.io/v1 refuses a note of
// more than 1 kB, and an invalid tenant value must not be echoed whole
// into every Event.
const maxNote = 1024

// eventSink records a Warning Event about a ConfigMap.
type eventSink interface {
	warn(cm *corev1.ConfigMap, reason, action, note string)
}

// newEventSink returns the sink of o's recorder, or nil when it has none.
func newEventSink[T any](o *Options[T]) eventSink {
	switch {
	case o.EventRecorder != nil:
		return eventsV1{o.EventRecorder}
	case o.Recorder != nil:
		return legacySink{o.Recorder}
	}
	return nil
}

// events returns the sink of the options' recorder or, with none, of a
// recorder writing through client, and how to stop it; with neither, no
// sink.
func (c *core[T]) events(ctx context.Context, client kubernetes.Interface) (eventSink, func(), error) {
	if s := newEventSink(&c.o); s != nil || client == nil || c.o.NoEvents {
		return s, func() {}, nil
	}
	return startEvents(ctx, client, c.eventController())
}

// startEvents starts a recorder that writes events.k8s.io/v1 Events
// through client, and returns its sink and how to stop it.
func startEvents(ctx context.Context, client kubernetes.Interface, controller string) (eventSink, func(), error) {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, nil, fmt.Errorf("namespaced: recording events: %w", err)
	}
	return eventsV1{b.NewRecorder(clientgoscheme.Scheme, controller)}, b.Shutdown, nil
}

type eventsV1 struct{ r events.EventRecorder }

func (s eventsV1) warn(cm *corev1.ConfigMap, reason, action, note string) {
	s.r.Eventf(cm, nil, corev1.EventTypeWarning, reason, action, "%s", text.Cut(note, maxNote))
}

type legacySink struct{ r legacy.EventRecorder }

func (s legacySink) warn(cm *corev1.ConfigMap, reason, _, note string) {
	s.r.Eventf(cm, corev1.EventTypeWarning, reason, "%s", text.Cut(note, maxNote))
}

// reportTable remembers, lossily and without locking, the ConfigMap
// versions already reported, so that a resolver with no cache (Direct)
// does not record the same Event on every request. A slot holds one
// ConfigMap's last reported version; each ConfigMap has two, and takes
// the second unless another's is there, so that two ConfigMaps whose
// first slots meet both stay; a collision only reports again.
type reportTable struct {
	seed  maphash.Seed
	slots [256]atomic.Pointer[string]
}

func newReportTable() *reportTable { return &reportTable{seed: maphash.MakeSeed()} }

// first reports whether the ConfigMap id (kind, namespace and name) is
// seen in version for the first time, and remembers it.
func (t *reportTable) first(id, version string) bool {
	h := maphash.String(t.seed, id)
	a, b := &t.slots[h%256], &t.slots[h>>8%256]
	v := id + "@" + version
	pa, pb := a.Load(), b.Load()
	if pa != nil && *pa == v || pb != nil && *pb == v {
		return false
	}
	if pb == nil || strings.HasPrefix(*pb, id+"@") {
		a = b
	}
	a.Store(&v)
	return true
}

// ignored reports one ignored layer: a log line, a metric and, through
// events when set, a Warning Event on its ConfigMap. The mistake is the
// tenant's (or a selector ConfigMap's author's), not the controller's:
// the line is informational, the Event is the warning.
func (c *core[T]) ignored(events eventSink, ig ignoredLayer) {
	c.log.Info("Ignoring an invalid ConfigMap", "configMap", ig.cm.Namespace+"/"+ig.cm.Name, "kind", ig.origin, "reason", ig.err.Err.Error())
	c.m.invalid.WithLabelValues(ig.origin).Inc()
	if events != nil {
		events.warn(ig.cm, ReasonInvalidConfiguration, "Merge", "Ignored as a whole: "+ig.err.Err.Error())
	}
}

// refused reports a cluster ConfigMap that was not applied.
func (c *core[T]) refused(events eventSink, cm *corev1.ConfigMap, err error) {
	c.log.Error(err, "Refused an invalid ConfigMap; the last good configuration stays")
	c.m.invalid.WithLabelValues(OriginCluster).Inc()
	if cm != nil && events != nil {
		events.warn(cm, ReasonInvalidConfiguration, "Apply", "Not applied, the last good configuration stays: "+err.Error())
	}
}

// notesSeen are the contest notes reported of one version of a selector
// ConfigMap.
type notesSeen struct {
	version string
	notes   map[string]bool
}

// maxNotesSeen bounds the notes kept, and reported, of one version of a
// selector ConfigMap.
const maxNotesSeen = 64

// report surfaces each layer rec's namespace ignored, and the keys
// refused of each ConfigMap, once per resourceVersion: a log line, a
// metric and a Warning Event. A selector ConfigMap's refusals are the
// same in every namespace it applies to: one Event. Each contest a
// selector ConfigMap takes part in is an Event on it, once per note.
// s.mu is held.
func (s *state[T]) report(rec *record[T], ignored []ignoredLayer, refused []refusal, contested []refusal) {
	for _, r := range contested {
		// Selectors meet in different sets in different namespaces: each
		// note once per version of the ConfigMap.
		id := r.cm.Namespace + "/" + r.cm.Name
		seen := s.contestsReported[id]
		if seen == nil || seen.version != r.cm.ResourceVersion {
			seen = &notesSeen{version: r.cm.ResourceVersion, notes: map[string]bool{}}
			s.contestsReported[id] = seen
		}
		if seen.notes[r.note] || len(seen.notes) >= maxNotesSeen {
			continue
		}
		seen.notes[r.note] = true
		s.c.log.Info("Selector layers as specific as each other disagree", "configMap", r.cm.Namespace+"/"+r.cm.Name, "note", r.note)
		if s.events != nil {
			s.events.warn(r.cm, ReasonContestedKeys, "Merge", r.note)
		}
	}
	first := func(seen map[string]string, id string, cm *corev1.ConfigMap) bool {
		if seen[id] == cm.ResourceVersion {
			return false
		}
		seen[id] = cm.ResourceVersion
		return true
	}
	if rec.reported == nil && len(ignored)+len(refused) > 0 {
		rec.reported = map[string]string{}
	}
	for _, ig := range ignored {
		if first(rec.reported, ig.origin+":"+ig.cm.Namespace+"/"+ig.cm.Name, ig.cm) {
			s.c.ignored(s.events, ig)
		}
	}
	for _, r := range refused {
		seen := rec.reported
		if r.cm.Namespace == s.c.o.Namespace {
			seen = s.selReported
		}
		if first(seen, "refused:"+r.cm.Namespace+"/"+r.cm.Name, r.cm) && s.events != nil {
			s.events.warn(r.cm, ReasonKeysRefused, "Merge", r.note)
		}
	}
}
