package exec

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluice-data/sluice/internal/arrowfile"
	"github.com/sluice-data/sluice/store"
)

// TestArrowFileFooterOrder: an Arrow file whose footer lists its batches
// in another order than they are stored is read in the footer's order,
// as every Arrow reader reads it; a file cut short is an error naming it.
func TestArrowFileFooterOrder(t *testing.T) {
	mem := checkedMem(t)
	sc := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var file bytes.Buffer
	w, err := arrowfile.NewWriter(&file, sc, mem, cmp.Compare[int])
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{2, 0, 3, 1} { // stored in this order, listed 0..3
		b := array.NewInt64Builder(mem)
		b.AppendValues([]int64{int64(10 * k), int64(10*k + 1)}, nil)
		col := b.NewArray()
		b.Release()
		rec := array.NewRecordBatch(sc, []arrow.Array{col}, 2)
		col.Release()
		if err := w.Write(rec, k); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, _, err := store.Open(context.Background(), "mem://arrow-file-order/", store.Options{MemBuckets: testBuckets})
	if err != nil {
		t.Fatal(err)
	}
	read := func(data []byte) ([]int64, error) {
		if _, err := st.Put(context.Background(), "x.arrow", bytes.NewReader(data), store.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		var got []int64
		err := Run(context.Background(), Pipeline{Source: &objectStage{url: "mem://arrow-file-order/x.arrow"}, Stages: []Stage{Collect(nil, func(rec arrow.RecordBatch) error {
			got = append(got, rec.Column(0).(*array.Int64).Int64Values()...)
			return nil
		})}}, Options{Open: testOpen, Mem: mem})
		return got, err
	}
	got, err := read(file.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, 1, 10, 11, 20, 21, 30, 31}; !slices.Equal(got, want) {
		t.Fatalf("read %v, want the footer's order %v", got, want)
	}
	for _, cut := range []int{len(file.Bytes()) - 1, len(file.Bytes()) / 2, 7} {
		if _, err := read(file.Bytes()[:cut]); err == nil || !strings.Contains(err.Error(), "x.arrow") {
			t.Errorf("file cut at %d: %v, want an error naming the file", cut, err)
		}
	}
}
