package scan

import (
	"bytes"
	"context"
	"fmt"
	"hash"
	"hash/fnv"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"go.uber.org/goleak"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func memStore(name string) *store.Store { return store.New(store.NewMemDriver(), "mem://"+name+"/") }

// checked returns an allocator that fails the test if anything allocated
// through it is still held when the test ends.
func checked(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// sums is an order-sensitive checksum of each column's values (as arrow
// formats them), with the row count.
type sums struct {
	rows int64
	cols map[string]uint64
}

func (s sums) String() string {
	names := make([]string, 0, len(s.cols))
	for n := range s.cols {
		names = append(names, n)
	}
	slices.Sort(names)
	out := fmt.Sprintf("%d rows", s.rows)
	for _, n := range names {
		out += fmt.Sprintf(" %s:%016x", n, s.cols[n])
	}
	return out
}

type summer struct {
	rows int64
	h    map[string]hash.Hash64
	// keep, when set, says whether row i of a record is part of the result.
	keep func(rec arrow.RecordBatch, i int) bool
}

func newSummer() *summer { return &summer{h: map[string]hash.Hash64{}} }

func (s *summer) add(rec arrow.RecordBatch) {
	n := int(rec.NumRows())
	rows := make([]int, 0, n)
	for i := 0; i < n; i++ {
		if s.keep == nil || s.keep(rec, i) {
			rows = append(rows, i)
		}
	}
	s.rows += int64(len(rows))
	for c, f := range rec.Schema().Fields() {
		col := rec.Column(c)
		h := s.h[f.Name]
		if h == nil {
			h = fnv.New64a()
			s.h[f.Name] = h
		}
		for _, i := range rows {
			h.Write([]byte(col.ValueStr(i)))
			h.Write([]byte{0})
		}
	}
}

func (s *summer) sums() sums {
	out := sums{rows: s.rows, cols: map[string]uint64{}}
	empty := fnv.New64a().Sum64()
	for n, h := range s.h {
		if v := h.Sum64(); v != empty { // no rows: as if no batch had the column
			out.cols[n] = v
		}
	}
	return out
}

// collect drains a scan, sorts its batches into dataset order, checks
// their positions, and sums them.
func collect(t testing.TB, s *Scanner) (sums, []Position) {
	t.Helper()
	got, err := drain(s)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer releaseBatches(got)
	sum := newSummer()
	var pos []Position
	for i, b := range got {
		if i > 0 && got[i-1].Pos.File == b.Pos.File && got[i-1].Pos.RowGroup == b.Pos.RowGroup {
			if got[i-1].Pos.Last {
				t.Fatalf("batch %+v follows the last batch of its row group", b.Pos)
			}
		} else if i > 0 && !got[i-1].Pos.Last {
			t.Fatalf("row group of batch %+v has no last batch", got[i-1].Pos)
		}
		if !b.Schema().Equal(s.ds.Schema()) {
			t.Fatalf("batch schema %v, dataset schema %v", b.Schema(), s.ds.Schema())
		}
		sum.add(b.RecordBatch)
		pos = append(pos, b.Pos)
	}
	if n := len(got); n > 0 && !got[n-1].Pos.Last {
		t.Fatalf("row group of batch %+v has no last batch", got[n-1].Pos)
	}
	return sum.sums(), pos
}

// scanAll opens and scans a dataset, returning its sums and stats.
func scanAll(t testing.TB, st *store.Store, pattern string, opts Options) (sums, Stats) {
	t.Helper()
	ds, err := Open(context.Background(), st, pattern, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	s := ds.Scan(context.Background())
	defer s.Close()
	sum, _ := collect(t, s)
	return sum, s.Stats()
}

// reference reads each file with pqarrow.ReadTable, the way arrow-go
// reads a file on its own, and sums the given columns (all when nil) of
// the rows keep accepts.
func reference(t testing.TB, files [][]byte, columns []string, keep func(arrow.RecordBatch, int) bool) sums {
	t.Helper()
	sum := newSummer()
	for _, data := range files {
		tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), parquet.NewReaderProperties(memory.DefaultAllocator),
			pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatalf("reference read: %v", err)
		}
		full := tableRecord(tbl)
		tbl.Release()
		if keep != nil {
			sum.keep = func(_ arrow.RecordBatch, i int) bool { return keep(full, i) }
		}
		rec := full
		if columns != nil {
			full.Retain()
			rec = project(full, columns)
		}
		sum.add(rec)
		rec.Release()
		full.Release()
	}
	return sum.sums()
}

// tableRecord concatenates a table's chunks into one record.
func tableRecord(tbl arrow.Table) arrow.RecordBatch {
	cols := make([]arrow.Array, tbl.NumCols())
	for i := range cols {
		c := tbl.Column(i).Data()
		if len(c.Chunks()) == 1 {
			cols[i] = c.Chunk(0)
			cols[i].Retain()
			continue
		}
		a, err := array.Concatenate(c.Chunks(), memory.DefaultAllocator)
		if err != nil {
			panic(err)
		}
		cols[i] = a
	}
	rec := array.NewRecordBatch(tbl.Schema(), cols, tbl.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// project keeps the named columns of rec, in that order, releasing rec.
func project(rec arrow.RecordBatch, columns []string) arrow.RecordBatch {
	defer rec.Release()
	fields := make([]arrow.Field, len(columns))
	cols := make([]arrow.Array, len(columns))
	for i, name := range columns {
		j := rec.Schema().FieldIndices(name)[0]
		fields[i], cols[i] = rec.Schema().Field(j), rec.Column(j)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

// genStore makes a generated dataset in a fresh mem store and returns the
// store and the bytes of its files, in key order.
func genStore(t testing.TB, table string, opts gen.Options) (*store.Store, [][]byte) {
	t.Helper()
	st := memStore(t.Name())
	var res gen.Result
	var err error
	switch table {
	case "lineitem":
		res, err = gen.Lineitem(context.Background(), st, table, opts)
	default:
		res, err = gen.Taxi(context.Background(), st, table, opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	var files [][]byte
	for _, f := range res.Files {
		data, err := st.ReadAll(context.Background(), f.Key)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, data)
	}
	return st, files
}

// drain reads a scan to its end and returns its batches in dataset
// order, for the caller to release; on an error it releases what it read.
func drain(s *Scanner) ([]Batch, error) {
	var got []Batch
	for s.Next() {
		got = append(got, s.Batch())
	}
	if err := s.Err(); err != nil {
		releaseBatches(got)
		return nil, err
	}
	sortBatches(got)
	return got, nil
}

func releaseBatches(bs []Batch) {
	for _, b := range bs {
		b.Release()
	}
}

// sortBatches puts batches in dataset order.
func sortBatches(bs []Batch) {
	slices.SortFunc(bs, func(a, b Batch) int {
		if c := a.Pos.File - b.Pos.File; c != 0 {
			return c
		}
		if c := a.Pos.RowGroup - b.Pos.RowGroup; c != 0 {
			return c
		}
		return a.Pos.Batch - b.Pos.Batch
	})
}
