// Package icebergtest writes an Iceberg table with apache/iceberg-go, for
// tests of sluice's reader, and reads each of its snapshots with
// iceberg-go's own reader, to compare against. Only tests import it, so
// iceberg-go is in no sluice binary.
package icebergtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hadoop"
	icetable "github.com/apache/iceberg-go/table"
)

// Step is a snapshot of the fixture table: what iceberg-go's own
// reader reads of it, and of it filtered.
type Step struct {
	What     string
	ID       int64
	At       time.Time
	Metadata string              // the snapshot's metadata file
	Rows     []string            // iceberg-go's rows of the snapshot by id, sorted (NamedRows)
	Filtered map[string][]string // of Rows, by sluice filter text
	// Current is iceberg-go's reading of the table as Metadata leaves it:
	// the current snapshot with the current schema.
	Current []string
}

// filters are the filters each step is read with, in sluice's
// language, iceberg-go's, and as a test of a row's printed values.
var filters = map[string]struct {
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

// rowValues reads a row printed by NamedRows back.
func rowValues(row string) map[string]string {
	m := map[string]string{}
	for _, cell := range strings.Fields(row) {
		k, v, _ := strings.Cut(cell, "=")
		m[k] = v
	}
	return m
}

// Fixture writes a table through iceberg-go (a Hadoop catalog over
// a directory): appends to two partitions, a merge-on-read delete
// (position deletes), an equality delete, then a schema change (a column
// dropped, one renamed, one promoted from int to long, one added, and
// the dropped column's name given to a new one) and rows written under
// the new schema. It returns each snapshot with iceberg-go's reading of it.
func Fixture(t testing.TB, dir string) []Step {
	t.Helper()
	ctx := context.Background()
	cat := newCatalog(t, ctx, "fixture", dir)
	sc := ice.NewSchema(0,
		ice.NestedField{ID: 1, Name: "id", Type: ice.PrimitiveTypes.Int64, Required: true},
		ice.NestedField{ID: 2, Name: "name", Type: ice.PrimitiveTypes.String},
		ice.NestedField{ID: 3, Name: "n", Type: ice.PrimitiveTypes.Int32},
		ice.NestedField{ID: 4, Name: "region", Type: ice.PrimitiveTypes.String},
	)
	spec := ice.NewPartitionSpec(ice.PartitionField{SourceIDs: []int{4}, FieldID: 1000, Name: "region", Transform: ice.IdentityTransform{}})
	tbl, err := cat.CreateTable(ctx, icetable.Identifier{"db", "t"}, sc, catalog.WithPartitionSpec(&spec),
		// Row groups of 16 rows: a file's deleted positions fall in
		// several of them.
		catalog.WithProperties(ice.Properties{icetable.WriteDeleteModeKey: icetable.WriteModeMergeOnRead, "write.parquet.row-group-limit": "16"}))
	if err != nil {
		t.Fatal(err)
	}
	var steps []Step
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
		st := Step{What: what, ID: snap.SnapshotID, At: time.UnixMilli(snap.TimestampMs), Metadata: tbl.MetadataLocation(), Filtered: map[string][]string{}}
		st.Rows = icebergGoRows(t, tbl, snap.SnapshotID, nil)
		st.Current = icebergGoRows(t, tbl, 0, nil)
		for text, f := range filters {
			if _, ok := tbl.Schema().FindFieldByName(strings.Fields(text)[0]); !ok {
				continue
			}
			var want []string
			for _, r := range st.Rows {
				if f.keep(rowValues(r)) {
					want = append(want, r)
				}
			}
			// iceberg-go's own filtered read agrees, where it can read
			// (v0.7.0 fails on the bounds of a column promoted to long).
			if got, err := icebergGoRowsErr(tbl, snap.SnapshotID, f.ice); err == nil && !slices.Equal(got, want) {
				t.Fatalf("%s: iceberg-go filtered by %q reads %d rows, its whole read filtered %d", what, text, len(got), len(want))
			}
			st.Filtered[text] = want
		}
		steps = append(steps, st)
		// Snapshot times are in milliseconds: keep them apart.
		time.Sleep(time.Until(time.UnixMilli(snap.TimestampMs + 1)))
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
			{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"2"})},
			{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"4"})},
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
	commit("schema: label dropped, which the equality delete compares", func(tx *icetable.Transaction) error {
		return tx.UpdateSchema(true, false).DeleteColumn([]string{"label"}).Commit()
	})
	return steps
}

// icebergGoRows reads a snapshot with iceberg-go, as sorted rows of
// text by column name.
func icebergGoRows(t testing.TB, tbl *icetable.Table, id int64, filter ice.BooleanExpression) []string {
	t.Helper()
	rows, err := icebergGoRowsErr(tbl, id, filter)
	if err != nil {
		t.Fatalf("iceberg-go's scan of snapshot %d: %v", id, err)
	}
	return rows
}

func icebergGoRowsErr(tbl *icetable.Table, id int64, filter ice.BooleanExpression) ([]string, error) {
	var opts []icetable.ScanOption
	if id != 0 {
		opts = append(opts, icetable.WithSnapshotID(id))
	}
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
		rows = append(rows, NamedRows(tr.RecordBatch())...)
	}
	slices.Sort(rows)
	return rows, nil
}

// NamedRows prints each row as name=value pairs in column name order, so
// that readers that order or type columns alike print alike.
func NamedRows(rec arrow.RecordBatch) []string {
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

// RESTCatalog serves tables (NAMESPACE.TABLE to a metadata file) as an
// Iceberg REST catalog does, per the REST OpenAPI: a configuration whose
// prefix names the warehouse, OAuth2 client credentials (id and secret)
// for a bearer token every other request needs, and LoadTable with the
// metadata inline. There is no REST catalog server to run here (they are
// JVM or container services), so this is the API's shape, not one
// vendor's behaviour.
func RESTCatalog(t testing.TB, tables map[string]string, id, secret string) *httptest.Server {
	t.Helper()
	token := "token-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	fail := func(w http.ResponseWriter, code int, typ, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}})
	}
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/oauth/tokens", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("grant_type") != "client_credentials" || r.FormValue("client_id") != id || r.FormValue("client_secret") != secret {
			fail(w, http.StatusUnauthorized, "NotAuthorizedException", "invalid client credentials")
			return
		}
		reply(w, map[string]any{"access_token": token, "token_type": "bearer", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
	})
	authed := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+token {
				fail(w, http.StatusUnauthorized, "NotAuthorizedException", "not authorized")
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("GET /v1/config", authed(func(w http.ResponseWriter, r *http.Request) {
		overrides := map[string]string{}
		if w := r.URL.Query().Get("warehouse"); w != "" {
			overrides["prefix"] = "ws/" + w
		}
		reply(w, map[string]any{"defaults": map[string]string{}, "overrides": overrides})
	}))
	load := authed(func(w http.ResponseWriter, r *http.Request) {
		ident := strings.ReplaceAll(r.PathValue("ns"), "\x1f", ".") + "." + r.PathValue("table")
		loc, ok := tables[ident]
		if !ok {
			fail(w, http.StatusNotFound, "NoSuchTableException", "Table does not exist: "+ident)
			return
		}
		md, err := os.ReadFile(loc)
		if err != nil {
			fail(w, http.StatusInternalServerError, "ServerError", err.Error())
			return
		}
		reply(w, map[string]any{"metadata-location": loc, "metadata": json.RawMessage(md), "config": map[string]string{}})
	})
	mux.HandleFunc("GET /v1/ws/{warehouse}/namespaces/{ns}/tables/{table}", load)
	mux.HandleFunc("GET /v1/namespaces/{ns}/tables/{table}", load)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// Migrated is a table whose first data files were brought in as they
// were (add_files, as a migration from Hive does): they lack the column
// the table is partitioned by (identity), whose value is their
// partition's, in the manifest. A column added since with an initial
// default (format 3) is that default in every file written before it.
type Migrated struct {
	Location, Metadata string
	// Want is the table's rows as the Iceberg spec reads them (NamedRows,
	// sorted): a migrated file's region its partition value (eu, us, or
	// null for the file in the null partition), score 7 (the initial
	// default) in every row written before score was added.
	Want []string
	// IcebergGo is iceberg-go's own reading of the table, sorted; it
	// fills the initial default but not the partition values (v0.7.0).
	IcebergGo []string
}

// newCatalog is a Hadoop catalog named name over the warehouse dir, with
// the namespace db.
func newCatalog(t testing.TB, ctx context.Context, name, dir string) *hadoop.Catalog {
	t.Helper()
	cat, err := hadoop.NewCatalog(name, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, icetable.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	return cat
}

// MigratedTable writes the table Migrated describes with iceberg-go, its
// migrated files with arrow-go's Parquet writer.
func MigratedTable(t testing.TB, dir string) Migrated {
	t.Helper()
	ctx := context.Background()
	cat := newCatalog(t, ctx, "migrated", dir)
	sc := ice.NewSchema(0,
		ice.NestedField{ID: 1, Name: "id", Type: ice.PrimitiveTypes.Int64, Required: true},
		ice.NestedField{ID: 2, Name: "name", Type: ice.PrimitiveTypes.String},
		ice.NestedField{ID: 3, Name: "region", Type: ice.PrimitiveTypes.String},
	)
	spec := ice.NewPartitionSpec(ice.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "region", Transform: ice.IdentityTransform{}})
	tbl, err := cat.CreateTable(ctx, icetable.Identifier{"db", "m"}, sc, catalog.WithPartitionSpec(&spec),
		catalog.WithProperties(ice.Properties{icetable.PropertyFormatVersion: "3"}))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	row := func(id int64, name, region, score string) string {
		return fmt.Sprintf("id=%d name=%s region=%s score=%s", id, name, region, score)
	}
	// The migrated files: id and name, with their field ids, no region.
	fileSchema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"2"})},
	}, nil)
	var files []ice.DataFile
	for i, region := range []any{"eu", "us", nil} {
		path := fmt.Sprintf("%s/data/migrated-%d.parquet", tbl.Location(), i)
		b := array.NewRecordBuilder(memory.DefaultAllocator, fileSchema)
		for j := range 4 {
			id := int64(10*i + j)
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("m%d", id))
			r := "(null)"
			if region != nil {
				r = region.(string)
			}
			want = append(want, row(id, fmt.Sprintf("m%d", id), r, "7"))
		}
		rec := b.NewRecordBatch()
		b.Release()
		if err := os.MkdirAll(strings.TrimPrefix(tbl.Location(), "file://")+"/data", 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(strings.TrimPrefix(path, "file://"))
		if err != nil {
			t.Fatal(err)
		}
		w, err := pqarrow.NewFileWriter(fileSchema, f, nil, pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		fi, err := os.Stat(strings.TrimPrefix(path, "file://"))
		if err != nil {
			t.Fatal(err)
		}
		df, err := ice.NewDataFileBuilder(spec, ice.EntryContentData, path, ice.ParquetFile,
			map[int]any{1000: region}, nil, nil, 4, fi.Size())
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, df.FirstRowID(int64(4*i)).Build())
	}
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(ctx, files, nil); err != nil {
		t.Fatalf("add the migrated files: %v", err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// A column added with an initial default, then rows that have it.
	tx = tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"score"}, ice.PrimitiveTypes.Int64, "", false, ice.NewLiteral(int64(7))).Commit(); err != nil {
		t.Fatalf("add score: %v", err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	asc, err := icetable.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	for id := int64(100); id < 104; id++ {
		region := []string{"eu", "ap"}[id%2]
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("a%d", id))
		b.Field(2).(*array.StringBuilder).Append(region)
		b.Field(3).(*array.Int64Builder).Append(id * 2)
		want = append(want, row(id, fmt.Sprintf("a%d", id), region, strconv.FormatInt(id*2, 10)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
	defer at.Release()
	tx = tbl.NewTransaction()
	if err := tx.AppendTable(ctx, at, 4, nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	return Migrated{Location: tbl.Location(), Metadata: tbl.MetadataLocation(), Want: want, IcebergGo: icebergGoRows(t, tbl, 0, nil)}
}
