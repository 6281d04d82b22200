package scan

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluice-data/sluice/gen"
)

// TestFilterDict: a string column that only the filter reads is decoded
// as a dictionary where its chunk is all dictionary encoded, so that its
// tests look at each entry once; the rows kept are the ones the same test
// keeps in Go over arrow-go's own read of the files, nulls included.
func TestFilterDict(t *testing.T) {
	// eligible fails unless every row group decodes col as a dictionary.
	eligible := func(ds *Dataset, col string) {
		t.Helper()
		dt := ds.filterDict(col, arrow.BinaryTypes.String)
		if dt == nil {
			t.Fatalf("%s is not decoded as a dictionary", col)
		}
		for _, f := range ds.files {
			leaf := f.md.Schema.ColumnIndexByName(col)
			for rg := range f.md.NumRowGroups() {
				if k := flatKindOf(f.md, f.md.RowGroup(rg), leaf, dt); k != flatDict {
					t.Fatalf("%s, row group %d of %s: decoded as %d, not a dictionary", col, rg, f.url, k)
				}
			}
		}
	}
	str := func(r arrow.RecordBatch, name string, i int) (string, bool) {
		c := r.Column(r.Schema().FieldIndices(name)[0]).(*array.String)
		return c.Value(i), c.IsValid(i)
	}
	mode := func(r arrow.RecordBatch, i int) string { v, _ := str(r, "l_shipmode", i); return v }
	instruct := func(r arrow.RecordBatch, i int) string { v, _ := str(r, "l_shipinstruct", i); return v }

	st, files := genStore(t, "lineitem", gen.Options{Rows: 30_000, Files: 2, Seed: 9, RowGroupRows: 4000})
	columns := []string{"l_orderkey", "l_linenumber"}
	for _, c := range []struct {
		filter string
		keep   func(r arrow.RecordBatch, i int) bool
	}{
		{"l_shipmode in ('MAIL', 'SHIP')", func(r arrow.RecordBatch, i int) bool { m := mode(r, i); return m == "MAIL" || m == "SHIP" }},
		{"l_shipinstruct like 'DELIVER%' and l_linenumber < 3", func(r arrow.RecordBatch, i int) bool {
			return strings.HasPrefix(instruct(r, i), "DELIVER") && r.Column(r.Schema().FieldIndices("l_linenumber")[0]).GetOneForMarshal(i).(int32) < 3
		}},
		{"l_shipmode < 'FOB' or l_shipinstruct = 'NONE'", func(r arrow.RecordBatch, i int) bool { return mode(r, i) < "FOB" || instruct(r, i) == "NONE" }},
		{"not (l_shipinstruct <> 'COLLECT COD') and starts_with(l_shipmode, 'R')", func(r arrow.RecordBatch, i int) bool {
			return instruct(r, i) == "COLLECT COD" && strings.HasPrefix(mode(r, i), "R")
		}},
	} {
		opts := Options{Mem: checked(t), Columns: columns, BatchRows: 1500, Filter: c.filter}
		ds, err := Open(context.Background(), st, "lineitem/", opts)
		if err != nil {
			t.Fatal(err)
		}
		eligible(ds, "l_shipmode")
		sc := ds.Scan(context.Background())
		got, _ := collect(t, sc)
		sc.Close()
		if sc.c.filterDicts.Load() == 0 {
			t.Fatalf("%s: no chunk was decoded as a dictionary for the filter", c.filter)
		}
		want := reference(t, files, columns, c.keep)
		if want.rows == 0 || want.rows == 30_000 {
			t.Fatalf("%s keeps %d rows: the test tells nothing", c.filter, want.rows)
		}
		if got.String() != want.String() {
			t.Fatalf("%s:\nscan:      %v\nreference: %v", c.filter, got, want)
		}
	}

	// With nulls: put's s is null every 5th row.
	st = memStore(t.Name() + "-nulls")
	put(t, st, "d/a.parquet", 0, 1000, 300, nil)
	sOf := func(i int) (string, bool) { return strings.Repeat("x", i%7), i%5 != 0 }
	for _, c := range []struct {
		filter string
		keep   func(i int) bool
	}{
		{"s in ('xx', 'xxx') or s is null", func(i int) bool { v, ok := sOf(i); return !ok || v == "xx" || v == "xxx" }},
		{"s like 'xxx%'", func(i int) bool { v, ok := sOf(i); return ok && len(v) >= 3 }},
		{"not (s > 'xxxx') and a >= 10", func(i int) bool { v, ok := sOf(i); return ok && v <= "xxxx" && i >= 10 }},
	} {
		opts := Options{Mem: checked(t), Columns: []string{"a"}, BatchRows: 64, Filter: c.filter}
		ds, err := Open(context.Background(), st, "d/", opts)
		if err != nil {
			t.Fatal(err)
		}
		eligible(ds, "s")
		s := ds.Scan(context.Background())
		got, err := drain(s)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		var rows []int64
		for _, b := range got {
			rows = append(rows, b.Column(0).(*array.Int64).Int64Values()...)
		}
		releaseBatches(got)
		var want []int64
		for i := range 1000 {
			if c.keep(i) {
				want = append(want, int64(i))
			}
		}
		if len(rows) != len(want) {
			t.Fatalf("%s: %d rows, want %d", c.filter, len(rows), len(want))
		}
		for k := range rows {
			if rows[k] != want[k] {
				t.Fatalf("%s: row %d is %d, want %d", c.filter, k, rows[k], want[k])
			}
		}
	}
}

// TestLateColumns: string columns the filter does not read are decoded
// after it, in the rows it keeps alone (decodeLate), from dictionary
// pages (l_shipmode) and PLAIN ones (l_comment) alike, and one it reads
// is decoded as a dictionary and delivered as the strings of the kept
// rows (outDict); the rows are arrow-go's own read's that the same test
// keeps, for filters that keep some rows, none and all.
func TestLateColumns(t *testing.T) {
	st, files := genStore(t, "lineitem", gen.Options{Rows: 30_000, Files: 2, Seed: 11, RowGroupRows: 4000})
	columns := []string{"l_orderkey", "l_shipmode", "l_comment", "l_linenumber", "l_returnflag"}
	line := func(r arrow.RecordBatch, i int) int32 {
		return r.Column(r.Schema().FieldIndices("l_linenumber")[0]).GetOneForMarshal(i).(int32)
	}
	key := func(r arrow.RecordBatch, i int) int64 {
		return r.Column(r.Schema().FieldIndices("l_orderkey")[0]).GetOneForMarshal(i).(int64)
	}
	for _, c := range []struct {
		filter string
		keep   func(r arrow.RecordBatch, i int) bool
	}{
		{"l_linenumber = 3", func(r arrow.RecordBatch, i int) bool { return line(r, i) == 3 }},
		{"l_orderkey % 5 = 1 or l_linenumber > 6", func(r arrow.RecordBatch, i int) bool { return key(r, i)%5 == 1 || line(r, i) > 6 }},
		{"l_linenumber > 100", func(arrow.RecordBatch, int) bool { return false }},
		{"l_linenumber >= 1", func(arrow.RecordBatch, int) bool { return true }},
		{"l_shipmode in ('MAIL', 'SHIP') and l_linenumber < 4", func(r arrow.RecordBatch, i int) bool {
			m := r.Column(r.Schema().FieldIndices("l_shipmode")[0]).(*array.String).Value(i)
			return (m == "MAIL" || m == "SHIP") && line(r, i) < 4
		}},
		{"l_shipmode <> 'nowhere'", func(arrow.RecordBatch, int) bool { return true }},
		{"l_shipmode = 'nowhere'", func(arrow.RecordBatch, int) bool { return false }},
		// Keeps no row, and no statistic says so before decoding.
		{"l_shipmode = 'MAIL' and l_linenumber + 1 > 100", func(arrow.RecordBatch, int) bool { return false }},
		{"l_linenumber + 1 > 100", func(arrow.RecordBatch, int) bool { return false }},
	} {
		opts := Options{Mem: checked(t), Columns: columns, BatchRows: 1500, Filter: c.filter}
		ds, err := Open(context.Background(), st, "lineitem/", opts)
		if err != nil {
			t.Fatal(err)
		}
		late := 0
		for _, f := range ds.files {
			for rg := range f.md.NumRowGroups() {
				for _, name := range []string{"l_shipmode", "l_comment", "l_returnflag"} {
					leaf := f.md.Schema.ColumnIndexByName(name)
					if flatKindOf(f.md, f.md.RowGroup(rg), leaf, arrow.BinaryTypes.String) == flatBytes && f.md.Schema.Column(leaf).MaxDefinitionLevel() == 0 {
						late++
					}
				}
			}
		}
		if late == 0 {
			t.Fatalf("%s: no column is decoded late", c.filter)
		}
		if strings.Contains(c.filter, "l_shipmode") {
			dt := ds.outDict("l_shipmode", arrow.BinaryTypes.String)
			if dt == nil {
				t.Fatalf("%s: l_shipmode is not decoded as a dictionary", c.filter)
			}
			for _, f := range ds.files {
				leaf := f.md.Schema.ColumnIndexByName("l_shipmode")
				for rg := range f.md.NumRowGroups() {
					if flatKindOf(f.md, f.md.RowGroup(rg), leaf, dt) != flatDict {
						t.Fatalf("%s: row group %d of %s: l_shipmode is not all dictionary encoded", c.filter, rg, f.url)
					}
				}
			}
		}
		sc := ds.Scan(context.Background())
		got, _ := collect(t, sc)
		stats := sc.Stats()
		sc.Close()
		if stats.RowGroups > 0 && sc.c.lateGroups.Load() == 0 {
			t.Fatalf("%s: no row group was decoded late", c.filter)
		}
		want := reference(t, files, columns, c.keep)
		if got.String() != want.String() {
			t.Fatalf("%s:\nscan:      %v\nreference: %v", c.filter, got, want)
		}
	}
}
