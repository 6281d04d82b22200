package exec

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/store"
)

func scanToOpts(t *testing.T) ScanToOptions {
	return ScanToOptions{Open: testOpen, OpenOutput: testOpen, Mem: checkedMem(t), Memory: 64 << 20}
}

func TestScanToCounts(t *testing.T) {
	taxi, _ := testData(t)
	var started, progress int64
	done := 0
	o := scanToOpts(t)
	o.Started = func(total int64) { started = total }
	o.Progress = func(n int64) { progress += n } // one row group at a time: Concurrency 1
	o.Concurrency = 1
	o.Done = func() { done++ }
	res, err := ScanTo(context.Background(), taxi, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 30_000 || res.Whole || res.Stats.Rows != 30_000 {
		t.Errorf("got %+v, want 30000 rows of Parquet", res)
	}
	if started == 0 || progress != started || done != 1 {
		t.Errorf("progress: started %d, added %d, done %d times", started, progress, done)
	}
}

func TestScanToStdoutMatchesPipeline(t *testing.T) {
	taxi, _ := testData(t)
	cols := []string{"vendor_id", "fare_amount", "payment_type"}
	want := table(t, fused(t, checkedMem(t), 2, Scan([]string{taxi}, ScanOptions{Columns: cols, Filter: "fare_amount > 20"})))
	for _, arrival := range []bool{false, true} {
		var out bytes.Buffer
		o := scanToOpts(t)
		o.Columns, o.Filter, o.Arrival = cols, "fare_amount > 20", arrival
		o.Output, o.Stdout = "-", &out
		res, err := ScanTo(context.Background(), taxi, o)
		if err != nil {
			t.Fatal(err)
		}
		got := table(t, out.Bytes())
		if arrival {
			// Batches as decoded; each carries its place to restore order.
			got, want := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
			if !slices.Equal(got, want) {
				t.Errorf("arrival: %d rows, want %d", len(got), len(want))
			}
			continue
		}
		if !slices.Equal(got, want) || res.Rows != int64(len(want)) {
			t.Errorf("dataset order: %d rows (%d counted), want %d", len(got), res.Rows, len(want))
		}
	}
}

// TestScanToObjectsRoundTrip writes each output format to a store, then
// reads it back, Parquet as Parquet and the others whole.
func TestScanToObjectsRoundTrip(t *testing.T) {
	taxi, _ := testData(t)
	for _, name := range []string{"o.parquet", "o.arrow", "o.csv"} {
		url := "mem://exec-test/scanto/" + name
		o := scanToOpts(t)
		o.Output = url
		if _, err := ScanTo(context.Background(), taxi, o); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o = scanToOpts(t)
		res, err := ScanTo(context.Background(), url, o)
		if err != nil {
			t.Fatalf("read %s back: %v", name, err)
		}
		if res.Rows != 30_000 || res.Whole != (name != "o.parquet") {
			t.Errorf("%s read back: %+v", name, res)
		}
	}
}

func TestScanToInvalid(t *testing.T) {
	taxi, _ := testData(t)
	for _, c := range []struct{ output, format string }{
		{"", "parquet"},          // nothing to write
		{"mem://b/o.txt", ""},    // no format
		{"mem://exec-test/", ""}, // a directory
	} {
		o := scanToOpts(t)
		o.Output, o.Format = c.output, c.format
		_, err := ScanTo(context.Background(), taxi, o)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("-o %q --format %q: %v, want ErrInvalid", c.output, c.format, err)
		}
	}
}

// TestScanToFailureCommitsNothing: a scan that fails part way leaves no
// object behind.
func TestScanToFailureCommitsNothing(t *testing.T) {
	taxi, _ := testData(t)
	url := "mem://exec-test/scanto/failed.arrow"
	ctx, cancel := context.WithCancel(context.Background())
	o := scanToOpts(t)
	o.Output = url
	o.Concurrency = 1
	o.Progress = func(int64) { cancel() }
	if _, err := ScanTo(ctx, taxi, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	st, key, _ := testOpen(context.Background(), url)
	if _, err := st.Stat(context.Background(), key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s after a failed scan: %v, want not found", url, err)
	}
}

func TestParquetSharesBoundTheDictionary(t *testing.T) {
	for _, c := range []struct{ share, rg, dict int64 }{
		{128 << 20, 32 << 20, 256 << 10},
		{1 << 20, 256 << 10, 64 << 10},
		{4 << 30, 1 << 30, 1 << 20},
	} {
		rg, dict := parquetShares(c.share)
		if rg != c.rg || dict != c.dict {
			t.Errorf("parquetShares(%d) = %d, %d; want %d, %d", c.share, rg, dict, c.rg, c.dict)
		}
	}
	var o format.Options
	o.RowGroupBytes, o.DictPageBytes = parquetShares(64 << 20)
	if err := o.Check(); err != nil {
		t.Error(err)
	}
}
