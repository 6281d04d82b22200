package exec

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/store"
)

// TestScanReadsEveryFormat: a dataset written as an Arrow IPC file and
// stream, CSV and JSON lines, with and without a suffix, scans back to
// the rows of the Parquet it came from, with --columns and --filter
// applied; no byte stays allocated.
func TestScanReadsEveryFormat(t *testing.T) {
	taxi, _ := testData(t)
	cols := []string{"vendor_id", "pickup_datetime", "pickup_date", "trip_distance", "payment_type", "fare_amount"}
	want := table(t, fused(t, checkedMem(t), 2, Scan([]string{taxi}, ScanOptions{Columns: cols})))
	for _, name := range []string{"t.arrow", "t.arrows", "t.csv", "t.jsonl"} {
		url := "mem://exec-test/formats/" + name
		if err := Run(context.Background(), Pipeline{Source: Scan([]string{taxi}, ScanOptions{}), Stages: []Stage{Write(url)}}, Options{Open: testOpen}); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
		st, key, err := testOpen(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := st.ReadAll(context.Background(), key)
		bare := "mem://exec-test/formats/bare-" + strings.TrimPrefix(name, "t.")
		bst, bkey, _ := testOpen(context.Background(), bare)
		if _, err := bst.Put(context.Background(), bkey, bytes.NewReader(b), store.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{url, bare} {
			mem := checkedMem(t)
			got := table(t, fused(t, mem, 2, Scan([]string{u}, ScanOptions{Columns: cols})))
			if !slices.Equal(got, want) {
				t.Errorf("%s: %d rows, want %d; first %q, want %q", u, len(got), len(want), got[:min(2, len(got))], want[:2])
			}
			filtered := table(t, fused(t, mem, 2, Scan([]string{u}, ScanOptions{Columns: []string{"fare_amount"}, Filter: "fare_amount > 50"})))
			if len(filtered) == 0 || len(filtered) >= len(want) {
				t.Errorf("%s --filter: %d rows of %d", u, len(filtered), len(want))
			}
		}
	}
}

// TestJSONLinesTypes: columns in the order keys first appear, types from
// their values, a missing key or null as null, bad lines as errors.
func TestJSONLinesTypes(t *testing.T) {
	mem := checkedMem(t)
	in := `{"b":1,"a":"x","d":"2024-02-29","t":"2024-02-29 10:00:00Z"}
{"a":null,"b":2.5,"c":true}
{"c":false,"e":"plain"}
`
	src, err := openJSONLines(strings.NewReader(in), "in", newEnv(Options{Mem: mem}), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if got, want := schemaString(src.Schema()), "b float64, a utf8, d date32, t timestamp[us, tz=UTC], c bool, e utf8"; got != want {
		t.Errorf("schema %s, want %s", got, want)
	}
	var rows int64
	for {
		rec, err := src.Next(context.Background())
		if err != nil {
			break
		}
		rows += rec.NumRows()
		rec.Release()
	}
	if rows != 3 {
		t.Errorf("%d rows, want 3", rows)
	}
	for _, bad := range []string{`{"a":[1,2]}`, `{"a":1`, `[1,2]`, "not json", ""} {
		if _, err := openJSONLines(strings.NewReader(bad), "in", newEnv(Options{Mem: memory.DefaultAllocator}), 0); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzJSONLines: any bytes read as JSON lines are rows or an error,
// never a panic, with no byte left allocated.
func FuzzJSONLines(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":"x"}` + "\n" + `{"a":2.5,"c":true}`))
	f.Add([]byte(`{"d":"2024-01-01","t":"2024-01-01 10:00:00Z"}`))
	f.Add([]byte(`{"a":1}` + "\n" + `{"a":"x"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		src, err := openJSONLines(bytes.NewReader(in), "in", newEnv(Options{Mem: mem}), 7)
		if err != nil {
			return
		}
		defer src.Close()
		for {
			rec, err := src.Next(context.Background())
			if err != nil {
				return
			}
			rec.Release()
		}
	})
}
