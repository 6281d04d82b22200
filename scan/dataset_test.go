package scan

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/internal/arrowtest"
	"github.com/sluice-data/sluice/store"
)

// put writes a Parquet file of rows (a int64 = start.., s string) to key.
func put(t testing.TB, st *store.Store, key string, start, rows int, rowGroup int64, meta map[string]string) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	md := arrow.NewMetadata(nil, nil)
	if meta != nil {
		md = arrow.MetadataFrom(meta)
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, &md)
	ab := array.NewInt64Builder(mem)
	sb := array.NewStringBuilder(mem)
	for i := start; i < start+rows; i++ {
		ab.Append(int64(i))
		if i%5 == 0 {
			sb.AppendNull()
		} else {
			sb.Append(strings.Repeat("x", i%7))
		}
	}
	a, s := ab.NewArray(), sb.NewArray()
	rec := array.NewRecordBatch(sc, []arrow.Array{a, s}, int64(rows))
	a.Release()
	s.Release()
	defer rec.Release()
	data := arrowtest.Parquet(t, rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rowGroup)))
	if _, err := st.Put(context.Background(), key, bytes.NewReader(data), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return data
}

func TestHivePartitions(t *testing.T) {
	st := memStore(t.Name())
	put(t, st, "t/year=2023/region=eu/part-0.parquet", 0, 100, 40, nil)
	put(t, st, "t/year=2023/region=us%2Fwest/part-0.parquet", 100, 100, 40, nil)
	put(t, st, "t/year=2024/region=eu/part-0.parquet", 200, 100, 40, nil)
	put(t, st, "t/year=2024/region=__HIVE_DEFAULT_PARTITION__/part-0.parquet", 300, 100, 40, nil)
	put(t, st, "t/_SUCCESS.parquet", 0, 1, 1, nil) // bookkeeping: skipped
	if _, err := st.Put(context.Background(), "t/year=2024/notes.txt", strings.NewReader("x"), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}

	ds, err := Open(context.Background(), st, "t/", Options{Mem: checked(t)})
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Schema().String(); !strings.Contains(got, "year: type=int64") || !strings.Contains(got, "region: type=utf8") {
		t.Fatalf("schema: %s", got)
	}
	if n := len(ds.Files()); n != 4 {
		t.Fatalf("%d files", n)
	}

	count := func(opts Options) (int64, map[string]int64, Stats) {
		opts.Mem = checked(t)
		ds, err := Open(context.Background(), st, "t", opts)
		if err != nil {
			t.Fatal(err)
		}
		s := ds.Scan(context.Background())
		defer s.Close()
		byRegion := map[string]int64{}
		var n int64
		for s.Next() {
			b := s.Batch()
			n += b.NumRows()
			idx := b.Schema().FieldIndices("region")
			if len(idx) > 0 {
				r := b.Column(idx[0]).(*array.String)
				for i := 0; i < r.Len(); i++ {
					byRegion[r.ValueStr(i)]++
				}
			}
			b.Release()
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		return n, byRegion, s.Stats()
	}
	n, by, stats := count(Options{})
	if n != 400 || by["eu"] != 200 || by["us/west"] != 100 || by["(null)"] != 100 {
		t.Fatalf("%d rows, by region %v", n, by)
	}
	// The first batch is timed from Open's start, like Elapsed.
	if stats.FirstBatch < stats.Open || stats.FirstBatch > stats.Elapsed {
		t.Fatalf("first batch at %v, open %v, elapsed %v", stats.FirstBatch, stats.Open, stats.Elapsed)
	}
	n, by, stats = count(Options{Filter: "year = 2024 and region = 'eu' and a >= 250", Columns: []string{"region", "a"}})
	if n != 50 || by["eu"] != 50 || stats.FilesPruned != 3 {
		t.Fatalf("%d rows, by region %v, %d files pruned", n, by, stats.FilesPruned)
	}
	n, _, stats = count(Options{Columns: []string{"year"}})
	if n != 400 || stats.Fetch.BytesRequested != 0 {
		t.Fatalf("partition column alone: %d rows, %d bytes fetched", n, stats.Fetch.BytesRequested)
	}
	n, _, _ = count(Options{Filter: "region != 'eu'"})
	if n != 100 {
		t.Fatalf("region != 'eu' gave %d rows (null regions never match)", n)
	}
	for _, c := range []struct {
		filter  string
		columns []string
		rows    int64
		pruned  int
	}{
		{"year = 2023 or region = 'eu'", nil, 300, 1},
		{"region is null", nil, 100, 3},
		{"region in ('us/west', 'asia') and a < 150", nil, 50, 3},
		{"year + 1 = 2024", []string{"year"}, 200, 0},   // no file column read: the filter holds per file
		{"year + 1 = 2024", []string{"a"}, 200, 0},      // evaluated on rows
		{"not year = 2024", []string{"region"}, 200, 0}, // not: no pruning, but the same rows
	} {
		n, _, stats := count(Options{Filter: c.filter, Columns: c.columns})
		if n != c.rows || stats.FilesPruned != c.pruned {
			t.Errorf("%s (columns %v): %d rows and %d files pruned, want %d and %d", c.filter, c.columns, n, stats.FilesPruned, c.rows, c.pruned)
		}
	}

	put(t, st, "t/year=2025/part-0.parquet", 0, 10, 10, nil)
	if _, err := Open(context.Background(), st, "t/", Options{}); err == nil || !strings.Contains(err.Error(), "partition directories") {
		t.Fatalf("mixed partition depth: %v", err)
	}
}

func TestPatterns(t *testing.T) {
	st := memStore(t.Name())
	put(t, st, "d/a.parquet", 0, 10, 10, nil)
	put(t, st, "d/b.parquet", 10, 10, 10, nil)
	put(t, st, "d/sub/c.parquet", 20, 10, 10, nil)
	put(t, st, "d/.hidden.parquet", 30, 10, 10, nil)
	put(t, st, "other.parquet", 40, 10, 10, nil)
	cases := []struct {
		pattern string
		files   []string
	}{
		{"d/", []string{"d/a.parquet", "d/b.parquet", "d/sub/c.parquet"}},
		{"d", []string{"d/a.parquet", "d/b.parquet", "d/sub/c.parquet"}},
		{"d/*.parquet", []string{"d/.hidden.parquet", "d/a.parquet", "d/b.parquet"}},
		{"d/[a]*", []string{"d/a.parquet"}},
		{"d/*/*.parquet", []string{"d/sub/c.parquet"}},
		{"d/b.parquet", []string{"d/b.parquet"}},
		{"", []string{"d/a.parquet", "d/b.parquet", "d/sub/c.parquet", "other.parquet"}},
	}
	for _, c := range cases {
		ds, err := Open(context.Background(), st, c.pattern, Options{})
		if err != nil {
			t.Errorf("%q: %v", c.pattern, err)
			continue
		}
		var got []string
		for _, f := range ds.Files() {
			got = append(got, f.Key)
		}
		if strings.Join(got, " ") != strings.Join(c.files, " ") {
			t.Errorf("%q: %v, want %v", c.pattern, got, c.files)
		}
	}
	for _, p := range []string{"nothing/", "d/*.csv", "d/a"} {
		_, err := Open(context.Background(), st, p, Options{})
		var nf *NoFilesError
		if !errors.As(err, &nf) || !errors.Is(err, store.ErrNotFound) || err.Error() != "no parquet files under mem://"+t.Name()+"/"+p {
			t.Errorf("%q: %v", p, err)
		}
	}
	if _, err := Open(context.Background(), st, "d/[", Options{}); err == nil || store.KindOf(err) != store.KindInvalid {
		t.Errorf("bad glob: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	st := memStore(t.Name())
	put(t, st, "d/a.parquet", 0, 10, 10, nil)
	cases := []struct {
		opts   Options
		want   string
		column bool // a *expr.ColumnError
		pos    int  // of an *expr.Error, or 0
	}{
		{Options{Columns: []string{"nope"}}, `scan mem://TestOpenErrors/d/: no column "nope" (columns: a, s)`, true, 0},
		{Options{Columns: []string{"a", "a"}}, "asked for twice", false, 0},
		{Options{Filter: "a <"}, `filter at position 4 of "a <": expected a value, found the end`, false, 4},
		{Options{Filter: "b = 1"}, `filter at position 1 of "b = 1": no column "b" (columns: a, s)`, true, 1},
		{Options{Filter: "a = 'x'"}, `cannot compare an integer with a string`, false, 3},
		{Options{Filter: "s > 3"}, `cannot compare a string with an integer`, false, 3},
		{Options{Filter: "a + 1"}, `not a condition`, false, 3},
	}
	for _, c := range cases {
		_, err := Open(context.Background(), st, "d/", c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.opts, err, c.want)
			continue
		}
		var ce *expr.ColumnError
		if errors.As(err, &ce) != c.column {
			t.Errorf("%+v: %v: a column error %v, want %v", c.opts, err, !c.column, c.column)
		}
		var ee *expr.Error
		if c.pos > 0 && (!errors.As(err, &ee) || ee.Pos != c.pos) {
			t.Errorf("%+v: %v: want an *expr.Error at %d", c.opts, err, c.pos)
		}
	}
}

func TestSchemaMismatch(t *testing.T) {
	st := memStore(t.Name())
	put(t, st, "d/a.parquet", 0, 10, 10, nil)
	// b.parquet has a as a string.
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.BinaryTypes.String}}, nil)
	bld := array.NewStringBuilder(mem)
	bld.Append("x")
	arr := bld.NewArray()
	rec := array.NewRecordBatch(sc, []arrow.Array{arr}, 1)
	var buf bytes.Buffer
	w, _ := pqarrow.NewFileWriter(sc, &buf, nil, pqarrow.DefaultWriterProps())
	_ = w.Write(rec)
	_ = w.Close()
	rec.Release()
	arr.Release()
	bld.Release()
	if _, err := st.Put(context.Background(), "d/b.parquet", &buf, store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), st, "d/", Options{})
	want := "scan mem://" + t.Name() + "/d/b.parquet: column a is utf8, but int64 in mem://" + t.Name() + "/d/a.parquet"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	// Reading only s, which b.parquet lacks:
	_, err = Open(context.Background(), st, "d/", Options{Columns: []string{"s"}})
	if err == nil || !strings.Contains(err.Error(), "b.parquet: no column s") {
		t.Fatalf("got %v", err)
	}
}

// TestLargeFooter: a footer over the first suffix read takes a second read
// of exactly the rest, and later files start with a larger guess.
func TestLargeFooter(t *testing.T) {
	st := memStore(t.Name())
	big := map[string]string{"blob": strings.Repeat("0123456789", 20_000)} // ~200 KB of metadata
	var files [][]byte
	for i, k := range []string{"d/a.parquet", "d/b.parquet", "d/c.parquet"} {
		files = append(files, put(t, st, k, i*100, 100, 30, big))
	}
	want := reference(t, files, nil, nil)
	got, stats := scanAll(t, st, "d/", Options{Mem: checked(t), Concurrency: 1, maxWhole: -1})
	if got.String() != want.String() {
		t.Fatalf("scan:      %v\nreference: %v", got, want)
	}
	footerReads := stats.Requests - 1 - stats.Fetch.Requests - stats.Fallbacks
	if footerReads < 4 || footerReads > 6 {
		t.Fatalf("%d footer reads for 3 files with ~200 KB footers", footerReads)
	}
}

func TestEmptyResults(t *testing.T) {
	st := memStore(t.Name())
	put(t, st, "d/a.parquet", 0, 100, 30, nil)
	put(t, st, "d/b.parquet", 100, 100, 30, nil)
	ds, err := Open(context.Background(), st, "d/", Options{Mem: checked(t), Filter: "a > 1000"})
	if err != nil {
		t.Fatal(err)
	}
	if ds.RowGroups() != 0 || ds.Schema().NumFields() != 2 {
		t.Fatalf("%d row groups, schema %v", ds.RowGroups(), ds.Schema())
	}
	s := ds.Scan(context.Background())
	defer s.Close()
	if s.Next() {
		t.Fatal("a batch from a fully pruned dataset")
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.RowGroupsPruned != 8 || st.Rows != 0 || st.Fetch.Requests != 0 || st.FirstBatch != 0 {
		t.Fatalf("%+v", st)
	}
}

// TestFallbackReads: a read arrow-go makes outside what was fetched is
// served by a direct read of the same version, and counted.
func TestFallbackReads(t *testing.T) {
	st, files := genStore(t, "lineitem", gen.Options{Rows: 20_000, Files: 2, Seed: 1, RowGroupRows: 5000})
	ds, err := Open(context.Background(), st, "lineitem/", Options{Mem: checked(t)})
	if err != nil {
		t.Fatal(err)
	}
	// Pretend two column chunks of every row group were not planned.
	for _, g := range ds.groups {
		g.ranges = g.ranges[2:]
		g.merged = mergeRanges(g.ranges)
	}
	s := ds.Scan(context.Background())
	defer s.Close()
	got, _ := collect(t, s)
	if want := reference(t, files, nil, nil); got.String() != want.String() {
		t.Fatalf("scan:      %v\nreference: %v", got, want)
	}
	if st := s.Stats(); st.Fallbacks != 2*int64(len(ds.groups)) {
		t.Fatalf("%d fallback reads for %d row groups", st.Fallbacks, len(ds.groups))
	}
}
