package archdoc

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fileMap reads the file map of a package's doc comment: its lines that
// begin with a tab and name files ("a.go, b_{x,y}.go  what they hold"),
// braces expanded. ok is false when the comment has no map.
func fileMap(comment string) (files []string, ok bool) {
	for _, line := range strings.Split(comment, "\n") {
		if !strings.HasPrefix(line, "\t") {
			continue
		}
		for _, w := range strings.Fields(line) {
			w = strings.TrimSuffix(w, ",")
			if !strings.HasSuffix(w, ".go") {
				break
			}
			files = append(files, expand(w)...)
			ok = true
		}
	}
	return files, ok
}

// expand expands one pair of braces: "a_{x,y}.go" is a_x.go and a_y.go.
func expand(w string) []string {
	i, j := strings.IndexByte(w, '{'), strings.IndexByte(w, '}')
	if i < 0 || j < i {
		return []string{w}
	}
	var out []string
	for _, alt := range strings.Split(w[i+1:j], ",") {
		out = append(out, w[:i]+alt+w[j+1:])
	}
	return out
}

// TestFileMaps: a package whose doc comment maps its files names every
// file it has (but doc.go and the tests), and no file it does not have.
func TestFileMaps(t *testing.T) {
	root := filepath.Join("..", "..")
	maps := 0
	err := filepath.WalkDir(root, func(dir string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && dir != root {
			return filepath.SkipDir
		}
		have, comment, err := packageFiles(dir)
		if err != nil {
			return err
		}
		listed, ok := fileMap(comment)
		if !ok {
			return nil
		}
		maps++
		for _, f := range have {
			if !slices.Contains(listed, f) {
				t.Errorf("%s: %s is not in the package's file map", dir, f)
			}
		}
		for _, f := range listed {
			if !slices.Contains(have, f) {
				t.Errorf("%s: the file map names %s, which is not there", dir, f)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if maps == 0 {
		t.Error("no package's doc comment has a file map")
	}
}

// packageFiles lists dir's Go files but doc.go and the tests, sorted, and
// returns their doc comments, joined.
func packageFiles(dir string) (have []string, comment string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, "", err
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			return nil, "", err
		}
		if f.Doc != nil {
			comment += f.Doc.Text()
		}
		if name != "doc.go" {
			have = append(have, name)
		}
	}
	return have, comment, nil
}
