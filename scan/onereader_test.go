package scan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOneParquetReader: every Parquet read in sluice goes through this
// package. No other package's code (tests and their helpers in
// internal/arrowtest aside, which may read with arrow-go as an
// independent reference) calls the readers of arrow-go's
// parquet/file or pqarrow (their writers are package format's); bench/scanbench is the exception
// by purpose: it measures arrow-go's own reader against scan.
func TestOneParquetReader(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	const fileReader = "github.com/apache/arrow-go/v18/parquet/file"
	readers := map[string]map[string]bool{
		fileReader: {"NewParquetReader": true, "OpenParquetFile": true},
		"github.com/apache/arrow-go/v18/parquet/pqarrow": {"NewFileReader": true, "ReadTable": true, "OpenParquetFile": true},
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "scan" || rel == filepath.Join("bench", "scanbench") || rel == filepath.Join("internal", "arrowtest") || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		names := map[string]map[string]bool{} // local name -> its reader functions
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			fns, ok := readers[p]
			if !ok {
				continue
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = fns
		}
		if len(names) == 0 {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && names[x.Name][sel.Sel.Name] {
					t.Errorf("%s calls %s.%s: read Parquet through package scan", rel, x.Name, sel.Sel.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files under %s", checked, root)
	}
}
