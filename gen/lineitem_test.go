package gen

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

func TestLineitemDates(t *testing.T) {
	// TPC-H dates as days since 1970, computed by hand.
	if startDate != 8035 || currentDate != 9298 || endDate != 10591 {
		t.Fatalf("dates %d %d %d, want 8035 9298 10591", startDate, currentDate, endDate)
	}
}

func TestKeyRanges(t *testing.T) {
	for _, c := range []struct{ rows, parts, supps int64 }{
		{1, 1, 1},
		{sf1LineitemRows, sf1Parts, sf1Suppliers},
		{10 * sf1LineitemRows, 10 * sf1Parts, 10 * sf1Suppliers},
		{1 << 50, 37_522_398_609_035, 1_876_119_930_451}, // no overflow
	} {
		if p, s := keyRanges(c.rows); p != c.parts || s != c.supps {
			t.Errorf("keyRanges(%d) = %d, %d; want %d, %d", c.rows, p, s, c.parts, c.supps)
		}
	}
}

func TestSparseKey(t *testing.T) {
	// dbgen's first order keys: 1..7, then 32..39, then 64...
	want := []int64{1, 2, 3, 4, 5, 6, 7, 32, 33, 34, 35, 36, 37, 38, 39, 64}
	for i, w := range want {
		if got := sparseKey(int64(i + 1)); got != w {
			t.Errorf("sparseKey(%d) = %d, want %d", i+1, got, w)
		}
	}
}

func TestLineitemValues(t *testing.T) {
	opts := Options{Rows: 120_007, Files: 3, Seed: 7}
	st, res := generateT(t, Lineitem, opts)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	files := checkLayout(t, mem, st, res, opts, LineitemSchema(), 4)

	parts, supps := keyRanges(opts.Rows)
	if parts != 3999 || supps != 199 {
		t.Fatalf("%d parts, %d suppliers for %d rows, want 3999 and 199", parts, supps, opts.Rows)
	}
	instructs := setOf(shipInstructs)
	modes := setOf(shipModes)
	var (
		prevKey  int64
		prevLine int32
		orders   int64
		// the order date lies in [lo, hi]: the TPC-H range, narrowed by
		// what each line's dates allow
		lo, hi       arrow.Date32
		modeCount    = map[string]int{}
		returned     int
		returnedSeen int
	)
	checkOrder := func(key int64) {
		if prevKey == 0 {
			return
		}
		if lo > hi {
			t.Fatalf("order %d: no order date fits its lines (%d..%d)", key, lo, hi)
		}
	}
	for fi, p := range files {
		for rg := range p.rdr.NumRowGroups() {
			flagMin, flagMax := "~", ""
			p.eachBatch(t, rg, func(rec arrow.RecordBatch) {
				okey := rec.Column(0).(*array.Int64).Int64Values()
				pkey := rec.Column(1).(*array.Int64).Int64Values()
				skey := rec.Column(2).(*array.Int64).Int64Values()
				lnum := rec.Column(3).(*array.Int32).Int32Values()
				qty := rec.Column(4).(*array.Float64).Float64Values()
				price := rec.Column(5).(*array.Float64).Float64Values()
				disc := rec.Column(6).(*array.Float64).Float64Values()
				tax := rec.Column(7).(*array.Float64).Float64Values()
				flag := rec.Column(8).(*array.String)
				status := rec.Column(9).(*array.String)
				ship := rec.Column(10).(*array.Date32).Date32Values()
				commit := rec.Column(11).(*array.Date32).Date32Values()
				receipt := rec.Column(12).(*array.Date32).Date32Values()
				instr := rec.Column(13).(*array.String)
				mode := rec.Column(14).(*array.String)
				comment := rec.Column(15).(*array.String)
				for i := range int(rec.NumRows()) {
					k := okey[i]
					switch {
					case k == prevKey:
						if lnum[i] != prevLine+1 {
							t.Fatalf("order %d: line %d after %d", k, lnum[i], prevLine)
						}
					case k > prevKey:
						checkOrder(prevKey)
						if lnum[i] != 1 {
							t.Fatalf("order %d starts at line %d", k, lnum[i])
						}
						if k&0x18 != 0 {
							t.Fatalf("order key %d is not sparse", k)
						}
						orders++
						lo, hi = startDate, endDate-151
					default:
						t.Fatalf("file %d: order key %d after %d", fi, k, prevKey)
					}
					prevKey, prevLine = k, lnum[i]
					if lnum[i] > 7 {
						t.Fatalf("order %d has line %d", k, lnum[i])
					}
					if pkey[i] < 1 || pkey[i] > parts || skey[i] < 1 || skey[i] > supps {
						t.Fatalf("part %d supp %d out of range (%d parts, %d supps)", pkey[i], skey[i], parts, supps)
					}
					if qty[i] < 1 || qty[i] > 50 || qty[i] != math.Trunc(qty[i]) {
						t.Fatalf("quantity %v", qty[i])
					}
					want := qty[i] * float64(retailCents(pkey[i])) / 100
					if math.Abs(price[i]-want) > 1e-6 {
						t.Fatalf("extendedprice %v, want %v", price[i], want)
					}
					if !isCents(disc[i], 0, 10) || !isCents(tax[i], 0, 8) {
						t.Fatalf("discount %v tax %v", disc[i], tax[i])
					}
					// ship = order+1..121, commit = order+30..90
					lo = max(lo, ship[i]-121, commit[i]-90)
					hi = min(hi, ship[i]-1, commit[i]-30)
					if d := receipt[i] - ship[i]; d < 1 || d > 30 {
						t.Fatalf("receipt %d days after ship", d)
					}
					f := flag.Value(i)
					flagMin, flagMax = min(flagMin, f), max(flagMax, f)
					if receipt[i] <= currentDate {
						returned++
						if f == "R" {
							returnedSeen++
						} else if f != "A" {
							t.Fatalf("flag %q for receipt %d <= %d", f, receipt[i], currentDate)
						}
					} else if f != "N" {
						t.Fatalf("flag %q for receipt %d > %d", f, receipt[i], currentDate)
					}
					if s := status.Value(i); (ship[i] > currentDate) != (s == "O") || (s != "O" && s != "F") {
						t.Fatalf("status %q for ship %d", s, ship[i])
					}
					if !instructs[instr.Value(i)] || !modes[mode.Value(i)] {
						t.Fatalf("shipinstruct %q shipmode %q", instr.Value(i), mode.Value(i))
					}
					modeCount[mode.Value(i)]++
					if n := len(comment.Value(i)); n < 10 || n > 43 {
						t.Fatalf("comment %q has %d chars", comment.Value(i), n)
					}
				}
			})
			// Statistics of a dictionary-written column are those of
			// the values present, not of the whole dictionary.
			stats := columnStats(t, p.rdr.MetaData().RowGroup(rg), 8).(*metadata.ByteArrayStatistics)
			if string(stats.Min()) != flagMin || string(stats.Max()) != flagMax {
				t.Errorf("l_returnflag stats %q..%q, values %q..%q", stats.Min(), stats.Max(), flagMin, flagMax)
			}
		}
	}
	checkOrder(prevKey)

	if avg := float64(opts.Rows) / float64(orders); avg < 3.8 || avg > 4.2 {
		t.Errorf("%.2f lines per order, want about 4", avg)
	}
	if r := float64(returnedSeen) / float64(returned); r < 0.45 || r > 0.55 {
		t.Errorf("%.2f of returnable lines are R, want about half", r)
	}
	for _, m := range shipModes {
		if c := float64(modeCount[m]) / float64(opts.Rows); c < 0.12 || c > 0.17 {
			t.Errorf("shipmode %s on %.3f of lines, want about 1/7", m, c)
		}
	}
}

func TestLineitemTinyBatches(t *testing.T) {
	// Columns written from a fixed dictionary must get the statistics of
	// the values present, even when batches use only some of the values.
	opts := Options{Rows: 40, Files: 2, Seed: 1, RowGroupRows: 6, batchRows: 2}
	st, res := generateT(t, Lineitem, opts)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for _, p := range checkLayout(t, mem, st, res, opts, LineitemSchema(), 3) {
		for rg := range p.rdr.NumRowGroups() {
			var modes []string
			p.eachBatch(t, rg, func(rec arrow.RecordBatch) {
				m := rec.Column(14).(*array.String)
				for i := range m.Len() {
					modes = append(modes, m.Value(i))
				}
			})
			stats := columnStats(t, p.rdr.MetaData().RowGroup(rg), 14).(*metadata.ByteArrayStatistics)
			if string(stats.Min()) != minOf(modes) || string(stats.Max()) != maxOf(modes) {
				t.Errorf("l_shipmode stats %q..%q for values %q", stats.Min(), stats.Max(), modes)
			}
		}
	}
}

func columnStats(t *testing.T, rg *metadata.RowGroupMetaData, col int) metadata.TypedStatistics {
	t.Helper()
	cc, err := rg.ColumnChunk(col)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := cc.Statistics()
	if err != nil || stats == nil || !stats.HasMinMax() {
		t.Fatalf("column %d: no statistics (%v)", col, err)
	}
	return stats
}

func isCents(v float64, lo, hi int) bool {
	c := math.Round(v * 100)
	return c >= float64(lo) && c <= float64(hi) && v == c/100
}

func setOf(vs []string) map[string]bool {
	m := map[string]bool{}
	for _, v := range vs {
		m[v] = true
	}
	return m
}

func minOf(vs []string) string {
	m := vs[0]
	for _, v := range vs {
		m = min(m, v)
	}
	return m
}

func maxOf(vs []string) string {
	m := vs[0]
	for _, v := range vs {
		m = max(m, v)
	}
	return m
}
