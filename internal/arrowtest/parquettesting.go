package arrowtest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/internal/testenv"
)

// ParquetTesting locates the Parquet format project's test files, kept
// beside the repository at ../shared/testdata/parquet-testing, from the
// directory of any package's test, in this module or in a module nested
// in it (scan/duckdbcheck). CI must have them (see Unavailable).
func ParquetTesting(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for !isSluiceRoot(dir) {
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of github.com/sluice-data/sluice above the test's directory")
		}
		dir = parent
	}
	root := filepath.Join(dir, "..", "shared", "testdata", "parquet-testing")
	if _, err := os.Stat(filepath.Join(root, "data")); err != nil {
		testenv.Unavailable(t, "parquet-testing files not found at %s: git clone https://github.com/apache/parquet-testing there", root)
	}
	return root
}

// isSluiceRoot says whether dir holds the go.mod of sluice's own module.
func isSluiceRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	return slices.Contains(strings.Split(string(b), "\n"), "module github.com/sluice-data/sluice")
}
