package archdoc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	module  = "urouter"
	doc     = "ARCHITECTURE.md"
	heading = "## Import graph"
)

// graph maps a package, by its path in the module ("cmd/urouter"), to the
// module's packages it imports, sorted.
type graph map[string][]string

// readDoc reads the first fenced block after heading: one line a package,
// "PKG -> DEP DEP ..." or "PKG -> none".
func readDoc(path string) (graph, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	g := graph{}
	section, block := false, false
	for i, line := range strings.Split(string(text), "\n") {
		n := i + 1
		switch {
		case !section:
			section = line == heading
		case strings.HasPrefix(line, "```"):
			if block {
				return g, nil
			}
			block = true
		case block && strings.TrimSpace(line) != "":
			pkg, deps, ok := strings.Cut(line, "->")
			pkg = strings.TrimSpace(pkg)
			if !ok || pkg == "" {
				return nil, fmt.Errorf("%s:%d: want PKG -> DEP... or PKG -> none, got %q", path, n, line)
			}
			if _, dup := g[pkg]; dup {
				return nil, fmt.Errorf("%s:%d: %s has a second line", path, n, pkg)
			}
			fields := strings.Fields(deps)
			if len(fields) == 1 && fields[0] == "none" {
				fields = nil
			}
			slices.Sort(fields)
			g[pkg] = fields
		}
	}
	return nil, fmt.Errorf("%s: no fenced block after %q", path, heading)
}

// readCode asks go list what each of the module's packages imports of the
// module, test files left out.
func readCode(root string) (graph, error) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, "./...")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	g := graph{}
	for line := range strings.Lines(string(out)) {
		path, imports, _ := strings.Cut(strings.TrimSpace(line), ":")
		pkg, ok := own(path)
		if !ok {
			return nil, fmt.Errorf("go list: %q is not in module %s", path, module)
		}
		deps := []string{}
		for _, imp := range strings.Fields(imports) {
			if d, ok := own(imp); ok {
				deps = append(deps, d)
			}
		}
		slices.Sort(deps)
		g[pkg] = deps
	}
	return g, nil
}

// own gives an import path's path in the module, if it is the module's.
func own(path string) (string, bool) {
	return strings.CutPrefix(path, module+"/")
}

// diff lists, package by package, where the document and the code differ.
func diff(written, real graph) []string {
	var out []string
	for pkg, deps := range real {
		w, ok := written[pkg]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s is missing: want %s -> %s", pkg, pkg, line(deps)))
		case !slices.Equal(w, deps):
			out = append(out, fmt.Sprintf("%s -> %s is written, the code has %s -> %s", pkg, line(w), pkg, line(deps)))
		}
	}
	for pkg := range written {
		if _, ok := real[pkg]; !ok {
			out = append(out, fmt.Sprintf("%s is written but is no package of the module", pkg))
		}
	}
	slices.Sort(out)
	return out
}

func line(deps []string) string {
	if len(deps) == 0 {
		return "none"
	}
	return strings.Join(deps, " ")
}

// TestImportGraph holds ARCHITECTURE.md's import graph to the code: every
// package of the module has its line, and each line names exactly the
// module's packages that package imports.
func TestImportGraph(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	written, err := readDoc(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	real, err := readCode(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(real) == 0 {
		t.Fatal("go list listed no packages")
	}
	for _, d := range diff(written, real) {
		t.Errorf("%s: %s", doc, d)
	}
}

// TestDiff checks that the comparison sees each kind of drift, so that
// TestImportGraph cannot pass by reading nothing.
func TestDiff(t *testing.T) {
	real := graph{"a": {"b", "c"}, "b": {}, "c": {}}
	for _, tc := range []struct {
		name    string
		written graph
		want    int
	}{
		{"same", graph{"a": {"b", "c"}, "b": nil, "c": {}}, 0},
		{"an import missing", graph{"a": {"b"}, "b": {}, "c": {}}, 1},
		{"an import too many", graph{"a": {"b", "c"}, "b": {"c"}, "c": {}}, 1},
		{"a package missing", graph{"a": {"b", "c"}, "b": {}}, 1},
		{"a package gone", graph{"a": {"b", "c"}, "b": {}, "c": {}, "d": {}}, 1},
	} {
		if got := diff(tc.written, real); len(got) != tc.want {
			t.Errorf("%s: %d differences %q, want %d", tc.name, len(got), got, tc.want)
		}
	}
}

// TestReadDoc checks the reading of the document's block: its lines, the
// word none, and a line that is no graph's.
func TestReadDoc(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		p := filepath.Join(dir, "doc.md")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	g, err := readDoc(write("# x\n```\nz -> q\n```\n" + heading + "\n\nprose\n```\na -> c b\nb -> none\n\n```\nd -> e\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (graph{"a": {"b", "c"}, "b": nil}); len(diff(g, want)) != 0 || len(g) != 2 {
		t.Errorf("read %v, want %v", g, want)
	}
	for _, bad := range []string{
		heading + "\n```\na b\n```\n",
		heading + "\n```\na -> b\na -> c\n```\n",
		heading + "\nno block\n",
		"```\na -> b\n```\n",
	} {
		if g, err := readDoc(write(bad)); err == nil {
			t.Errorf("%q read as %v, want an error", bad, g)
		}
	}
}
