package collect

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/arrowtest"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// TestScanFiles reads datasets a file per part, in dataset order, and
// gets what a whole-dataset scan gets.
func TestScanFiles(t *testing.T) {
	st := testStore(t)
	for _, c := range []struct {
		pattern string
		so      scan.Options
	}{
		{"taxi/", scan.Options{}},
		{"taxi/", scan.Options{Columns: []string{"tip_amount"}, Filter: "tip_amount > 3", BatchRows: 300}},
		{"hive/", scan.Options{}},
		{"hive", scan.Options{Filter: "year = 2020"}},
		{"hive/year=2021/part-00001.parquet", scan.Options{}},
		{"taxi/*.parquet", scan.Options{Filter: "fare_amount < -1"}},
	} {
		for _, parallel := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%q/%d", c.pattern, c.so.Filter, parallel), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				c.so.Mem = mem
				want := localChecksum(t, st, c.pattern, c.so)
				ds, err := scan.Open(context.Background(), st, c.pattern, c.so)
				if err != nil {
					t.Fatal(err)
				}
				fs := ScanFiles(context.Background(), st, c.pattern, ds, c.so, Options{Order: Dataset, Parallel: parallel, Window: 2})
				var got arrowtest.Checksum
				var last Pos
				err = Drain(fs.Stream, func(b Batch) error {
					if b.Pos.Compare(last) < 0 {
						t.Errorf("%v after %v", b.Pos, last)
					}
					last = b.Pos
					got.Add(b.RecordBatch)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("ScanFiles %v, scan %v", got, want)
				}
				if s := fs.ScanStats(); s.Rows != want.Rows {
					t.Errorf("stats count %d rows, want %d", s.Rows, want.Rows)
				}
			})
		}
	}
}

// TestScanFilesError: a failing file ends the stream with its error.
func TestScanFilesError(t *testing.T) {
	good := testStore(t)
	st := store.New(failingDriver{good.Driver(), "taxi/part-00001.parquet"}, "mem://bad/")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	so := scan.Options{Mem: mem}
	ds, err := scan.Open(context.Background(), st, "taxi/", so)
	if err != nil {
		t.Fatal(err)
	}
	fs := ScanFiles(context.Background(), st, "taxi/", ds, so, Options{Order: Dataset, Parallel: 2})
	err = Drain(fs.Stream, func(Batch) error { return nil })
	if err == nil || !strings.Contains(err.Error(), errDisk.Error()) {
		t.Fatalf("err = %v, want the injected failure", err)
	}
}
