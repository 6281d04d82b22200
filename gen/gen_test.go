package gen

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"go.uber.org/goleak"

	"github.com/sluice-data/sluice/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type genFunc func(context.Context, *store.Store, string, Options) (Result, error)

var tables = []struct {
	name   string
	gen    genFunc
	schema func() *arrow.Schema
}{
	{"lineitem", Lineitem, LineitemSchema},
	{"taxi", Taxi, TaxiSchema},
}

func memStore() *store.Store { return store.New(store.NewMemDriver(), "mem://t/") }

// generate runs gen into a fresh mem store with a checked allocator and
// fails the test on error or on Arrow memory left allocated.
func generateT(t *testing.T, gen genFunc, opts Options) (*store.Store, Result) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	opts.Mem = mem
	st := memStore()
	res, err := gen(context.Background(), st, "ds", opts)
	if err != nil {
		t.Fatal(err)
	}
	return st, res
}

func digests(t *testing.T, st *store.Store, res Result) map[string][sha256.Size]byte {
	t.Helper()
	out := map[string][sha256.Size]byte{}
	for _, f := range res.Files {
		data, err := st.ReadAll(context.Background(), f.Key)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data)) != f.Bytes {
			t.Fatalf("%s: %d bytes stored, Result says %d", f.Key, len(data), f.Bytes)
		}
		out[f.Key] = sha256.Sum256(data)
	}
	return out
}

func TestDeterministic(t *testing.T) {
	for _, tb := range tables {
		t.Run(tb.name, func(t *testing.T) {
			opts := Options{Rows: 30_001, Files: 3, Seed: 42, RowGroupRows: 4_000}
			opts.Concurrency = 1
			st1, r1 := generateT(t, tb.gen, opts)
			opts.Concurrency = 2
			st2, r2 := generateT(t, tb.gen, opts)
			a, b := digests(t, st1, r1), digests(t, st2, r2)
			if len(a) != 3 || len(b) != 3 {
				t.Fatalf("got %d and %d files, want 3", len(a), len(b))
			}
			for k, d := range a {
				if b[k] != d {
					t.Errorf("%s differs between Concurrency 1 and 2", k)
				}
			}

			opts.Seed = 43
			st3, r3 := generateT(t, tb.gen, opts)
			c := digests(t, st3, r3)
			for k, d := range a {
				if c[k] == d {
					t.Errorf("%s is the same for seeds 42 and 43", k)
				}
			}
		})
	}
}

// parquetFile is one generated file opened for reading.
type parquetFile struct {
	rdr *file.Reader
	fr  *pqarrow.FileReader
}

func openParquet(t *testing.T, mem memory.Allocator, st *store.Store, key string) *parquetFile {
	t.Helper()
	data, err := st.ReadAll(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(data), file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	t.Cleanup(func() { rdr.Close() })
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 16 << 10}, mem)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return &parquetFile{rdr: rdr, fr: fr}
}

// eachBatch calls fn with every batch of row group rg.
func (p *parquetFile) eachBatch(t *testing.T, rg int, fn func(arrow.RecordBatch)) {
	t.Helper()
	rr, err := p.fr.GetRecordReader(context.Background(), nil, []int{rg})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	for rr.Next() {
		fn(rr.RecordBatch())
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
}

// checkLayout checks what every generated dataset shares: the schema
// readers see, row counts per file and the number of row groups.
func checkLayout(t *testing.T, mem memory.Allocator, st *store.Store, res Result, opts Options, schema *arrow.Schema, minRowGroups int) []*parquetFile {
	t.Helper()
	if len(res.Files) != opts.Files || res.Rows != opts.Rows {
		t.Fatalf("Result has %d files, %d rows; want %d, %d", len(res.Files), res.Rows, opts.Files, opts.Rows)
	}
	objs, err := st.List(context.Background(), "ds/")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != opts.Files {
		t.Fatalf("store holds %d objects, want %d", len(objs), opts.Files)
	}
	var files []*parquetFile
	var total int64
	for i, f := range res.Files {
		if want := store.Join("ds", partName(i)); f.Key != want {
			t.Errorf("file %d is %q, want %q", i, f.Key, want)
		}
		p := openParquet(t, mem, st, f.Key)
		got, err := p.fr.Schema()
		if err != nil {
			t.Fatal(err)
		}
		if !sameFields(got, schema) {
			t.Fatalf("%s: schema\n%v\nwant\n%v", f.Key, got, schema)
		}
		if n := p.rdr.NumRows(); n != f.Rows {
			t.Errorf("%s: %d rows, Result says %d", f.Key, n, f.Rows)
		}
		if n := p.rdr.NumRowGroups(); n < minRowGroups {
			t.Errorf("%s: %d row groups, want >= %d", f.Key, n, minRowGroups)
		}
		total += f.Rows
		files = append(files, p)
	}
	if total != opts.Rows {
		t.Errorf("files hold %d rows, want %d", total, opts.Rows)
	}
	return files
}

func partName(i int) string { return fmt.Sprintf("part-%05d.parquet", i) }

// sameFields compares names, types and nullability; readers add field
// metadata (PARQUET:field_id) that the generator's schema does not carry.
func sameFields(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || fa.Nullable != fb.Nullable || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}
