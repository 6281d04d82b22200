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
// package. No other package's code (tests aside, which may read with
// arrow-go as an independent reference) imports arrow-go's parquet file
// reader or calls pqarrow's readers; bench/scanbench is the exception
// by purpose: it measures arrow-go's own reader against scan.
func TestOneParquetReader(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	const fileReader = "github.com/apache/arrow-go/v18/parquet/file"
	readers := map[string]bool{"NewFileReader": true, "ReadTable": true, "OpenParquetFile": true}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "scan" || rel == filepath.Join("bench", "scanbench") || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
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
		pqarrowName := ""
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == fileReader {
				t.Errorf("%s imports %s: read Parquet through package scan", rel, p)
			}
			if p == "github.com/apache/arrow-go/v18/parquet/pqarrow" {
				pqarrowName = "pqarrow"
				if imp.Name != nil {
					pqarrowName = imp.Name.Name
				}
			}
		}
		if pqarrowName == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == pqarrowName && readers[sel.Sel.Name] {
					t.Errorf("%s calls pqarrow.%s: read Parquet through package scan", rel, sel.Sel.Name)
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
