package scan

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/mempool"
)

// TestTakeRuns: the rows takeRuns keeps are arrow's filter's, for every
// type it takes, with and without nulls, sliced and not, under masks that
// keep everything, nothing, long runs and scattered rows; and it leaves
// the rest to arrow's filter.
func TestTakeRuns(t *testing.T) {
	for _, mem := range []memory.Allocator{memory.NewGoAllocator(), mempool.New(0)} {
		checked := memory.NewCheckedAllocator(mem)
		testTakeRuns(t, checked)
		checked.AssertSize(t, 0)
	}
}

func testTakeRuns(t *testing.T, mem memory.Allocator) {
	r := rand.New(rand.NewPCG(7, 8))
	const n = 1000
	build := func(dt arrow.DataType, nulls bool) arrow.Array {
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		for i := range n {
			if nulls && r.IntN(4) == 0 {
				b.AppendNull()
				continue
			}
			switch b := b.(type) {
			case *array.Int64Builder:
				b.Append(r.Int64())
			case *array.Int32Builder:
				b.Append(r.Int32())
			case *array.Int8Builder:
				b.Append(int8(r.IntN(256) - 128))
			case *array.Float64Builder:
				b.Append(r.Float64())
			case *array.Date32Builder:
				b.Append(arrow.Date32(r.IntN(20000)))
			case *array.Decimal128Builder:
				b.Append(decimal128.FromI64(r.Int64()))
			case *array.FixedSizeBinaryBuilder:
				b.Append([]byte{byte(i), byte(i >> 8), 3})
			case *array.StringBuilder:
				b.Append(fmt.Sprint("v", r.IntN(1<<r.IntN(20))))
			case *array.BinaryBuilder:
				if r.IntN(5) == 0 {
					b.Append(nil)
				} else {
					b.Append([]byte(fmt.Sprint(i)))
				}
			case *array.BooleanBuilder:
				b.Append(r.IntN(2) == 0)
			}
		}
		return b.NewArray()
	}
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Float64,
		arrow.FixedWidthTypes.Date32, &arrow.Decimal128Type{Precision: 38, Scale: 2}, &arrow.FixedSizeBinaryType{ByteWidth: 3},
		arrow.BinaryTypes.String, arrow.BinaryTypes.Binary, arrow.FixedWidthTypes.Boolean,
	}
	masks := map[string]func(i int) bool{
		"all":       func(int) bool { return true },
		"none":      func(int) bool { return false },
		"runs":      func(i int) bool { return i/37%3 != 0 },
		"scattered": func(int) bool { return r.IntN(3) == 0 },
	}
	ctx := compute.WithAllocator(context.Background(), mem)
	for _, dt := range types {
		for _, nulls := range []bool{false, true} {
			whole := build(dt, nulls)
			for _, sliced := range []bool{false, true} {
				a := whole
				if sliced {
					a = array.NewSlice(whole, 13, n-5)
				}
				for name, m := range masks {
					keep := make([]bool, a.Len())
					for i := range keep {
						keep[i] = m(i)
					}
					runs, kept := keptRuns(keep, nil, nil)
					mask := runsMask(mem, runs, a.Len())
					want, err := compute.FilterArray(ctx, a, mask, *compute.DefaultFilterOptions())
					mask.Release()
					if err != nil {
						t.Fatal(err)
					}
					got, ok := takeRuns(mem, a, runs, kept)
					_, str := a.(*array.String)
					_, bin := a.(*array.Binary)
					w := 0
					if fw, ok := dt.(arrow.FixedWidthDataType); ok {
						w = fw.BitWidth() / 8
					}
					// Short runs of values of other widths are arrow's.
					takes := dt.ID() != arrow.BOOL && kept > 0 && (str || bin || kept >= 8*len(runs) || w == 4 || w == 8)
					if ok != takes {
						t.Fatalf("%s nulls=%v sliced=%v %s: took it %v, want %v", dt, nulls, sliced, name, ok, takes)
					}
					if ok {
						if !array.Equal(got, want) || got.NullN() != want.NullN() {
							t.Fatalf("%s nulls=%v sliced=%v %s:\n got %v\nwant %v", dt, nulls, sliced, name, got, want)
						}
						got.Release()
					}
					want.Release()
				}
				if sliced {
					a.Release()
				}
			}
			whole.Release()
		}
	}
}

// TestKeptRuns: the runs keptRuns finds are those a walk row by row
// finds, for lengths about a word's 64 rows, patterns of every density
// and with and without validity.
func TestKeptRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	walk := func(keep, valid []bool) ([]rowRun, int) {
		var runs []rowRun
		kept := 0
		for i := 0; i < len(keep); i++ {
			if !keep[i] || valid != nil && !valid[i] {
				continue
			}
			if len(runs) > 0 && runs[len(runs)-1].start+runs[len(runs)-1].n == i {
				runs[len(runs)-1].n++
			} else {
				runs = append(runs, rowRun{i, 1})
			}
			kept++
		}
		return runs, kept
	}
	for _, n := range []int{0, 1, 63, 64, 65, 127, 128, 129, 1000} {
		for _, density := range []float64{0, 0.05, 0.5, 0.95, 1} {
			for _, withValid := range []bool{false, true} {
				keep := make([]bool, n)
				for i := range keep {
					keep[i] = r.Float64() < density
				}
				var valid []bool
				if withValid {
					valid = make([]bool, n)
					for i := range valid {
						valid[i] = r.IntN(4) > 0
					}
				}
				got, kept := keptRuns(keep, valid, nil)
				want, wantKept := walk(keep, valid)
				if kept != wantKept || len(got) != len(want) || len(want) > 0 && !slices.Equal(got, want) {
					t.Fatalf("n=%d density=%v valid=%v: %v (%d kept), want %v (%d)", n, density, withValid, got, kept, want, wantKept)
				}
			}
		}
	}
}
