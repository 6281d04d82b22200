package scan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/sluice-data/sluice/internal/arrowtest"
	"github.com/sluice-data/sluice/store"
)

// testFiles lists every Parquet-ish file under dir (encrypted ones and
// the bad_data ones included).
func testFiles(t *testing.T, dir string) []string {
	var out []string
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() && strings.Contains(e.Name(), ".parquet") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// arrowGoRead reads a file the way arrow-go does on its own, turning a
// panic into an error.
func arrowGoRead(path string) (rec arrow.RecordBatch, err error) {
	defer func() {
		if r := recover(); r != nil {
			rec, err = nil, fmt.Errorf("arrow-go panicked: %v", r)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tbl, err := pqarrow.ReadTable(context.Background(), f, parquet.NewReaderProperties(memory.DefaultAllocator),
		pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	return tableRecord(tbl), nil
}

func sumOf(rec arrow.RecordBatch) sums {
	s := newSummer()
	s.add(rec)
	return s.sums()
}

// scanFile scans one local file through a file store.
func scanFile(t *testing.T, path string, opts Options) (sums, Stats, error) {
	t.Helper()
	_, got, stats, err := scanLocal(t, path, opts)
	if err != nil {
		return sums{}, stats, err
	}
	defer releaseBatches(got)
	sum := newSummer()
	for _, b := range got {
		sum.add(b.RecordBatch)
	}
	return sum.sums(), stats, nil
}

// scanLocal opens one local file through a file store and scans it
// whole: its dataset, its batches in dataset order (for the caller to
// release) and the scan's stats. An error from Open comes with no stats.
func scanLocal(t *testing.T, path string, opts Options) (*Dataset, []Batch, Stats, error) {
	t.Helper()
	ds, err := Open(context.Background(), storeFor(t, path), filepath.Base(path), opts)
	if err != nil {
		return nil, nil, Stats{}, err
	}
	s := ds.Scan(context.Background())
	defer s.Close()
	got, err := drain(s)
	return ds, got, s.Stats(), err
}

// checkCleanError asserts an error is the one-line kind that names the file.
func checkCleanError(t *testing.T, err error, path string) {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "scan file://") || !strings.Contains(msg, filepath.Base(path)+": ") {
		t.Errorf("error is not one line naming the file: %q", msg)
	}
	if strings.Contains(msg, "goroutine ") {
		t.Errorf("error carries a stack: %q", msg)
	}
}

// TestParquetTesting reads every file of the Parquet format project's test
// data and checks each against arrow-go's own reader: the same rows and
// values (all columns, then each column alone) where arrow-go reads the
// file, a clean error naming the file where it cannot.
func TestParquetTesting(t *testing.T) {
	root := arrowtest.ParquetTesting(t)
	files := append(testFiles(t, filepath.Join(root, "data")), testFiles(t, filepath.Join(root, "bad_data"))...)
	readable := 0
	for _, path := range files {
		name, _ := filepath.Rel(root, path)
		t.Run(name, func(t *testing.T) {
			for _, c := range beyondArrowGo {
				if name == filepath.Join("data", c.file) {
					t.Skip("arrow-go alone refuses or misreads it: TestBeyondArrowGo checks it")
				}
			}
			if _, ok := lz4Twins[filepath.Base(name)]; ok && filepath.Dir(name) == "data" {
				t.Skip("arrow-go has no LZ4 codec: TestLZ4 checks it")
			}
			if name == filepath.Join("data", "large_string_map.brotli.parquet") {
				t.Skip("arrow-go alone refuses its 1 GiB pages: TestLargeStringMap checks it")
			}
			want, refErr := arrowGoRead(path)
			mem := arrowtest.LeakChecked(t)
			got, stats, err := scanFile(t, path, Options{Mem: mem, Concurrency: 1, BatchRows: 1000})
			if refErr != nil {
				if err == nil {
					t.Fatalf("arrow-go fails (%v) but scan read %v", refErr, got)
				}
				checkCleanError(t, err, path)
				t.Logf("arrow-go: %v; scan: %v", refErr, err)
				return
			}
			defer want.Release()
			if err != nil {
				t.Fatalf("arrow-go reads it, scan fails: %v", err)
			}
			if w := sumOf(want); got.String() != w.String() {
				t.Fatalf("scan:    %v\narrow-go: %v", got, w)
			}
			if stats.Fallbacks != 0 {
				t.Logf("%d fallback reads (%d bytes)", stats.Fallbacks, stats.FallbackBytes)
			}
			readable++
			for _, f := range want.Schema().Fields() {
				cols := []string{f.Name}
				got, _, err := scanFile(t, path, Options{Mem: mem, Columns: cols, BatchRows: 7})
				if err != nil {
					t.Fatalf("column %s: %v", f.Name, err)
				}
				w := project(retained(want), cols)
				ws := sumOf(w)
				w.Release()
				if got.String() != ws.String() {
					t.Fatalf("column %s:\nscan:     %v\narrow-go: %v", f.Name, got, ws)
				}
			}
		})
	}
	t.Logf("%d of %d files readable by arrow-go and read the same", readable, len(files))
}

func retained(r arrow.RecordBatch) arrow.RecordBatch { r.Retain(); return r }

func TestParquetTestingFilter(t *testing.T) {
	root := arrowtest.ParquetTesting(t)
	path := filepath.Join(root, "data", "alltypes_plain.parquet")
	rec, err := arrowGoRead(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int32)
	bools := rec.Column(rec.Schema().FieldIndices("bool_col")[0]).(*array.Boolean)
	keep := newSummer()
	keep.keep = func(_ arrow.RecordBatch, i int) bool { return ids.Value(i) >= 2 && bools.Value(i) }
	keep.add(rec)
	got, _, err := scanFile(t, path, Options{Mem: checked(t), Filter: "id >= 2 and bool_col = true"})
	if err != nil {
		t.Fatal(err)
	}
	if want := keep.sums(); got.String() != want.String() || want.rows == 0 {
		t.Fatalf("scan:    %v\narrow-go: %v", got, want)
	}
}

func storeFor(t *testing.T, path string) *store.Store {
	d, err := store.NewFileDriver(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	return store.New(d, "file://"+filepath.ToSlash(filepath.Dir(path))+"/")
}
