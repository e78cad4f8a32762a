package merge

import "github.com/stratacfg/strata/internal/mergeengine"

// The engine's hooks, for strata's own packages only; see mergeengine.
func init() {
	mergeengine.Register(mergeengine.Hooks[*Result, *Layer, Source]{
		Extend:   (*Result).extend,
		Fill:     (*Result).fill,
		FillFunc: (*Result).fillFunc,
		EachFrom: (*Result).eachFrom,
		Flat:     (*Result).flat,
	})
}
