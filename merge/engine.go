package merge

import "github.com/stratacfg/strata/internal/mergeengine"

// The engine's hooks, for strata's own packages only; see mergeengine.
func init() {
	mergeengine.Register(mergeengine.Hooks[*Result, *Layer, Source]{
		Extend:   (*Result).extend,
		Fill:     (*Result).fill,
		FillFunc: (*Result).fillFunc,
		EachFrom: func(r *Result, n int, fn func(a, b any, key, value string) bool, a, b any) bool {
			stopped := false
			r.eachFrom(n, func(key, value string) bool {
				stopped = !fn(a, b, key, value)
				return !stopped
			})
			return stopped
		},
		Flat: (*Result).flat,
	})
}
