// Command apisize prints, per package of the library, its non-test lines
// and its exported names (types, functions, methods of exported types,
// constants and variables), and four figures against their budgets and
// their ceilings below. It exits 1 when one of the four is above its
// ceiling, or below a ceiling that is above its budget, so that `make
// test` keeps them from growing and a change that lowers one lowers its
// ceiling with it; with -budgets (`make api`), also when one is above its
// budget. It runs from the repository's root.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The budgets (issue 31): the namespaced package and its concurrency core
// (the files that read ConfigMaps, follow them, cache and publish), and
// the library's exported names.
const (
	namespacedLines    = 3600
	namespacedCore     = 1300
	namespacedExported = 50
	libraryExported    = 360
)

// The ceilings: the figures as they stand, which no change may raise while
// they are above their budgets. A change that lowers a figure lowers its
// ceiling with it, down to the budget at the lowest.
const (
	namespacedLinesCeiling    = 5584
	namespacedCoreCeiling     = 2031
	namespacedExportedCeiling = 55
	libraryExportedCeiling    = 416
)

// coreFiles are layers/namespaced's concurrency core.
var coreFiles = []string{"state.go", "subscribe.go", "lazy.go", "reader.go", "informers.go", "direct.go", "cache.go"}

// notLibrary are the trees whose packages are not the library's.
var notLibrary = []string{"examples", "internal", "hack", "bench", "bin"}

type size struct{ lines, exported int }

func main() {
	budgets := flag.Bool("budgets", false, "also fail above a budget, not only above a ceiling")
	flag.Parse()
	sizes := map[string]*size{}
	core := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || slices.Contains(notLibrary, path)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		s := sizes[dir]
		if s == nil {
			s = &size{}
			sizes[dir] = s
		}
		n := strings.Count(string(src), "\n")
		s.lines += n
		s.exported += exported(f)
		if dir == "layers/namespaced" && slices.Contains(coreFiles, filepath.Base(path)) {
			core += n
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "apisize:", err)
		os.Exit(2)
	}
	total := 0
	for _, dir := range slices.Sorted(func(yield func(string) bool) {
		for k := range sizes {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Printf("%-40s %6d lines %4d exported\n", dir, sizes[dir].lines, sizes[dir].exported)
		total += sizes[dir].exported
	}
	ns := sizes["layers/namespaced"]
	failed := false
	check := func(what string, got, budget, ceiling int) {
		mark, fail := verdict(got, budget, ceiling, *budgets)
		failed = failed || fail
		fmt.Printf("%-40s %6d (budget %d)%s\n", what, got, budget, mark)
	}
	fmt.Println()
	check("layers/namespaced lines", ns.lines, namespacedLines, namespacedLinesCeiling)
	check("layers/namespaced core lines", core, namespacedCore, namespacedCoreCeiling)
	check("layers/namespaced exported", ns.exported, namespacedExported, namespacedExportedCeiling)
	check("library exported", total, libraryExported, libraryExportedCeiling)
	if failed {
		os.Exit(1)
	}
}

// verdict says what to print after a figure, got, and whether it fails:
// above its ceiling; below a ceiling above its budget (the ceiling comes
// down with the figure); with budgets, above its budget.
func verdict(got, budget, ceiling int, budgets bool) (mark string, fail bool) {
	switch {
	case got > ceiling:
		return fmt.Sprintf("  ABOVE THE CEILING %d", ceiling), true
	case got < ceiling && ceiling > budget:
		return fmt.Sprintf("  below the ceiling: lower it from %d to %d", ceiling, max(got, budget)), true
	case got > budget && budgets:
		return "  OVER", true
	case got > budget:
		return "  over", false
	}
	return "", false
}

// exported counts f's exported names.
func exported(f *ast.File) int {
	n := 0
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						n++
					}
				case *ast.ValueSpec:
					for _, name := range s.Names {
						if name.IsExported() {
							n++
						}
					}
				}
			}
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil || ast.IsExported(receiver(d.Recv.List[0].Type)) {
				n++
			}
		}
	}
	return n
}

// receiver names a method's receiver type.
func receiver(t ast.Expr) string {
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
