// Command schemagen writes the JSON Schema of every version of the example
// component's configuration into the directory it is given, for editors
// and CI: make generate runs it (hack/codegen.sh), and a test checks that
// the committed schemas are current.
//
//	go run ./examples/component/cmd/schemagen examples/component/schemas
package main

import (
	"fmt"
	"os"

	configscheme "github.com/stratacfg/strata/examples/component/apis/config/scheme"
	"github.com/stratacfg/strata/scheme/jsonschema"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: schemagen DIR")
		os.Exit(2)
	}
	kind, err := configscheme.NewKind()
	if err == nil {
		_, err = jsonschema.Write(kind, os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}
