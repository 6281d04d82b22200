package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/await"
	"github.com/sluice-data/sluice/store"
)

// watchedStore is an in-memory store whose writers let a test see the
// bytes of an object as they are written, before it is committed.
type watchedStore struct {
	st      *store.Store
	mu      sync.Mutex
	written bytes.Buffer
	onWrite func(sofar []byte)
}

func newWatchedStore() *watchedStore {
	w := &watchedStore{}
	w.st = store.New(&watchedDriver{Driver: store.NewMemDriver(), w: w}, "mem://watched/")
	return w
}

func (w *watchedStore) open(ctx context.Context, url string) (*store.Store, string, error) {
	return w.st, strings.TrimPrefix(url, "mem://watched/"), nil
}

type watchedDriver struct {
	store.Driver
	w *watchedStore
}

func (d *watchedDriver) NewWriter(ctx context.Context, key string, opts store.WriteOptions) (store.DriverWriter, error) {
	dw, err := d.Driver.NewWriter(ctx, key, opts)
	return &watchedWriter{DriverWriter: dw, w: d.w}, err
}

type watchedWriter struct {
	store.DriverWriter
	w *watchedStore
}

func (ww *watchedWriter) Write(p []byte) (int, error) {
	n, err := ww.DriverWriter.Write(p)
	ww.w.mu.Lock()
	ww.w.written.Write(p[:n])
	sofar := ww.w.written.Bytes()
	if ww.w.onWrite != nil {
		ww.w.onWrite(sofar)
	}
	ww.w.mu.Unlock()
	return n, err
}

// stallStage is a per-batch stage that calls fn with each batch before
// passing it on unchanged; fn may block (a straggler) or fail.
type stallStage struct {
	fn func(ctx context.Context, rec arrow.RecordBatch) error
}

func (s *stallStage) Name() string { return "stall" }
func (s *stallStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	return &bound{name: "stall", out: in, mapper: s}, nil
}

func (s *stallStage) mapBatch(ctx context.Context, in arrow.RecordBatch) (arrow.RecordBatch, error) {
	if err := s.fn(ctx, in); err != nil {
		return nil, err
	}
	in.Retain()
	return in, nil
}

var taggedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "tag", Type: arrow.BinaryTypes.String},
}, nil)

// marker is the tag of every row of batch i: a string found in the
// file's bytes only where batch i's body is stored.
func marker(i int) string { return fmt.Sprintf("<batch %02d>", i) }

// taggedBatches are n batches of rows ids i*1000.. tagged marker(i).
func taggedBatches(mem memory.Allocator, n, rows int) []arrow.RecordBatch {
	out := make([]arrow.RecordBatch, n)
	for i := range out {
		b := array.NewRecordBuilder(mem, taggedSchema)
		for r := range rows {
			b.Field(0).(*array.Int64Builder).Append(int64(i*1000 + r))
			b.Field(1).(*array.StringBuilder).Append(marker(i))
		}
		out[i] = b.NewRecordBatch()
		b.Release()
	}
	return out
}

func batchIndex(rec arrow.RecordBatch) int {
	return int(rec.Column(0).(*array.Int64).Value(0) / 1000)
}

// readArrowFile reads every batch the file's footer lists, in its order;
// the caller releases them.
func readArrowFile(t *testing.T, mem memory.Allocator, b []byte) (*arrow.Schema, []arrow.RecordBatch) {
	t.Helper()
	rd, err := ipc.NewFileReader(bytes.NewReader(b), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []arrow.RecordBatch
	for i := range rd.NumRecords() {
		rec, err := rd.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		rec.Retain()
		out = append(out, rec)
	}
	return rd.Schema(), out
}

// inOrder runs src and stages into Collect, the in-order path, and
// returns the batches it got.
func inOrder(t *testing.T, mem memory.Allocator, src SourceStage, stages ...Stage) []arrow.RecordBatch {
	t.Helper()
	var out []arrow.RecordBatch
	err := Run(context.Background(), Pipeline{Source: src, Stages: append(stages, Collect(nil, func(rec arrow.RecordBatch) error {
		rec.Retain()
		out = append(out, rec)
		return nil
	}))}, Options{Open: testOpen, Mem: mem, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestArrivalWriteStraggler: with `stall | filter | write x.arrow`, one
// batch held up in its mapping does not hold up the batches after it:
// they are written while it waits (it is released only once all of them
// are in the object's bytes), so it is stored last; and the file read
// back lists the batches in stream order, the same as the in-order path
// gives.
func TestArrivalWriteStraggler(t *testing.T) {
	mem := checkedMem(t)
	const n, slow, filtered = 10, 1, 6
	recs := taggedBatches(mem, n, 50)
	defer releaseAll(recs)

	ws := newWatchedStore()
	othersWritten := make(chan struct{})
	ws.onWrite = func(sofar []byte) {
		for i := range n {
			if i != slow && i != filtered && !bytes.Contains(sofar, []byte(marker(i))) {
				return
			}
		}
		select {
		case <-othersWritten:
		default:
			close(othersWritten)
		}
	}
	timedOut := false
	stall := &stallStage{fn: func(ctx context.Context, rec arrow.RecordBatch) error {
		if batchIndex(rec) != slow {
			return nil
		}
		select {
		case <-othersWritten:
		case <-time.After(3 * time.Second):
			// In order, the others wait for this one: give up
			// waiting so the test fails rather than hangs.
			timedOut = true
		case <-ctx.Done():
		}
		return nil
	}}
	filter := mustStage(t)(Filter(fmt.Sprintf("id < %d or id >= %d", filtered*1000, (filtered+1)*1000)))
	err := Run(context.Background(), Pipeline{Source: FromBatches(taggedSchema, recs...), Stages: []Stage{stall, filter, Write("mem://watched/out.arrow")}},
		Options{Mem: mem, Workers: 3, Open: ws.open})
	if err != nil {
		t.Fatal(err)
	}
	if timedOut {
		t.Error("the batches after the straggler were not written while it was held up")
	}
	file, err := ws.st.ReadAll(context.Background(), "out.arrow")
	if err != nil {
		t.Fatal(err)
	}
	// Physically: the straggler's body is stored after every other's.
	slowAt := bytes.Index(file, []byte(marker(slow)))
	for i := range n {
		at := bytes.Index(file, []byte(marker(i)))
		switch {
		case i == filtered:
			if at >= 0 {
				t.Errorf("filtered batch %d is in the file", i)
			}
		case at < 0:
			t.Errorf("batch %d is not in the file", i)
		case i != slow && at > slowAt:
			t.Errorf("batch %d stored at byte %d, after the straggler (byte %d)", i, at, slowAt)
		}
	}
	// Logically: stream order, the in-order path's batches exactly.
	schema, got := readArrowFile(t, mem, file)
	defer releaseAll(got)
	want := inOrder(t, mem, FromBatches(taggedSchema, recs...), filter)
	defer releaseAll(want)
	if !schema.Equal(taggedSchema) {
		t.Fatalf("schema %v", schema)
	}
	if len(got) != len(want) {
		t.Fatalf("file lists %d batches, the in-order path gives %d", len(got), len(want))
	}
	for i := range got {
		if !array.RecordEqual(got[i], want[i]) {
			t.Fatalf("batch %d of the file (batch %d of the source) differs from the in-order path's (batch %d)", i, batchIndex(got[i]), batchIndex(want[i]))
		}
	}
}

// TestArrivalWriteMatchesInOrder: over a real scan (dictionary columns
// included, written as their values) on several workers, the .arrow file
// reads back as the in-order stream.
func TestArrivalWriteMatchesInOrder(t *testing.T) {
	_, lineitem := testData(t)
	mem := checkedMem(t)
	cols := []string{"l_orderkey", "l_shipmode", "l_returnflag", "l_quantity"}
	filter := mustStage(t)(Filter("l_quantity > 10 and l_returnflag != 'N'"))
	for _, dict := range [][]string{nil, {"l_shipmode", "l_returnflag"}} {
		url := fmt.Sprintf("mem://exec-arrival/%d.arrow", len(dict))
		opts := ScanOptions{Columns: cols, Dict: dict, BatchRows: 700}
		err := Run(context.Background(), Pipeline{Source: Scan([]string{lineitem}, opts), Stages: []Stage{filter, Select("l_shipmode", "l_orderkey", "l_quantity"), Write(url)}}, Options{Open: testOpen, Mem: mem, Workers: 3})
		if err != nil {
			t.Fatal(err)
		}
		got := table(t, fused(t, mem, 1, &objectStage{url: url}))
		want := table(t, fused(t, mem, 1, Scan([]string{lineitem}, ScanOptions{Columns: cols, BatchRows: 700}), filter, Select("l_shipmode", "l_orderkey", "l_quantity")))
		if len(want) == 0 || len(got) != len(want) {
			t.Fatalf("dict %v: read back %d rows, in order %d", dict, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("dict %v: row %d read back is %q, in order %q", dict, i, got[i], want[i])
			}
		}
	}
}

// TestArrivalWriteErrorLeavesNothing: a mapping that fails after other
// batches were written leaves no object behind, and nothing allocated.
func TestArrivalWriteErrorLeavesNothing(t *testing.T) {
	mem := checkedMem(t)
	const n, failing = 12, 5
	recs := taggedBatches(mem, n, 50)
	defer releaseAll(recs)
	ws := newWatchedStore()
	someWritten := make(chan struct{})
	ws.onWrite = func(sofar []byte) {
		if bytes.Contains(sofar, []byte(marker(0))) && bytes.Contains(sofar, []byte(marker(2))) {
			select {
			case <-someWritten:
			default:
				close(someWritten)
			}
		}
	}
	boom := errors.New("boom")
	stall := &stallStage{fn: func(ctx context.Context, rec arrow.RecordBatch) error {
		if batchIndex(rec) != failing {
			return nil
		}
		select {
		case <-someWritten:
		case <-time.After(3 * time.Second):
			return errors.New("no batch was written before the failing one")
		}
		return boom
	}}
	err := Run(context.Background(), Pipeline{Source: FromBatches(taggedSchema, recs...), Stages: []Stage{stall, Write("mem://watched/out.arrow")}},
		Options{Mem: mem, Workers: 3, Open: ws.open})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if _, err := ws.st.Stat(context.Background(), "out.arrow"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the failure, stat: %v (want not found)", err)
	}
}

// TestArrivalWriteEmpty: no batches (none in the source, or all filtered
// away) still make a valid .arrow file with the schema.
func TestArrivalWriteEmpty(t *testing.T) {
	mem := checkedMem(t)
	recs := taggedBatches(mem, 3, 10)
	defer releaseAll(recs)
	for name, src := range map[string]SourceStage{
		"no input":     FromBatches(taggedSchema),
		"all filtered": FromBatches(taggedSchema, recs...),
	} {
		url := "mem://exec-arrival-empty/" + strings.ReplaceAll(name, " ", "-") + ".arrow"
		err := Run(context.Background(), Pipeline{Source: src, Stages: []Stage{mustStage(t)(Filter("id < 0")), Write(url)}}, Options{Open: testOpen, Mem: mem, Workers: 2})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st, key, err := store.Open(context.Background(), url, store.Options{MemBuckets: testBuckets})
		if err != nil {
			t.Fatal(err)
		}
		b, err := st.ReadAll(context.Background(), key)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		schema, got := readArrowFile(t, mem, b)
		releaseAll(got)
		if !schema.Equal(taggedSchema) || len(got) != 0 {
			t.Fatalf("%s: schema %v, %d batches", name, schema, len(got))
		}
	}
}

// TestArrivalOnlyForArrowFiles: sinks that need order keep it (CSV rows
// come out in stream order even with a straggler).
func TestArrivalOnlyForArrowFiles(t *testing.T) {
	mem := checkedMem(t)
	recs := taggedBatches(mem, 6, 3)
	defer releaseAll(recs)
	// Batch 0 straggles: it is held until a later batch has overtaken it.
	overtaken := make(chan struct{})
	var once sync.Once
	stall := &stallStage{fn: func(ctx context.Context, rec arrow.RecordBatch) error {
		if batchIndex(rec) != 0 {
			once.Do(func() { close(overtaken) })
			return nil
		}
		select {
		case <-overtaken:
		case <-time.After(await.Within):
			return errors.New("no batch overtook batch 0")
		case <-ctx.Done():
		}
		return nil
	}}
	url := "mem://exec-arrival-csv/out.csv"
	if err := Run(context.Background(), Pipeline{Source: FromBatches(taggedSchema, recs...), Stages: []Stage{stall, Write(url)}}, Options{Open: testOpen, Mem: mem, Workers: 3}); err != nil {
		t.Fatal(err)
	}
	st, key, _ := store.Open(context.Background(), url, store.Options{MemBuckets: testBuckets})
	b, err := st.ReadAll(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")[1:]
	for i, l := range lines {
		if want := fmt.Sprintf("%d,", (i/3)*1000+i%3); !strings.HasPrefix(l, want) {
			t.Fatalf("line %d: %q, want it to start %q", i, l, want)
		}
	}
}
