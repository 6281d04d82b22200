package scanbench

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

func TestMain(m *testing.M) {
	// The RSS test runs this binary as the child it measures.
	if n := os.Getenv("SCANBENCH_TEST_ALLOC_MIB"); n != "" {
		mib, err := strconv.Atoi(n)
		if err != nil {
			os.Exit(3)
		}
		b := make([]byte, mib<<20)
		for i := range b {
			b[i] = byte(i)
		}
		// PeakRSS polls the child's /proc status every 5 ms while it runs
		// (its own high-water mark hides the child's from ru_maxrss): a
		// child that exits at once can end between two polls on a busy
		// machine, so it holds its peak for a good many of them. Its
		// lifetime is the input PeakRSS samples: no event reaches it.
		time.Sleep(250 * time.Millisecond)
		runtime.KeepAlive(b)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// dataset generates a small lineitem dataset into a fresh in-memory
// store and returns that store seen through p.
func dataset(t testing.TB, p sim.Profile, opts gen.Options) (shaped, local *store.Store) {
	t.Helper()
	name := "scanbench-" + t.Name() + "-" + strconv.Itoa(rand.IntN(1<<30))
	local, _, err := store.Open(context.Background(), "mem://"+name+"/", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Lineitem(context.Background(), local, "li/", opts); err != nil {
		t.Fatal(err)
	}
	return store.New(sim.Wrap(local.Driver(), p), local.URL("")), local
}

func mustParse(t testing.TB, spec string) sim.Profile {
	t.Helper()
	p, err := sim.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRun(t *testing.T) {
	p := mustParse(t, "ttfb=2ms,p99=5ms,stream=400MiB/s,link=800MiB/s,seed=3")
	st, local := dataset(t, p, gen.Options{Rows: 120_000, Files: 3, RowGroupRows: 20_000})
	faulty := store.New(sim.Wrap(local.Driver(), mustParse(t, p.String()+",slowdown=0.05,reset=0.05,stall=0.05:300ms")), local.URL(""))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := New(ctx, Config{
		Store: st, Local: local, Pattern: "li/",
		Runs: 2, RawConcurrency: []int{1, 4}, FileConcurrency: []int{1, 3},
		Projection: []string{"l_orderkey", "l_comment"},
		Faulty:     faulty, Mem: mem, BatchRows: 8192,
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := b.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := rep.Dataset
	if d.Files != 3 || d.Rows != 120_000 || d.RowGroups != 6 || d.Bytes <= 0 {
		t.Fatalf("dataset %+v", d)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("%d runs", len(rep.Runs))
	}
	first, second := rep.Runs[0], rep.Runs[1]
	if len(first.Raw.MiBps) != 2 || len(first.Naive.MiBps) != 2 || len(first.Whole.MiBps) != 2 {
		t.Errorf("first run did not sweep: %+v", first)
	}
	if len(second.Raw.MiBps) != 1 || second.Raw.Best != first.Raw.Best || second.Naive.Best != first.Naive.Best {
		t.Errorf("second run did not keep to the first's best: %+v then %+v", first, second)
	}
	for _, r := range rep.Runs {
		rs := r.Ratios()
		if r.Scan == nil || r.Decode <= 0 || r.ArrowGo <= 0 || rs.DecodeArrowGo <= 0 || rs.ScanRaw <= 0 || rs.ScanNaive <= 0 || rs.ScanWhole <= 0 || rs.ScanDecode <= 0 || rs.FaultySlowdown <= 0 {
			t.Errorf("missing figures: %+v %+v", r, rs)
		}
		if r.Scan.Rows != d.Rows || r.Scan.BytesFetched < r.Scan.BytesNeeded {
			t.Errorf("scan %+v", r.Scan)
		}
		if pr := r.Projection; pr == nil || pr.BytesNeeded != d.ProjectionBytes {
			t.Errorf("projection: scan needed %+v, footers say %d", pr, d.ProjectionBytes)
		}
		if len(r.NaiveProjection.MiBps) == 0 || len(r.WholeProjection.MiBps) == 0 || rs.ProjectionNaive <= 0 || rs.ProjectionWhole <= 0 {
			t.Errorf("projection: naive %+v, whole %+v, ratios %+v", r.NaiveProjection, r.WholeProjection, rs)
		}
	}
	if !rep.FaultyChecksumsEqual {
		t.Errorf("checksums differ under faults: %s", rep.ChecksumMismatch)
	}
	if rep.MedianRatios.ScanRaw <= 0 || rep.Median.Scan == nil {
		t.Errorf("medians %+v %+v", rep.Median, rep.MedianRatios)
	}
}

// TestProjectionBytes is issue 4's projection target, exactly: reading 2
// of lineitem's 16 columns fetches at most 1.1x the bytes of their column
// chunks plus the footers, through a link like S3's.
func TestProjectionBytes(t *testing.T) {
	st, local := dataset(t, mustParse(t, "s3"), gen.Options{Rows: 2_000_000, Files: 2})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, cols := range [][]string{
		{"l_orderkey", "l_extendedprice"},
		{"l_shipdate", "l_discount"},
		{"l_quantity", "l_comment"},
	} {
		b, err := New(ctx, Config{Store: st, Local: local, Pattern: "li/", Projection: cols})
		if err != nil {
			t.Fatal(err)
		}
		s, err := runScan(ctx, st, "li/", scan.Options{Columns: cols}, false)
		if err != nil {
			t.Fatal(err)
		}
		need := b.Dataset().ProjectionBytes
		if s.BytesNeeded != need {
			t.Errorf("%v: scan says %d bytes needed, the footers %d", cols, s.BytesNeeded, need)
		}
		if r := float64(s.BytesFetched) / float64(need); r > 1.1 {
			t.Errorf("%v: fetched %d bytes for %d of chunks and footers: %.3fx, want at most 1.1x", cols, s.BytesFetched, need, r)
		} else {
			t.Logf("%v: fetched %d bytes for %d: %.3fx", cols, s.BytesFetched, need, r)
		}
	}
}

func TestLineitemCached(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	var logged int
	log := func(string) { logged++ }
	url, err := Lineitem(ctx, dir, 1000, 2, log)
	if err != nil {
		t.Fatal(err)
	}
	first, err := os.Stat(filepath.Join(dir, "lineitem-1000-rows-2-files", "part-00000.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Lineitem(ctx, dir, 1000, 2, log)
	if err != nil || again != url || logged != 1 {
		t.Fatalf("second call: %q %v, generated %d times", again, err, logged)
	}
	if st, err := os.Stat(filepath.Join(dir, "lineitem-1000-rows-2-files", "part-00000.parquet")); err != nil || !st.ModTime().Equal(first.ModTime()) {
		t.Errorf("the cached file was written again")
	}
	// A directory without the marker (an interrupted generation) is redone.
	if err := os.Remove(filepath.Join(dir, "lineitem-1000-rows-2-files", completeMarker)); err != nil {
		t.Fatal(err)
	}
	if _, err := Lineitem(ctx, dir, 1000, 2, log); err != nil || logged != 2 {
		t.Errorf("incomplete dataset not regenerated: %v, %d", err, logged)
	}
	st, key, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := scan.Open(ctx, st, key, scan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ds.Files()); n != 2 {
		t.Errorf("scan sees %d files, want 2 (the marker is not one)", n)
	}
}

func TestPeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SCANBENCH_TEST_ALLOC_MIB", "96")
	peak, _, err := PeakRSS(context.Background(), nil, self)
	if err != nil {
		t.Fatal(err)
	}
	if peak < 96<<20 || peak > 512<<20 {
		t.Errorf("peak RSS %d bytes for a child that touched 96 MiB", peak)
	}
	// Our own high-water mark, raised far above the child's, must not be
	// taken for the child's.
	big := make([]byte, 768<<20)
	for i := 0; i < len(big); i += 4096 {
		big[i] = 1
	}
	peak, _, err = PeakRSS(context.Background(), nil, self)
	if err != nil {
		t.Fatal(err)
	}
	if peak < 96<<20 || peak > 512<<20 {
		t.Errorf("peak RSS %d bytes for a child that touched 96 MiB, beside a parent that touched 768 MiB", peak)
	}
	big[len(big)-1] = 2
	t.Setenv("SCANBENCH_TEST_ALLOC_MIB", "fail")
	if _, _, err := PeakRSS(context.Background(), nil, self); err == nil {
		t.Error("a failing child gave no error")
	}
}

func TestChecksum(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	batch := func(vals []int64, nullAt int) arrow.RecordBatch {
		bld := array.NewRecordBuilder(mem, sc)
		defer bld.Release()
		for i, v := range vals {
			if i == nullAt {
				bld.Field(0).AppendNull()
			} else {
				bld.Field(0).(*array.Int64Builder).Append(v)
			}
			bld.Field(1).(*array.StringBuilder).Append(strconv.FormatInt(v*v, 10))
			bld.Field(2).(*array.BooleanBuilder).Append(v%3 == 0)
		}
		return bld.NewRecordBatch()
	}
	a := batch([]int64{1, 2, 3, 4}, -1)
	defer a.Release()
	b := batch([]int64{5, 6, 7}, 1)
	defer b.Release()
	pa, pb := scan.Position{File: 0, Batch: 0}, scan.Position{File: 0, Batch: 1}

	var x, y Checksum
	x.Add(scan.Batch{RecordBatch: a, Pos: pa})
	x.Add(scan.Batch{RecordBatch: b, Pos: pb})
	y.Add(scan.Batch{RecordBatch: b, Pos: pb})
	y.Add(scan.Batch{RecordBatch: a, Pos: pa})
	if !x.Equal(y) || x.String() != y.String() || x.Rows != 7 {
		t.Fatalf("order changed the checksum: %v vs %v", x, y)
	}

	// A slice hashes like a batch holding the same values.
	whole := batch([]int64{9, 1, 2, 3, 4}, -1)
	defer whole.Release()
	sl := whole.NewSlice(1, 5)
	defer sl.Release()
	var z Checksum
	z.Add(scan.Batch{RecordBatch: sl, Pos: pa})
	z.Add(scan.Batch{RecordBatch: b, Pos: pb})
	if !x.Equal(z) {
		t.Errorf("a slice sums differently: %s", x.Diff(z))
	}

	// The same values at another place, or one value changed, differ.
	var moved, changed Checksum
	moved.Add(scan.Batch{RecordBatch: a, Pos: scan.Position{File: 1}})
	moved.Add(scan.Batch{RecordBatch: b, Pos: pb})
	if x.Equal(moved) {
		t.Error("moving a batch did not change the checksum")
	}
	c := batch([]int64{5, 6, 8}, 1)
	defer c.Release()
	changed.Add(scan.Batch{RecordBatch: a, Pos: pa})
	changed.Add(scan.Batch{RecordBatch: c, Pos: pb})
	if d := x.Diff(changed); d != "i, s" {
		t.Errorf("diff %q, want i and s (b is false for 7 and 8 alike)", d)
	}
	// A null where a value was differs even if the buffer is the same.
	n := batch([]int64{5, 6, 7}, 2)
	defer n.Release()
	var nulled Checksum
	nulled.Add(scan.Batch{RecordBatch: a, Pos: pa})
	nulled.Add(scan.Batch{RecordBatch: n, Pos: pb})
	if d := x.Diff(nulled); d != "i" {
		t.Errorf("diff %q, want i", d)
	}
}

func TestConfigErrors(t *testing.T) {
	ctx := context.Background()
	st := store.New(store.NewMemDriver(), "mem://x/")
	for _, cfg := range []Config{
		{},
		{Store: st, Only: []string{"nope"}},
		{Store: st, RawConcurrency: []int{0}},
		{Store: st, Pattern: "none/"},
	} {
		if _, err := New(ctx, cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{0, 2, 0}, 2}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	runs := []Run{
		{Raw: Sweep{MiBps: map[int]float64{4: 100, 8: 200}, Best: 8}, Scan: &ScanResult{MiBps: 150, Seconds: 2}},
		{Raw: Sweep{MiBps: map[int]float64{8: 100}, Best: 8}, Scan: &ScanResult{MiBps: 90, Seconds: 3}},
		{Raw: Sweep{MiBps: map[int]float64{8: 300}, Best: 8}, Scan: &ScanResult{MiBps: 240, Seconds: 1}},
	}
	m, r := medians(runs)
	if m.Raw.Best != 8 || m.Raw.Rate() != 200 || m.Raw.MiBps[4] != 100 || m.Scan.MiBps != 150 {
		t.Errorf("medians %+v %+v", m.Raw, m.Scan)
	}
	// The median of the runs' ratios (0.75, 0.9, 0.8), not 150/200.
	if r.ScanRaw != 0.8 {
		t.Errorf("scan/raw %v, want 0.8", r.ScanRaw)
	}
}

// countingDriver counts the bytes asked for by ranged reads.
type countingDriver struct {
	store.Driver
	asked atomic.Int64
}

func (d *countingDriver) ReadRange(ctx context.Context, key string, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error) {
	rc, info, err := d.Driver.ReadRange(ctx, key, r, o)
	if err == nil {
		n := r.Len
		if r.Off < 0 || n < 0 {
			n = info.Size
		}
		d.asked.Add(n)
	}
	return rc, info, err
}

// TestReadersProjection: the naive reader of a projection asks only for
// its columns' chunks (and the footers), every row is read, and both
// readers refuse a column the files lack.
func TestReadersProjection(t *testing.T) {
	_, local := dataset(t, sim.Profile{}, gen.Options{Rows: 30_000, Files: 2, RowGroupRows: 10_000})
	cd := &countingDriver{Driver: local.Driver()}
	st := store.New(cd, local.URL(""))
	ctx := context.Background()
	b, err := New(ctx, Config{Store: st, Pattern: "li/", Projection: []string{"l_shipdate", "l_discount"}})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cd.asked.Store(0)
	_, rows, err := naive(ctx, st, b.objs, b.cfg.Projection, 2, 4096, mem)
	if err != nil || rows != 30_000 {
		t.Fatalf("naive projection: %d rows, %v", rows, err)
	}
	// arrow-go's footer reads ask for the footer twice at most (its
	// length, then the metadata), and its first read a few KiB more.
	if got, want := cd.asked.Load(), b.ds.ProjectionBytes; got < want || got > 2*want+int64(len(b.objs))*64<<10 {
		t.Errorf("naive projection asked for %d bytes, its chunks and footers are %d (the files %d)", got, want, b.ds.Bytes)
	}
	if _, rows, err := whole(ctx, st, b.objs, b.cfg.Projection, 2, 4096, mem); err != nil || rows != 30_000 {
		t.Fatalf("whole projection: %d rows, %v", rows, err)
	}
	for _, read := range []func(context.Context, *store.Store, []object, []string, int, int, memory.Allocator) (time.Duration, int64, error){naive, whole} {
		if _, _, err := read(ctx, st, b.objs, []string{"l_nosuch"}, 1, 4096, mem); err == nil || !strings.Contains(err.Error(), "l_nosuch") {
			t.Errorf("unknown column: %v", err)
		}
	}
}
