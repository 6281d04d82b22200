package exec

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hadoop"
	icetable "github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/scan"
)

// icebergStep is a snapshot of the fixture table: what iceberg-go's own
// reader reads of it, and of it filtered.
type icebergStep struct {
	what     string
	id       int64
	at       time.Time
	metadata string
	rows     []string            // iceberg-go's rows, sorted
	filtered map[string][]string // by sluice filter text
}

// icebergFilters are the filters each step is read with, in sluice's
// language, iceberg-go's, and as a test of a row's printed values.
var icebergFilters = map[string]struct {
	ice  ice.BooleanExpression
	keep func(row map[string]string) bool
}{
	"id < 40":       {ice.LessThan(ice.Reference("id"), int64(40)), func(r map[string]string) bool { return atoi(r["id"]) < 40 }},
	"region = 'eu'": {ice.EqualTo(ice.Reference("region"), "eu"), func(r map[string]string) bool { return r["region"] == "eu" }},
	"n >= 1200": {ice.GreaterThanEqual(ice.Reference("n"), int64(1200)), func(r map[string]string) bool {
		return r["n"] != "(null)" && atoi(r["n"]) >= 1200
	}},
	// Before the schema change name is field 2; after, field 6, and the
	// old files' column "name" is not it: their statistics must not prune.
	"name is null":    {ice.IsNull(ice.Reference("name")), func(r map[string]string) bool { return r["name"] == "(null)" }},
	"name = 'late-3'": {ice.EqualTo(ice.Reference("name"), "late-3"), func(r map[string]string) bool { return r["name"] == "late-3" }},
}

func atoi(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("not a number in a fixture row: %q", s))
	}
	return n
}

// rowValues reads a row printed by namedRows back.
func rowValues(row string) map[string]string {
	m := map[string]string{}
	for _, cell := range strings.Fields(row) {
		k, v, _ := strings.Cut(cell, "=")
		m[k] = v
	}
	return m
}

// icebergFixture writes a table through iceberg-go (a Hadoop catalog over
// a directory): appends to two partitions, a merge-on-read delete
// (position deletes), an equality delete, then a schema change (a column
// dropped, one renamed, one promoted from int to long, one added, and
// the dropped column's name given to a new one) and rows written under
// the new schema. It returns each snapshot with iceberg-go's reading of it.
func icebergFixture(t *testing.T, dir string) (*icetable.Table, []icebergStep) {
	t.Helper()
	ctx := context.Background()
	cat, err := hadoop.NewCatalog("fixture", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, icetable.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	sc := ice.NewSchema(0,
		ice.NestedField{ID: 1, Name: "id", Type: ice.PrimitiveTypes.Int64, Required: true},
		ice.NestedField{ID: 2, Name: "name", Type: ice.PrimitiveTypes.String},
		ice.NestedField{ID: 3, Name: "n", Type: ice.PrimitiveTypes.Int32},
		ice.NestedField{ID: 4, Name: "region", Type: ice.PrimitiveTypes.String},
	)
	spec := ice.NewPartitionSpec(ice.PartitionField{SourceIDs: []int{4}, FieldID: 1000, Name: "region", Transform: ice.IdentityTransform{}})
	tbl, err := cat.CreateTable(ctx, icetable.Identifier{"db", "t"}, sc, catalog.WithPartitionSpec(&spec),
		catalog.WithProperties(ice.Properties{icetable.WriteDeleteModeKey: icetable.WriteModeMergeOnRead}))
	if err != nil {
		t.Fatal(err)
	}
	var steps []icebergStep
	commit := func(what string, do func(tx *icetable.Transaction) error) {
		t.Helper()
		tx := tbl.NewTransaction()
		if err := do(tx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		snap := tbl.CurrentSnapshot()
		st := icebergStep{what: what, id: snap.SnapshotID, at: time.UnixMilli(snap.TimestampMs), metadata: tbl.MetadataLocation(), filtered: map[string][]string{}}
		st.rows = icebergGoRows(t, tbl, snap.SnapshotID, nil)
		for text, f := range icebergFilters {
			if _, ok := tbl.Schema().FindFieldByName(strings.Fields(text)[0]); !ok {
				continue
			}
			var want []string
			for _, r := range st.rows {
				if f.keep(rowValues(r)) {
					want = append(want, r)
				}
			}
			// iceberg-go's own filtered read agrees, where it can read
			// (v0.7.0 fails on the bounds of a column promoted to long).
			if got, err := icebergGoRowsErr(tbl, snap.SnapshotID, f.ice); err == nil && !slices.Equal(got, want) {
				t.Fatalf("%s: iceberg-go filtered by %q reads %d rows, its whole read filtered %d", what, text, len(got), len(want))
			}
			st.filtered[text] = want
		}
		steps = append(steps, st)
		// Snapshot times are in milliseconds: keep them apart.
		time.Sleep(5 * time.Millisecond) // the input: distinct commit times, for --as-of
	}
	appendRows := func(from, to int, name func(int) string, n func(int) int64) func(tx *icetable.Transaction) error {
		return func(tx *icetable.Transaction) error {
			asc, err := icetable.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
			if err != nil {
				return err
			}
			b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
			defer b.Release()
			for i := from; i < to; i++ {
				for j, f := range asc.Fields() {
					fb := b.Field(j)
					switch f.Name {
					case "id":
						fb.(*array.Int64Builder).Append(int64(i))
					case "name", "label":
						if i == 5 {
							fb.AppendNull()
						} else {
							fb.(*array.StringBuilder).Append(name(i))
						}
					case "n":
						switch fb := fb.(type) {
						case *array.Int32Builder:
							fb.Append(int32(n(i)))
						case *array.Int64Builder:
							fb.Append(n(i))
						}
					case "region":
						fb.(*array.StringBuilder).Append([]string{"eu", "us", "ap"}[i%3])
					case "extra":
						fb.(*array.Float64Builder).Append(float64(i) / 4)
					default:
						fb.AppendNull()
					}
				}
			}
			rec := b.NewRecordBatch()
			defer rec.Release()
			at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
			defer at.Release()
			return tx.AppendTable(ctx, at, 37, nil)
		}
	}
	name := func(i int) string { return fmt.Sprintf("n%d", i) }
	n := func(i int) int64 { return int64(i * 10) }
	commit("append 0-100", appendRows(0, 100, name, n))
	commit("append 100-150", appendRows(100, 150, name, n))
	commit("delete id % 7 = 0 (position deletes)", func(tx *icetable.Transaction) error {
		var ids []int64
		for i := int64(0); i < 150; i += 7 {
			ids = append(ids, i)
		}
		return tx.Delete(ctx, ice.IsIn(ice.Reference("id"), ids...), nil)
	})
	commit("equality delete of names n3, n10 and n101, and n4 in the wrong partition", func(tx *icetable.Transaction) error {
		// The partition column goes with the deleted values: each delete
		// file holds one partition's, and applies to that partition only.
		s := arrow.NewSchema([]arrow.Field{
			{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: arrow.NewMetadata([]string{iceberg.FieldIDKey}, []string{"2"})},
			{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: arrow.NewMetadata([]string{iceberg.FieldIDKey}, []string{"4"})},
		}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		defer b.Release()
		b.Field(0).(*array.StringBuilder).AppendValues([]string{"n3", "n10", "n101", "n4"}, nil)
		b.Field(1).(*array.StringBuilder).AppendValues([]string{"eu", "us", "ap", "ap"}, nil)
		rec := b.NewRecordBatch()
		defer rec.Release()
		return tx.CommitEqualityDeletes(ctx, []int{2}, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }, nil)
	})
	commit("schema: name renamed label, n promoted to long, extra added, a new name", func(tx *icetable.Transaction) error {
		return tx.UpdateSchema(true, false).
			RenameColumn([]string{"name"}, "label").
			UpdateColumn([]string{"n"}, icetable.ColumnUpdate{FieldType: ice.Optional[ice.Type]{Val: ice.PrimitiveTypes.Int64, Valid: true}}).
			AddColumn([]string{"extra"}, ice.PrimitiveTypes.Float64, "", false, nil).
			AddColumn([]string{"name"}, ice.PrimitiveTypes.String, "", false, nil).
			Commit()
	})
	commit("append 150-200 under the new schema", appendRows(150, 200, func(i int) string { return fmt.Sprintf("late-%d", i%5) }, func(i int) int64 { return int64(i) * 1000 }))
	return tbl, steps
}

// icebergGoRows reads a snapshot with iceberg-go, as sorted rows of
// text by column name.
func icebergGoRows(t *testing.T, tbl *icetable.Table, id int64, filter ice.BooleanExpression) []string {
	t.Helper()
	rows, err := icebergGoRowsErr(tbl, id, filter)
	if err != nil {
		t.Fatalf("iceberg-go's scan of snapshot %d: %v", id, err)
	}
	return rows
}

func icebergGoRowsErr(tbl *icetable.Table, id int64, filter ice.BooleanExpression) ([]string, error) {
	opts := []icetable.ScanOption{icetable.WithSnapshotID(id)}
	if filter != nil {
		opts = append(opts, icetable.WithRowFilter(filter))
	}
	at, err := tbl.Scan(opts...).ToArrowTable(context.Background())
	if err != nil {
		return nil, err
	}
	defer at.Release()
	tr := array.NewTableReader(at, 1<<20)
	defer tr.Release()
	var rows []string
	for tr.Next() {
		rows = append(rows, namedRows(tr.RecordBatch())...)
	}
	slices.Sort(rows)
	return rows, nil
}

// namedRows prints each row as name=value pairs in column name order, so
// that readers that order or type columns alike print alike.
func namedRows(rec arrow.RecordBatch) []string {
	names := make([]int, rec.NumCols())
	for i := range names {
		names[i] = i
	}
	slices.SortFunc(names, func(a, b int) int { return strings.Compare(rec.ColumnName(a), rec.ColumnName(b)) })
	var rows []string
	for r := range int(rec.NumRows()) {
		var cells []string
		for _, c := range names {
			cells = append(cells, rec.ColumnName(c)+"="+rec.Column(c).ValueStr(r))
		}
		rows = append(rows, strings.Join(cells, " "))
	}
	return rows
}

// TestIcebergTable reads every snapshot of the fixture, whole and
// filtered, by metadata file, by the table's location and by time, and
// checks each against iceberg-go's own reading: deletes of both kinds
// applied, columns by field id through a rename, a promotion, an added
// column and a reused name.
func TestIcebergTable(t *testing.T) {
	dir := t.TempDir()
	_, steps := icebergFixture(t, dir)
	location := filepath.Join(dir, "db", "t")
	ctx := context.Background()
	read := func(t *testing.T, url string, opts ScanOptions) []string {
		t.Helper()
		mem := checkedMem(t)
		var rows []string
		err := Run(ctx, Pipeline{Source: Scan([]string{url}, opts), Stages: []Stage{Collect(nil, func(rec arrow.RecordBatch) error {
			rows = append(rows, namedRows(rec)...)
			return nil
		})}}, Options{Open: testOpen, Mem: mem, Workers: 2})
		if err != nil {
			t.Fatalf("scan %s: %v", url, err)
		}
		slices.Sort(rows)
		return rows
	}
	for i, st := range steps {
		t.Run(fmt.Sprintf("%d %s", i, st.what), func(t *testing.T) {
			if len(st.rows) == 0 {
				t.Fatal("iceberg-go read no rows: the fixture is wrong")
			}
			// The small batches cut files into several, so that deleted
			// positions fall past the first batch of a row group.
			got := read(t, st.metadata, ScanOptions{BatchRows: 16})
			if !slices.Equal(got, st.rows) {
				t.Errorf("snapshot %d by its metadata file: %d rows, iceberg-go %d\n%s", st.id, len(got), len(st.rows), diffRows(got, st.rows))
			}
			if got := read(t, location, ScanOptions{Snapshot: st.id}); !slices.Equal(got, st.rows) {
				t.Errorf("snapshot %d by --snapshot: %d rows, iceberg-go %d", st.id, len(got), len(st.rows))
			}
			if got := read(t, location, ScanOptions{AsOf: st.at}); !slices.Equal(got, st.rows) {
				t.Errorf("snapshot %d by --as-of %s: %d rows, iceberg-go %d", st.id, st.at, len(got), len(st.rows))
			}
			for text, want := range st.filtered {
				if got := read(t, location, ScanOptions{Snapshot: st.id, Filter: text}); !slices.Equal(got, want) {
					t.Errorf("snapshot %d filtered %q: %d rows, iceberg-go %d\n%s", st.id, text, len(got), len(want), diffRows(got, want))
				}
			}
		})
	}
	// The manifests' bounds rule out files: another region's, and those
	// of the second append for ids below 40; their rows are still right.
	for _, c := range []struct {
		step   int
		filter string
	}{{1, "id < 40"}, {5, "region = 'eu'"}, {5, "n >= 1200"}} {
		var st scan.Stats
		reported := 0
		st2 := steps[c.step]
		got := read(t, st2.metadata, ScanOptions{Filter: c.filter, Stats: func(_ string, s scan.Stats) { st, reported = s, reported+1 }})
		if reported != 1 || st.FilesPruned == 0 || st.Files <= st.FilesPruned {
			t.Errorf("snapshot %d filtered %q: %d reports, %d of %d files pruned", st2.id, c.filter, reported, st.FilesPruned, st.Files)
		}
		if want := st2.filtered[c.filter]; !slices.Equal(got, want) || st.Rows != int64(len(want)) {
			t.Errorf("snapshot %d filtered %q, pruned: %d rows (stats say %d), iceberg-go %d", st2.id, c.filter, len(got), st.Rows, len(want))
		}
	}
	last := steps[len(steps)-1]
	if got := read(t, location, ScanOptions{}); !slices.Equal(got, last.rows) {
		t.Errorf("the table's location reads %d rows, its current snapshot %d", len(got), len(last.rows))
	}
	// What the bare-Parquet reading showed: deleted rows.
	deleted := 0
	for _, r := range steps[1].rows {
		if !slices.Contains(last.rows, r) && strings.Contains(r, "id=7 ") {
			deleted++
		}
	}
	if deleted == 0 && !slices.ContainsFunc(steps[1].rows, func(r string) bool { return strings.Contains(r, "id=7 ") }) {
		t.Fatal("the fixture's delete of id 7 is not there to see")
	}
	if slices.ContainsFunc(last.rows, func(r string) bool { return strings.Contains(r, "id=7 ") }) {
		t.Fatal("iceberg-go still reads id 7 after its delete")
	}
}

// diffRows is the first rows two sorted lists differ by.
func diffRows(got, want []string) string {
	var b strings.Builder
	extra, missing := 0, 0
	for _, r := range got {
		if !slices.Contains(want, r) && extra < 5 {
			fmt.Fprintf(&b, "  extra:   %s\n", r)
			extra++
		}
	}
	for _, r := range want {
		if !slices.Contains(got, r) && missing < 5 {
			fmt.Fprintf(&b, "  missing: %s\n", r)
			missing++
		}
	}
	return b.String()
}
