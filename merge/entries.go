package merge

import (
	"iter"
	"slices"
)

// fewEntries is how many entries an entryMap keeps in a list before it
// moves them to a map.
const fewEntries = 8

// entryMap holds a Result's entries: in a short list while they are few,
// as when a merge is extended by the handful of keys of one namespace's
// ConfigMap, found by comparing keys; in a map beyond that.
type entryMap struct {
	few  []keyedEntry
	many map[string]entry // nil while the entries are in few
}

type keyedEntry struct {
	key string
	e   entry
}

// newEntryMap returns an entryMap sized for n entries.
func newEntryMap(n int) entryMap {
	if n > fewEntries {
		return entryMap{many: make(map[string]entry, n)}
	}
	return entryMap{few: make([]keyedEntry, 0, n)}
}

func (m *entryMap) get(key string) (entry, bool) {
	if m.many != nil {
		e, ok := m.many[key]
		return e, ok
	}
	for i := range m.few {
		if m.few[i].key == key {
			return m.few[i].e, true
		}
	}
	return entry{}, false
}

func (m *entryMap) put(key string, e entry) {
	if m.many != nil {
		m.many[key] = e
		return
	}
	for i := range m.few {
		if m.few[i].key == key {
			m.few[i].e = e
			return
		}
	}
	if len(m.few) < fewEntries {
		m.few = append(m.few, keyedEntry{key, e})
		return
	}
	m.many = make(map[string]entry, 2*fewEntries)
	for _, ke := range m.few {
		m.many[ke.key] = ke.e
	}
	m.many[key] = e
	m.few = nil
}

func (m *entryMap) del(key string) {
	if m.many != nil {
		delete(m.many, key)
		return
	}
	if i := slices.IndexFunc(m.few, func(ke keyedEntry) bool { return ke.key == key }); i >= 0 {
		m.few = slices.Delete(m.few, i, i+1)
	}
}

func (m *entryMap) len() int {
	if m.many != nil {
		return len(m.many)
	}
	return len(m.few)
}

// all yields every entry, in no set order.
func (m *entryMap) all() iter.Seq2[string, entry] {
	return func(yield func(string, entry) bool) {
		if m.many != nil {
			for k, e := range m.many {
				if !yield(k, e) {
					return
				}
			}
			return
		}
		for _, ke := range m.few {
			if !yield(ke.key, ke.e) {
				return
			}
		}
	}
}
