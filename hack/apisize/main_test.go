package main

import (
	"go/parser"
	"go/token"
	"testing"
)

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		name                 string
		got, budget, ceiling int
		budgets              bool
		mark                 string
		fail                 bool
	}{
		{"at its ceiling, over budget", 80, 50, 80, false, "  over", false},
		{"at its ceiling, over budget, budgets asked", 80, 50, 80, true, "  OVER", true},
		{"above its ceiling", 81, 50, 80, false, "  ABOVE THE CEILING 80", true},
		{"below its ceiling, still over budget", 70, 50, 80, false, "  below the ceiling: lower it from 80 to 70", true},
		{"below its ceiling and its budget", 40, 50, 80, false, "  below the ceiling: lower it from 80 to 50", true},
		{"within a budget that is its ceiling", 40, 50, 50, true, "", false},
		{"above a budget that is its ceiling", 51, 50, 50, false, "  ABOVE THE CEILING 50", true},
	} {
		mark, fail := verdict(c.got, c.budget, c.ceiling, c.budgets)
		if mark != c.mark || fail != c.fail {
			t.Errorf("%s: verdict(%d, %d, %d, %v) = %q, %v; want %q, %v", c.name, c.got, c.budget, c.ceiling, c.budgets, mark, fail, c.mark, c.fail)
		}
	}
}

func TestExported(t *testing.T) {
	const src = `package p

type T struct{}
type u struct{}

func (T) M()   {}
func (*T) N()  {}
func (u) M()   {}
func (T) m()   {}
func F()       {}
func f()       {}

type G[E any] struct{}

func (G[E]) M() {}

const (
	A, b = 1, 2
	C    = 3
)

var V, w int
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	// T, T.M, T.N, F, G, G.M, A, C, V.
	if got := exported(f); got != 9 {
		t.Errorf("exported = %d, want 9", got)
	}
}
