// Command schemagen writes the JSON Schema of every version of an example's
// configuration kind into the directory it is given, for editors and CI:
// make generate runs it (hack/codegen.sh), and a test checks that the
// committed schemas are current.
//
//	go run ./examples/component/cmd/schemagen component examples/component/schemas
//	go run ./examples/component/cmd/schemagen jobdefaults examples/controller/schemas
package main

import (
	"fmt"
	"os"

	configscheme "github.com/stratacfg/strata/examples/component/apis/config/scheme"
	"github.com/stratacfg/strata/examples/controller/apis/defaults/v1alpha1"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/scheme/jsonschema"
)

// kinds are the examples' kinds, by name.
var kinds = map[string]func() (*scheme.Kind, error){
	"component":   configscheme.NewKind,
	"jobdefaults": v1alpha1.NewKind,
}

func main() {
	if len(os.Args) != 3 || kinds[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: schemagen component|jobdefaults DIR")
		os.Exit(2)
	}
	kind, err := kinds[os.Args[1]]()
	if err == nil {
		_, err = jsonschema.Write(kind, os.Args[2])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}
