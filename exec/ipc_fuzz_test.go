package exec

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/store"
)

// fuzzStream is a small IPC stream of the column types stages pass on:
// integers, floats, strings, dates and a dictionary, with nulls.
func fuzzStream(f *testing.F) []byte {
	mem := memory.NewGoAllocator()
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "k", Type: dictType},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	var recs []arrow.RecordBatch
	for batch := range 2 {
		for i := range 5 {
			b.Field(0).(*array.Int64Builder).AppendValues([]int64{int64(i)}, []bool{i != 2})
			b.Field(1).(*array.Float64Builder).Append(float64(i) / 3)
			if i == 3 {
				b.Field(2).AppendNull()
			} else {
				b.Field(2).(*array.StringBuilder).Append("value " + string(rune('a'+i+batch)))
			}
			b.Field(3).(*array.Date32Builder).Append(arrow.Date32(19000 + i))
			if err := b.Field(4).(*array.BinaryDictionaryBuilder).AppendString([]string{"x", "yy"}[i%2]); err != nil {
				f.Fatal(err)
			}
		}
		recs = append(recs, b.NewRecordBatch())
	}
	return ipcStreamOf(f, mem, sc, recs)
}

// FuzzReadIPC: whatever arrives on a stage's standard input is read as
// batches or ends in an error, never a panic and never a huge allocation
// for a length the input does not back; every batch read can be used
// (each value printed), and no memory is left behind.
func FuzzReadIPC(f *testing.F) {
	good := fuzzStream(f)
	f.Add(good)
	for _, n := range []int{0, 4, 8, 100, len(good) / 2, len(good) - 8, len(good) - 1} {
		f.Add(good[:n])
	}
	huge := func(meta, body uint32) []byte {
		b := binary.LittleEndian.AppendUint32(nil, 0xFFFFFFFF)
		b = binary.LittleEndian.AppendUint32(b, meta)
		return append(b, good[8:]...)
	}
	f.Add(huge(0x7fffffff, 0))
	f.Add(huge(1<<30, 0))
	f.Add(append(append([]byte{}, good...), good...))
	f.Fuzz(func(t *testing.T, in []byte) {
		mem := memory.NewCheckedAllocator(mempool.New(1 << 20))
		err := Run(context.Background(), Pipeline{Source: ReadIPC(bytes.NewReader(in)), Stages: []Stage{readEveryValue()}}, Options{Open: testOpen, Mem: mem, Workers: 1})
		if err != nil && strings.Contains(err.Error(), "unknown error while reading") {
			// arrow-go recovers from a panic while it builds a batch but
			// drops the arrays built by then, which still hold the body;
			// the stage ends on this error. It is never more than the
			// input.
			if n := mem.CurrentAlloc(); n > len(in) {
				t.Fatalf("%d bytes left behind after %v, for %d bytes of input", n, err, len(in))
			}
			return
		}
		mem.AssertSize(t, 0)
	})
}

// FuzzArrowFileObject: an Arrow IPC file that merge reads from a store
// gives batches or an error, never a panic or a runaway allocation.
func FuzzArrowFileObject(f *testing.F) {
	var file bytes.Buffer
	{
		mem := memory.NewGoAllocator()
		rd, err := ipc.NewReader(bytes.NewReader(fuzzStream(f)), ipc.WithAllocator(mem))
		if err != nil {
			f.Fatal(err)
		}
		w, err := ipc.NewFileWriter(&file, ipc.WithSchema(rd.Schema()), ipc.WithAllocator(mem))
		if err != nil {
			f.Fatal(err)
		}
		for rd.Next() {
			if err := w.Write(rd.RecordBatch()); err != nil {
				f.Fatal(err)
			}
		}
		rd.Release()
		if err := w.Close(); err != nil {
			f.Fatal(err)
		}
	}
	good := file.Bytes()
	f.Add(good)
	for _, n := range []int{0, 6, 8, 100, len(good) / 2, len(good) - 10, len(good) - 1} {
		f.Add(good[:n])
	}
	st, _, err := store.Open(context.Background(), "mem://fuzz-arrow-file/", store.Options{MemBuckets: testBuckets})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if _, err := st.Put(context.Background(), "x.arrow", bytes.NewReader(in), store.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		mem := memory.NewCheckedAllocator(mempool.New(1 << 20))
		err := Run(context.Background(), Pipeline{Source: &objectStage{url: "mem://fuzz-arrow-file/x.arrow"}, Stages: []Stage{readEveryValue()}}, Options{Open: testOpen, Mem: mem, Workers: 1})
		if err != nil && strings.Contains(err.Error(), "unknown error while reading") {
			return // as in FuzzReadIPC
		}
		mem.AssertSize(t, 0)
	})
}

// readEveryValue is a sink that prints every value of every batch, so a
// batch that only looks sound fails here rather than in a later stage.
func readEveryValue() Stage {
	return Collect(nil, func(rec arrow.RecordBatch) error {
		for _, c := range rec.Columns() {
			for i := range c.Len() {
				_ = c.ValueStr(i)
			}
		}
		return nil
	})
}
