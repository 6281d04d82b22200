package arrowfile

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/arrowtest"
)

var schema = arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)

func batchOf(mem memory.Allocator, vals ...int64) arrow.RecordBatch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(vals, nil)
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(vals)))
}

// newWriter is a Writer to out keyed by int64, with an allocator that
// fails the test if anything is still allocated at its end.
func newWriter(t *testing.T, out io.Writer) (*Writer[int64], memory.Allocator) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	w, err := NewWriter(out, schema, mem, cmp.Compare[int64])
	if err != nil {
		t.Fatal(err)
	}
	return w, mem
}

// readBack returns the first value of each batch, in the footer's order.
func readBack(t *testing.T, mem memory.Allocator, file []byte) []int64 {
	t.Helper()
	rd, err := ipc.NewFileReader(bytes.NewReader(file), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if !rd.Schema().Equal(schema) {
		t.Fatalf("schema %v", rd.Schema())
	}
	var out []int64
	for i := range rd.NumRecords() {
		rec, err := rd.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Column(0).(*array.Int64).Value(0))
	}
	return out
}

// TestFooterInKeyOrder: batches written in one order are stored in it
// and read back in key order; equal keys keep their write order.
func TestFooterInKeyOrder(t *testing.T) {
	var file bytes.Buffer
	w, mem := newWriter(t, &file)
	// value*1000 marks a batch; keys say where it belongs.
	written := []struct{ val, key int64 }{{3000, 3}, {1000, 1}, {4000, 4}, {2001, 2}, {0, 0}, {2002, 2}}
	for _, b := range written {
		rec := batchOf(mem, b.val)
		err := w.Write(rec, b.key)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if w.Batches() != len(written) {
		t.Fatalf("Batches() = %d", w.Batches())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readBack(t, mem, file.Bytes())
	want := []int64{0, 1000, 2001, 2002, 3000, 4000}
	if !equal(got, want) {
		t.Fatalf("read back %v, want %v", got, want)
	}
	// Stored as written: the batch written first comes first in the bytes.
	first, last := offsetOf(t, file.Bytes(), 3000), offsetOf(t, file.Bytes(), 2002)
	if first > last {
		t.Fatalf("batch written first is stored at %d, after the last one at %d", first, last)
	}
	rec := batchOf(mem, 1)
	defer rec.Release()
	if err := w.Write(rec, 9); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("write after close: %v", err)
	}
}

// offsetOf is where the int64 v is stored in file (the body of the batch
// holding it).
func offsetOf(t *testing.T, file []byte, v int64) int {
	t.Helper()
	var le [8]byte
	for i := range le {
		le[i] = byte(v >> (8 * i))
	}
	i := bytes.Index(file, le[:])
	if i < 0 {
		t.Fatalf("%d not in the file", v)
	}
	return i
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEmptyFile(t *testing.T) {
	var file bytes.Buffer
	w, mem := newWriter(t, &file)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readBack(t, mem, file.Bytes()); len(got) != 0 {
		t.Fatalf("empty file reads %v", got)
	}
}

// TestWriteErrorSticks: after the underlying writer fails, writes and
// Close return that error and no footer is written.
func TestWriteErrorSticks(t *testing.T) {
	boom := errors.New("boom")
	w, mem := newWriter(t, &arrowtest.FailAfter{N: 0, Err: boom})
	rec := batchOf(mem, 1)
	defer rec.Release()
	if err := w.Write(rec, 0); !errors.Is(err, boom) {
		t.Fatalf("write: %v", err)
	}
	if err := w.Write(rec, 1); !errors.Is(err, boom) {
		t.Fatalf("second write: %v", err)
	}
	if err := w.Close(); !errors.Is(err, boom) {
		t.Fatalf("close: %v", err)
	}
}

func TestPermuteFooterMalformed(t *testing.T) {
	for name, tail := range map[string][]byte{
		"short":    []byte("ARROW1"),
		"no magic": []byte("0123456789abcdef"),
		"length":   append([]byte{0xff, 0xff, 0xff, 0x7f}, "ARROW1"...),
		"garbage":  append([]byte("zzzzzzzzzzzzzzzz\x10\x00\x00\x00"), "ARROW1"...),
	} {
		if err := permuteFooter(tail, []int{0}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
