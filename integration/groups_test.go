package integration

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A test either measures or runs beside the others, and says which
// first: measures(t) or parallel(t). `make test` runs the two groups
// apart (UROUTER_TESTS): the labs beside the packages' own tests, then
// the measuring ones alone. Unset, go test runs both, the measuring ones
// first and one at a time.
const testsGroup = "UROUTER_TESTS"

// measures marks a test that measures against the clock, a peer or the
// machine (a rate, a latency or a timer's schedule under load, the
// daemon's CPU, memory or threads, the machine's own neighbour table
// filled): it runs alone.
func measures(t *testing.T) {
	t.Helper()
	if os.Getenv(testsGroup) == "labs" {
		t.Skip("it measures: run with " + testsGroup + "=measured")
	}
}

// parallel marks a test that measures nothing (an oracle, a state file,
// a capture's contents, a routing daemon's routes): it runs beside the
// other such tests, its namespaces (newNetns numbers them), sockets and
// files (t.TempDir) its own.
func parallel(t *testing.T) {
	t.Helper()
	if os.Getenv(testsGroup) == "measured" {
		t.Skip("it measures nothing: run with " + testsGroup + "=labs")
	}
	t.Parallel()
}

// TestEveryTestGrouped: each test's first statement is measures(t) or
// parallel(t), so that no test lands in neither group of make test.
func TestEveryTestGrouped(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" ||
				fn.Name.Name == "TestEveryTestGrouped" {
				continue
			}
			if !groupedFirst(fn.Body) {
				t.Errorf("%s: %s begins with neither measures(t) nor parallel(t)", fset.Position(fn.Pos()), fn.Name.Name)
			}
		}
	}
}

// groupedFirst reports whether body begins with measures(t) or
// parallel(t).
func groupedFirst(body *ast.BlockStmt) bool {
	if body == nil || len(body.List) == 0 {
		return false
	}
	es, ok := body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	id, ok := call.Fun.(*ast.Ident)
	return ok && (id.Name == "measures" || id.Name == "parallel")
}
