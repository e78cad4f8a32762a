package merge

import (
	"maps"
	"strconv"
	"testing"
)

// TestEntryMap checks the list and the map an entryMap moves between
// against a plain map: puts, overwrites and deletes across fewEntries.
func TestEntryMap(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, 3, fewEntries, fewEntries + 1} {
		m := newEntryMap(size)
		want := map[string]entry{}
		check := func(step string) {
			t.Helper()
			got := maps.Collect(m.all())
			if !maps.Equal(got, want) || m.len() != len(want) {
				t.Fatalf("size %d, %s: holds %v (len %d), want %v", size, step, got, m.len(), want)
			}
			for k, e := range want {
				if g, ok := m.get(k); !ok || g != e {
					t.Fatalf("size %d, %s: get(%s) = %v, %v; want %v", size, step, k, g, ok, e)
				}
			}
			if _, ok := m.get("/absent"); ok {
				t.Fatalf("size %d, %s: found a key never put", size, step)
			}
		}
		for i := range 3 * fewEntries {
			k := "/k" + strconv.Itoa(i%(2*fewEntries))
			e := entry{value: strconv.Itoa(i), set: uint64(i)}
			m.put(k, e)
			want[k] = e
			check("put " + k)
			if i%5 == 4 {
				m.del(k)
				delete(want, k)
				check("del " + k)
			}
		}
		m.del("/absent")
		check("del of an absent key")
	}
}
