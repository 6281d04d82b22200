package exec

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/iceberg"
)

// TestExcludesFile: which data files a filter rules out by their
// manifest entry's bounds and counts, and which it must keep.
func TestExcludesFile(t *testing.T) {
	schema := &iceberg.Schema{Fields: []iceberg.Field{
		{ID: 1, Name: "x", Type: "double"}, {ID: 2, Name: "n", Type: "long"},
		{ID: 3, Name: "s", Type: "string"}, {ID: 4, Name: "ts", Type: "timestamptz"},
	}}
	f64 := func(v float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)) }
	i32 := func(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
	i64 := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	us := func(s string) []byte {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return i64(v.UnixMicro())
	}
	file := func(nan bool) iceberg.DataFile {
		f := iceberg.DataFile{
			Lower:       map[int][]byte{1: f64(1), 2: i32(10), 3: []byte("b"), 4: us("2024-01-10T00:00:00Z")},
			Upper:       map[int][]byte{1: f64(5), 2: i32(20), 3: []byte("d"), 4: us("2024-01-20T00:00:00Z")},
			NullCounts:  map[int]int64{1: 0, 2: 0, 3: 2, 4: 0},
			ValueCounts: map[int]int64{1: 9, 2: 9, 3: 9, 4: 9},
		}
		if nan {
			f.NaNCounts = map[int]int64{1: 0}
		}
		return f
	}
	full, err := iceberg.ArrowSchema(schema.Fields)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		filter  string
		noNaN   bool // the entry says the file holds no NaN
		exclude bool
	}{
		{"x > 10", false, false}, // NaN, above every number, may be there
		{"x > 10", true, true},
		{"x < 0.5", false, true}, // NaN is not below
		{"n > 25", false, true},  // 4-byte bounds of a column promoted to long
		{"n >= 20", false, false},
		{"n = 15 or n = 30", false, false},
		{"n = 5 or n = 30", false, true},
		{"s = 'a'", false, true},
		{"s is null", false, false},
		{"x is null", false, true},
		{"s > 'c'", false, false},
		{"ts < '2024-01-09'", false, true},
		{"ts < '2024-01-11'", false, false},
		{"n + 1 > 100", false, false}, // not a column against a value: keeps
	} {
		e, err := expr.CompileFilter(c.filter, full)
		if err != nil {
			t.Fatal(err)
		}
		if got := excludesFile(e.Conjuncts(), schema, file(c.noNaN)); got != c.exclude {
			t.Errorf("%q (no NaN said: %v): excluded %v, want %v", c.filter, c.noNaN, got, c.exclude)
		}
	}
}
