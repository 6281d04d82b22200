package exec

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var posSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// posBatch is one batch of a positioned test stream.
type posBatch struct {
	pos  Position
	rows int
}

// posLayout is groups of batches in dataset order: group g has
// 1 + g%3 batches of 5 rows, and every fourth group ends with an empty
// last batch (what a filter that emptied it leaves). Batch numbers skip
// one in every fifth group (a batch filtered away).
func posLayout(groups int) []posBatch {
	var out []posBatch
	for g := range groups {
		n := 1 + g%3
		for b := range n {
			batch := int64(b)
			if g%5 == 0 {
				batch *= 2
			}
			out = append(out, posBatch{Position{Group: int64(g), Batch: batch, Last: b == n-1 && g%4 != 0, File: g / 4, RowGroup: g % 4}, 5})
		}
		if g%4 == 0 {
			out = append(out, posBatch{Position{Group: int64(g), Batch: 100, Last: true, File: g / 4, RowGroup: g % 4}, 0})
		}
	}
	return out
}

// posRecord makes the rows of batch i: ids in dataset order, keys with
// many ties, and floats whose sum depends on the order they are added in.
func posRecord(mem memory.Allocator, i int, b posBatch) arrow.RecordBatch {
	bld := array.NewRecordBuilder(mem, posSchema)
	defer bld.Release()
	for r := range b.rows {
		id := int64(i*10 + r)
		bld.Field(0).(*array.Int64Builder).Append(id)
		bld.Field(1).(*array.Int64Builder).Append(id % 3)
		bld.Field(2).(*array.Float64Builder).Append([]float64{1e16, 1, -1e16, 0.1, 3.3}[r] * float64(1+i%7))
	}
	return bld.NewRecordBatch()
}

// posStream writes the layout's batches in the order perm gives (nil:
// dataset order), with positions or without.
func posStream(t testing.TB, mem memory.Allocator, layout []posBatch, perm []int, positions bool) []byte {
	var recs []arrow.RecordBatch
	for j := range layout {
		i := j
		if perm != nil {
			i = perm[j]
		}
		if !positions && layout[i].rows == 0 {
			continue // a stream in dataset order has no empty batches
		}
		rec := posRecord(mem, i, layout[i])
		if positions {
			tagged := WithPosition(rec, layout[i].pos)
			rec.Release()
			rec = tagged
		}
		recs = append(recs, rec)
	}
	return ipcStreamOf(t, mem, posSchema, recs)
}

// ipcStreamOf writes recs as an Arrow IPC stream and releases them.
func ipcStreamOf(t testing.TB, mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch) []byte {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	for _, rec := range recs {
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// arrivalPerm is an order a writer in arrival order could give: the
// batches of each group in order, groups interleaved at random.
func arrivalPerm(layout []posBatch, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 1))
	byGroup := map[int64][]int{}
	var groups []int64
	for i, b := range layout {
		if byGroup[b.pos.Group] == nil {
			groups = append(groups, b.pos.Group)
		}
		byGroup[b.pos.Group] = append(byGroup[b.pos.Group], i)
	}
	var perm []int
	open := []int64{}
	next := 0
	for len(perm) < len(layout) {
		// Up to 6 groups decoded at once, any of them finishing a batch.
		for len(open) < 6 && next < len(groups) {
			open = append(open, groups[next])
			next++
		}
		k := rng.IntN(len(open))
		g := open[k]
		perm = append(perm, byGroup[g][0])
		byGroup[g] = byGroup[g][1:]
		if len(byGroup[g]) == 0 {
			open = append(open[:k], open[k+1:]...)
		}
	}
	return perm
}

func runStream(t *testing.T, mem memory.Allocator, in []byte, opts Options, stages ...Stage) ([]byte, error) {
	t.Helper()
	var out bytes.Buffer
	opts.Mem = mem
	err := Run(context.Background(), Pipeline{Source: ReadIPC(bytes.NewReader(in)), Stages: append(stages, WriteIPC(&out))}, opts)
	return out.Bytes(), err
}

// TestPositionsRestoreOrder: a stream in arrival order whose batches carry
// their positions gives, through every stage that depends on order, the
// bytes the same stream in dataset order gives, whatever the arrival
// order, with the held batches in memory or spilled; a per-batch stage in
// between passes the positions on.
func TestPositionsRestoreOrder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	must := mustStage(t)
	layout := posLayout(40)
	ordered := posStream(t, mem, layout, nil, false)
	stages := map[string]func() []Stage{
		"head":      func() []Stage { return []Stage{Head(23)} },
		"top ties":  func() []Stage { return []Stage{Top(17, []SortKey{{Column: "k"}})} },
		"sort ties": func() []Stage { return []Stage{Sort([]SortKey{{Column: "k", Desc: true}})} },
		"agg-by float sums": func() []Stage {
			return []Stage{must(AggBy([]string{"k"}, "sum(x) as s, mean(x) as m"))}
		},
		"count-by": func() []Stage { return []Stage{CountBy([]string{"k"})} },
		"filter then head": func() []Stage {
			return []Stage{must(Filter("id % 4 != 1")), Head(31)}
		},
		"select": func() []Stage { return []Stage{Select("x", "id")} },
	}
	for name, mk := range stages {
		t.Run(name, func(t *testing.T) {
			want, err := runStream(t, mem, ordered, Options{}, mk()...)
			if err != nil {
				t.Fatal(err)
			}
			for seed := range uint64(6) {
				shuffled := posStream(t, mem, layout, arrivalPerm(layout, seed), true)
				// Odd seeds hold at most a batch in memory: the rest spill.
				opts := Options{Workers: 1 + int(seed%3), TempDir: t.TempDir()}
				if seed%2 == 1 {
					opts.Memory = 1
				}
				got, err := runStream(t, mem, shuffled, opts, mk()...)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if name == "select" {
					// A per-batch stage writes a stream: it passes the
					// batches on in arrival order with their positions,
					// and a stage after it restores dataset order.
					if bytes.Equal(got, want) {
						t.Fatalf("seed %d: select put the batches back in dataset order", seed)
					}
					want2, err := runStream(t, mem, want, Options{}, Head(1000))
					if err != nil {
						t.Fatal(err)
					}
					got2, err := runStream(t, mem, got, Options{}, Head(1000))
					if err != nil {
						t.Fatal(err)
					}
					got, want = got2, want2
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("seed %d: %d bytes, want the %d of the stream in dataset order", seed, len(got), len(want))
				}
			}
		})
	}
}

// TestPositionsArrowFile: per-batch stages then a write to an Arrow IPC
// file store the batches of a stream in arrival order as they come and
// list them by position in the footer: the file reads back as the one
// written from the stream in dataset order, byte for byte once re-read.
func TestPositionsArrowFile(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	layout := posLayout(30)
	dir := t.TempDir()
	readBack := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		sc, recs := readArrowFile(t, mem, b)
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(sc), ipc.WithAllocator(mem))
		for _, rec := range recs {
			if _, ok, _ := PositionOf(rec); ok {
				t.Fatalf("%s: a batch kept its position", name)
			}
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		w.Close()
		return buf.Bytes()
	}
	write := func(in []byte, name string) {
		err := Run(context.Background(), Pipeline{Source: ReadIPC(bytes.NewReader(in)), Stages: []Stage{
			Select("id", "x"), Write(filepath.Join(dir, name))}}, Options{Mem: mem, Workers: 3})
		if err != nil {
			t.Fatal(err)
		}
	}
	write(posStream(t, mem, layout, nil, false), "ordered.arrow")
	want := readBack("ordered.arrow")
	for seed := range uint64(3) {
		write(posStream(t, mem, layout, arrivalPerm(layout, seed), true), "arrival.arrow")
		if got := readBack("arrival.arrow"); !bytes.Equal(got, want) {
			t.Fatalf("seed %d: the file reads back otherwise than in dataset order", seed)
		}
	}
}

// TestPositionsShuffledDiffer checks the test above can fail: without
// positions, the same arrival order gives other results.
func TestPositionsShuffledDiffer(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	layout := posLayout(40)
	ordered := posStream(t, mem, layout, nil, false)
	want, err := runStream(t, mem, ordered, Options{}, Head(23))
	if err != nil {
		t.Fatal(err)
	}
	var bare bytes.Buffer
	// The shuffled stream, its positions dropped by a plain copy.
	rd, err := ipc.NewReader(bytes.NewReader(posStream(t, mem, layout, arrivalPerm(layout, 1), true)), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	w := ipc.NewWriter(&bare, ipc.WithSchema(posSchema), ipc.WithAllocator(mem))
	for rd.Next() {
		rec := plain(rd.RecordBatch())
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	rd.Release()
	w.Close()
	got, err := runStream(t, mem, bare.Bytes(), Options{}, Head(23))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		t.Fatal("a shuffled stream without positions gave dataset order's head")
	}
}

// TestPositionsForeignStreams: a stream from another writer, with no
// position or with metadata of its own on its batches, is read in stream
// order; positions that do not hold together are an error naming the
// batch, never a short or reordered result.
func TestPositionsForeignStreams(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	write := func(metas []map[string]string) []byte {
		var recs []arrow.RecordBatch
		for i, m := range metas {
			rec := posRecord(mem, i, posBatch{rows: 5})
			if m != nil {
				tagged := array.NewRecordBatchWithMetadata(posSchema, rec.Columns(), rec.NumRows(), arrow.MetadataFrom(m))
				rec.Release()
				rec = tagged
			}
			recs = append(recs, rec)
		}
		return ipcStreamOf(t, mem, posSchema, recs)
	}
	pos := func(g, b int64, last bool) map[string]string {
		return map[string]string{PositionKey: Position{Group: g, Batch: b, Last: last}.marshal()}
	}
	bare := make([]map[string]string, 3)
	foreign := make([]map[string]string, 3)
	foreign[1] = map[string]string{"origin": "elsewhere"}
	for name, metas := range map[string][]map[string]string{"no metadata": bare, "metadata of its own": foreign} {
		for _, stage := range []Stage{Head(1000), Select("id", "k", "x")} {
			want, err := runStream(t, mem, write(bare), Options{}, Head(1000))
			if err != nil {
				t.Fatal(err)
			}
			got, err := runStream(t, mem, write(metas), Options{}, stage)
			if err != nil {
				t.Fatalf("%s, %s: %v", name, stage.Name(), err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s, %s: not the stream as it came, without metadata", name, stage.Name())
			}
		}
	}
	cases := []struct {
		name  string
		metas []map[string]string
		err   string
		// passOn: a per-batch stage, which passes positions on in
		// arrival order, finds it too (else the stage after it does).
		passOn bool
	}{
		{"not JSON", []map[string]string{{PositionKey: "group 1"}}, "batch 1: batch position", true},
		{"no batch number", []map[string]string{{PositionKey: `{"group":0}`}}, "want group and batch", true},
		{"negative", []map[string]string{{PositionKey: `{"group":-1,"batch":0}`}}, "negative", true},
		{"then none", []map[string]string{pos(0, 0, false), nil}, "batch 2: carries no position", true},
		{"none then", []map[string]string{nil, pos(0, 0, true)}, "batch 2: carries a position", true},
		{"repeated batch", []map[string]string{pos(0, 0, false), pos(0, 0, true)}, "comes after batch 0", true},
		{"never ends", []map[string]string{pos(0, 0, false)}, "ended before the last batch of group 0", true},
		{"after the last", []map[string]string{pos(0, 0, true), pos(0, 1, true)}, "after the last batch", false},
		{"a group missing", []map[string]string{pos(0, 0, true), pos(2, 0, true)}, "no batch of group 1", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := write(c.metas)
			_, err := runStream(t, mem, in, Options{}, Head(1000))
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("head: error %v, want one containing %q", err, c.err)
			}
			passed, err := runStream(t, mem, in, Options{}, Select("id", "k", "x"))
			if c.passOn {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("select: error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("select: %v", err)
			}
			if _, err = runStream(t, mem, passed, Options{}, Head(1000)); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("head after select: error %v, want one containing %q", err, c.err)
			}
		})
	}
}

// TestPositionsPlainReader: any Arrow reader reads a stream with
// positions, and a per-batch stage's output, as an ordinary stream.
func TestPositionsPlainReader(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	layout := posLayout(8)
	in := posStream(t, mem, layout, arrivalPerm(layout, 3), true)
	out, err := runStream(t, mem, in, Options{}, Select("id", "x"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range [][]byte{in, out} {
		rd, err := ipc.NewReader(bytes.NewReader(s), ipc.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rd.Next() {
			pos, ok, err := PositionOf(rd.RecordBatch())
			if !ok || err != nil {
				t.Fatalf("batch %d: position %v, %v", n, ok, err)
			}
			if want := layout[arrivalPerm(layout, 3)[n]].pos; pos != want {
				t.Fatalf("batch %d: position %v, want %v", n, pos, want)
			}
			n++
		}
		if err := rd.Err(); err != nil || n != len(layout) {
			t.Fatalf("read %d batches (%v), want %d", n, err, len(layout))
		}
		rd.Release()
	}
}

// FuzzParsePosition: a position's text from the input is read or refused
// with an error, never a panic, and what is read writes back the same.
func FuzzParsePosition(f *testing.F) {
	f.Add(Position{Group: 5, Batch: 2, Last: true, File: 1, RowGroup: 3}.marshal())
	f.Add(`{"group":0,"batch":0}`)
	f.Add(`{"group":1e3,"batch":0}`)
	f.Add(`{"group":0,"batch":0} {}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePosition(s)
		if err != nil {
			return
		}
		q, err := ParsePosition(p.marshal())
		if err != nil || q != p {
			t.Fatalf("%q read as %v, which reads back as %v, %v", s, p, q, err)
		}
	})
}

// FuzzPositionOrder: whatever positions a stream's batches carry, restoring
// dataset order either fails or hands on every non-empty batch once, in
// position order, leaking nothing.
func FuzzPositionOrder(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 0, 1, 0, 1, 0})
	f.Add([]byte{2, 0, 1, 0, 0, 1, 1, 0, 1})
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 90 {
			return
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		var layout []posBatch
		for i := 0; i+2 < len(b); i += 3 {
			layout = append(layout, posBatch{Position{Group: int64(b[i] % 8), Batch: int64(b[i+1] % 4), Last: b[i+2]&1 == 1}, int(b[i+2]>>1) % 3})
		}
		in := posStream(t, mem, layout, nil, true)
		var got []Position
		err := Run(context.Background(), Pipeline{Source: ReadIPC(bytes.NewReader(in)), Stages: []Stage{Collect(nil, func(rec arrow.RecordBatch) error {
			// The ids say which batch of the layout it was.
			i := int(rec.Column(0).(*array.Int64).Value(0) / 10)
			got = append(got, layout[i].pos)
			return nil
		})}}, Options{Mem: mem, Memory: 200, TempDir: t.TempDir()})
		if err != nil {
			return
		}
		for i := 1; i < len(got); i++ {
			if !got[i-1].before(got[i]) {
				t.Fatalf("%v handed on before %v", got[i-1], got[i])
			}
		}
		nonEmpty := 0
		for _, l := range layout {
			if l.rows > 0 {
				nonEmpty++
			}
		}
		if len(got) != nonEmpty {
			t.Fatalf("%d batches handed on, want %d", len(got), nonEmpty)
		}
	})
}
