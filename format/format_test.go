package format_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	acsv "github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/internal/arrowtest"
	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOfAndParse(t *testing.T) {
	for _, f := range format.Formats() {
		sufs := f.Suffixes()
		if len(sufs) == 0 {
			t.Fatalf("%v has no suffix", f)
		}
		for _, s := range sufs {
			for _, name := range []string{"out" + s, "s3://b/dir/OUT" + strings.ToUpper(s)} {
				if got, err := format.Of(name); err != nil || got != f {
					t.Errorf("Of(%q) = %v, %v; want %v", name, got, err, f)
				}
			}
			if got, err := format.Parse(s[1:]); err != nil || got != f {
				t.Errorf("Parse(%q) = %v, %v; want %v", s[1:], got, err, f)
			}
		}
		if got, err := format.Parse(f.Name()); err != nil || got != f {
			t.Errorf("Parse(%q) = %v, %v; want %v", f.Name(), got, err, f)
		}
		if got, err := format.Choose("x.unknown", f.Name()); err != nil || got != f {
			t.Errorf("Choose(x.unknown, %q) = %v, %v", f.Name(), got, err)
		}
	}
	if got, err := format.Choose("-", ""); err != nil || got != format.IPCStream {
		t.Errorf("Choose(-) = %v, %v; want an IPC stream", got, err)
	}
	for _, bad := range []string{"out.txt", "out", "out.parquet.tmp", "dir/"} {
		if _, err := format.Of(bad); !errors.Is(err, format.ErrUnknown) {
			t.Errorf("Of(%q): err = %v, want ErrUnknown", bad, err)
		}
	}
	if _, err := format.Parse("xlsx"); !errors.Is(err, format.ErrUnknown) {
		t.Errorf("Parse(xlsx): err = %v", err)
	}
	if !format.IPCFile.Ordered() || format.Parquet.Ordered() {
		t.Error("only the IPC file takes batches out of order")
	}
}

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// batches are two batches whose dictionaries differ, with nulls.
func batches(mem memory.Allocator) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for b, names := range [][]string{{"a", "b", ""}, {"c", "", "a"}} {
		rb := array.NewRecordBuilder(mem, schema)
		for i, n := range names {
			id := int64(b*10 + i)
			rb.Field(0).(*array.Int64Builder).Append(id)
			db := rb.Field(1).(*array.BinaryDictionaryBuilder)
			if n == "" {
				db.AppendNull()
			} else {
				_ = db.AppendString(n)
			}
			if i == 1 {
				rb.Field(2).AppendNull()
			} else {
				rb.Field(2).(*array.Float64Builder).Append(float64(id) / 4)
			}
		}
		out = append(out, rb.NewRecordBatch())
		rb.Release()
	}
	return out
}

// rows is what every format must read back: id, name (or null), x.
var rows = []string{
	`{"id":0,"name":"a","x":0}`, `{"id":1,"name":"b","x":null}`, `{"id":2,"name":null,"x":0.5}`,
	`{"id":10,"name":"c","x":2.5}`, `{"id":11,"name":null,"x":null}`, `{"id":12,"name":"a","x":3}`,
}

// checkedBatches returns batches from a checked allocator, both for the
// test to use: at its end the batches are released and the allocator
// must have every byte back.
func checkedBatches(t *testing.T) (memory.Allocator, []arrow.RecordBatch) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	recs := batches(mem)
	t.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
		mem.AssertSize(t, 0)
	})
	return mem, recs
}

// encode writes recs in format f.
func encode(t *testing.T, f format.Format, sc *arrow.Schema, mem memory.Allocator, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := format.NewWriter(&buf, f, sc, mem)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// jsonRows reads back what a format wrote as JSON lines, with an
// independent reader of each format (arrow-go's, or encoding/json).
func jsonRows(t *testing.T, f format.Format, b []byte) []string {
	t.Helper()
	var recs []arrow.RecordBatch
	keep := func(rec arrow.RecordBatch) {
		rec.Retain()
		recs = append(recs, rec)
	}
	switch f {
	case format.JSONLines:
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		for _, l := range lines {
			if !json.Valid([]byte(l)) {
				t.Fatalf("not JSON: %q", l)
			}
		}
		return lines
	case format.CSV:
		vs := arrow.NewSchema([]arrow.Field{schema.Field(0), {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}, schema.Field(2)}, nil)
		r := acsv.NewReader(bytes.NewReader(b), vs, acsv.WithHeader(true), acsv.WithNullReader(true, ""))
		defer r.Release()
		for r.Next() {
			keep(r.RecordBatch())
		}
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
	default:
		arrowtest.ReadBatches(t, b, f.Name(), keep)
	}
	var out []string
	for _, rec := range recs {
		js := encode(t, format.JSONLines, rec.Schema(), nil, rec)
		rec.Release()
		out = append(out, strings.Split(strings.TrimSuffix(string(js), "\n"), "\n")...)
	}
	return out
}

// TestRoundTrip: every format reads back, with an independent reader,
// the rows written (dictionaries that change between batches, nulls),
// and writing the same batches twice gives the same bytes.
func TestRoundTrip(t *testing.T) {
	for _, f := range format.Formats() {
		t.Run(f.Name(), func(t *testing.T) {
			mem, recs := checkedBatches(t)
			b := encode(t, f, schema, mem, recs...)
			mem2, recs2 := checkedBatches(t) // equal batches, built again
			if again := encode(t, f, schema, mem2, recs2...); !bytes.Equal(b, again) {
				t.Error("the same batches gave different bytes")
			}
			got := jsonRows(t, f, b)
			if strings.Join(got, "\n") != strings.Join(rows, "\n") {
				t.Errorf("read back:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(rows, "\n"))
			}
		})
	}
}

// An IPC file lists batches by key whatever order they were written in.
func TestWriteAtOrdersTheFooter(t *testing.T) {
	mem, recs := checkedBatches(t)
	var buf bytes.Buffer
	w, err := format.NewWriter(&buf, format.IPCFile, schema, mem)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteAt(recs[1], format.Key{0, 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteAt(recs[0], format.Key{0, 1, 5}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := jsonRows(t, format.IPCFile, buf.Bytes()); strings.Join(got, "\n") != strings.Join(rows, "\n") {
		t.Errorf("read back %v, want %v", got, rows)
	}
	pw, err := format.NewWriter(&bytes.Buffer{}, format.Parquet, schema, mem)
	if err != nil {
		t.Fatal(err)
	}
	if err := pw.WriteAt(recs[0], format.Key{1}); !errors.Is(err, format.ErrOrder) {
		t.Errorf("Parquet WriteAt: err = %v, want ErrOrder", err)
	}
	pw.Abort()
}

// TestFailedWrite: an error of the underlying writer is the writer's
// error (at the write or at Close, never lost), nothing is written after
// it, and the encoder's memory is freed; an aborted or failed Object
// leaves no file, not even a temporary one.
func TestFailedWrite(t *testing.T) {
	boom := errors.New("disk full")
	for _, f := range format.Formats() {
		t.Run(f.Name(), func(t *testing.T) {
			mem, recs := checkedBatches(t)
			fw := &arrowtest.FailAfter{N: 20, Err: boom}
			w, err := format.NewWriter(fw, f, schema, mem)
			if err != nil {
				t.Fatal(err)
			}
			var werr error
			for _, r := range recs {
				if werr = w.Write(r); werr != nil {
					break
				}
			}
			if werr == nil {
				werr = w.Close()
			} else {
				w.Abort()
			}
			if !errors.Is(werr, boom) {
				t.Errorf("err = %v, want %v", werr, boom)
			}

			dir := t.TempDir()
			st, _, err := store.Open(context.Background(), dir, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for _, fail := range []bool{false, true} {
				o, err := format.Create(context.Background(), st, "out"+f.Suffixes()[0], f, schema, mem)
				if err != nil {
					t.Fatal(err)
				}
				if err := o.Write(recs[0]); err != nil {
					t.Fatal(err)
				}
				if fail {
					// A batch of another schema: the encoder's error.
					other := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 0)
					_ = o.Write(other)
					other.Release()
				}
				o.Abort()
				if ents, _ := os.ReadDir(dir); len(ents) != 0 {
					t.Errorf("after Abort the directory holds %v", ents[0].Name())
				}
			}
		})
	}
}

// A directory is not an object; CSV refuses nested columns up front.
func TestRefusals(t *testing.T) {
	st, _, err := store.Open(context.Background(), t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ne *format.NotObjectError
	if _, err := format.Create(context.Background(), st, "dir/", format.Parquet, schema, nil); !errors.As(err, &ne) {
		t.Errorf("Create(dir/): err = %v, want a NotObjectError", err)
	}
	nested := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil)
	if _, err := format.NewWriter(&bytes.Buffer{}, format.CSV, nested, nil); err == nil || !strings.Contains(err.Error(), `"l"`) {
		t.Errorf("CSV of a list column: err = %v", err)
	}
}

// An object written through a link that answers 503 SlowDown to many
// requests still arrives: Create retries every request of the upload.
func TestCreateRetriesRequests(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	recs := batches(mem)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for seed := range uint64(10) {
		p, err := sim.Parse(fmt.Sprintf("none,slowdown=0.4,seed=%d", seed))
		if err != nil {
			t.Fatal(err)
		}
		st, key, err := sim.Open(context.Background(), "mem://retries/out.arrows", store.Options{}, p)
		if err != nil {
			t.Fatal(err)
		}
		o, err := format.Create(context.Background(), st, key, format.IPCStream, schema, mem)
		if err == nil {
			if err = o.Write(recs[0]); err == nil {
				err = o.Close()
			} else {
				o.Abort()
			}
		}
		if err != nil {
			t.Errorf("seed %d: %v", seed, err)
		} else if err := (retry.Policy{}).Do(context.Background(), func() error {
			_, err := st.Stat(context.Background(), key)
			return err
		}); err != nil {
			t.Errorf("seed %d: the object: %v", seed, err)
		}
		st.Close()
	}
}

// TestJSONDecimals: a decimal is a JSON number with every digit of its
// scale, as DuckDB writes it, so 12.50 stays 12.50 and reads as a number.
func TestJSONDecimals(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sc := arrow.NewSchema([]arrow.Field{{Name: "p", Type: &arrow.Decimal128Type{Precision: 15, Scale: 2}, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(0).(*array.Decimal128Builder).AppendValues([]decimal128.Num{decimal128.FromI64(1250), decimal128.FromI64(-5), {}}, []bool{true, true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()
	got := string(encode(t, format.JSONLines, sc, mem, rec))
	if want := "{\"p\":12.50}\n{\"p\":-0.05}\n{\"p\":null}\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("not JSON: %s", line)
		}
	}
}
