package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/scan"
)

// TestSharedSubPipeline: an aggregation that a plan's sub-pipelines
// compute in three places (TPC-H Q15's shape: a join's other side, a let
// inside it, and another join) scans its data once, and the run gives
// the stream, byte for byte, that running it in every place gives: on
// one or three workers, and with a memory so small that the shared
// result spills (its file gone at the end).
func TestSharedSubPipeline(t *testing.T) {
	_, lineitem := testData(t)
	part := "scan " + lineitem + ` --stats --filter "l_shipdate >= date '1995-01-01'" | agg-by l_suppkey 'sum(l_extendedprice * (1 - l_discount)) as rev'`
	text := "scan " + lineitem + " --columns l_orderkey,l_suppkey" +
		" | join (" + part + " | let top (" + part + " | agg 'max(rev) as m') | filter 'rev * 3 > top') --on l_suppkey" +
		" | join (" + part + ") --on l_suppkey --prefix b_ --how left" +
		" | sort --by l_orderkey,l_suppkey"
	p, err := plan.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, mem memory.Allocator, share bool, workers int, memory int64, dir string) ([]byte, int) {
		t.Helper()
		var scans atomic.Int32
		var out bytes.Buffer
		env := Env{Output: WriteIPC(&out), ScanStats: func(s *plan.Scan) func(string, scan.Stats) {
			return func(string, scan.Stats) { scans.Add(1) }
		}}
		if !share {
			env.share = &sharing{}
		}
		pipe, err := Compile(p, env)
		if err != nil {
			t.Fatal(err)
		}
		if err := Run(context.Background(), pipe, Options{Open: testOpen, Mem: mem, Workers: workers, Memory: memory, TempDir: dir}); err != nil {
			t.Fatal(err)
		}
		return out.Bytes(), int(scans.Load())
	}
	mem := checkedMem(t)
	want, n := run(t, mem, false, 1, 0, "")
	if n != 3 {
		t.Fatalf("unshared: the part scanned %d times, want 3", n)
	}
	if rows := table(t, want); len(rows) < 100 {
		t.Fatalf("unshared: %d rows: the test joins too little", len(rows))
	}
	for _, c := range []struct {
		workers int
		memory  int64
	}{{1, 0}, {3, 0}, {1, 1 << 10}, {3, 1 << 10}} {
		t.Run(fmt.Sprintf("workers=%d,memory=%d", c.workers, c.memory), func(t *testing.T) {
			dir := t.TempDir()
			got, n := run(t, mem, true, c.workers, c.memory, dir)
			if n != 1 {
				t.Errorf("the part scanned %d times, want 1", n)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("shared: %d bytes, unshared %d: not the same stream", len(got), len(want))
			}
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				t.Errorf("left in the temp dir: %v", left)
			}
		})
	}
}

// TestSharingChoice: what Compile shares. Only sub-pipelines, never the
// plan itself; only first stages that end in an aggregation; the longest
// such part; and none that fewer than two places read.
func TestSharingChoice(t *testing.T) {
	agg := `scan x --filter 'a > 1' | agg-by k 'sum(v) as s'`
	for _, c := range []struct {
		name string
		text string
		want []int // uses of each shared part, longest part first
	}{
		{"a join side and a let in it", "scan y | join (" + agg + " | let m (" + agg + " | agg 'max(s) as m')) --on k", []int{2}},
		{"the plan itself is no reader", agg + " | let m (" + agg + " | agg 'max(s) as m')", nil},
		{"a scan and a filter stream: not shared", "scan y | join (scan x --filter 'a > 1') --on k | join (scan x --filter 'a > 1') --on k --prefix b_", nil},
		{"different arguments", "scan y | join (" + agg + ") --on k | join (scan x --filter 'a > 2' | agg-by k 'sum(v) as s') --on k --prefix b_", nil},
		{"the longest part", "scan y | join (" + agg + " | agg 'max(s) as m') --on k | join (" + agg + " | agg 'max(s) as m') --on k --prefix b_ | join (" + agg + ") --on k --prefix c_",
			[]int{2, 2}},
		{"a part only inside a longer one", "scan y | join (" + agg + " | agg 'max(s) as m') --on k | join (" + agg + " | agg 'max(s) as m') --on k --prefix b_", []int{2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := plan.Parse(c.text)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, en := range newSharing(p).entries {
				got = append(got, en.uses)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("uses %v, want %v", got, c.want)
			}
		})
	}
}

// failAt is a stage that fails on the batch whose first n is bad, and
// counts the batches it sees; with cancel, it cancels the first run it is
// in, as a reader's cancellation would.
type failAt struct {
	bad    int64
	seen   *atomic.Int32
	cancel func()
	once   *sync.Once
}

func (s failAt) Name() string { return "fail-at" }
func (s failAt) bind(e *env, in *arrow.Schema) (*bound, error) {
	return &bound{name: "fail-at", out: in, mapper: s}, nil
}
func (s failAt) mapBatch(ctx context.Context, in arrow.RecordBatch) (arrow.RecordBatch, error) {
	s.seen.Add(1)
	if s.cancel != nil {
		first := false
		s.once.Do(func() { first = true })
		if first {
			s.cancel()
			return nil, ctx.Err()
		}
	}
	if in.Column(1).(interface{ Value(int) int64 }).Value(0) == s.bad {
		return nil, errBad
	}
	in.Retain()
	return in, nil
}

var errBad = errors.New("a bad batch")

// TestSharedReaders: readers of one shared part in one run. The part runs
// once for readers at once; its error reaches every reader without
// running it again; a reader cancelled while it runs the part leaves it
// to the next; and each reader's batches are the part's, in order.
func TestSharedReaders(t *testing.T) {
	mem := checkedMem(t)
	b1 := batch(t, mem, kvSchema, []any{"a", 1, 1.5})
	defer b1.Release()
	b2 := batch(t, mem, kvSchema, []any{"b", 2, nil}, []any{"c", 3, 0.5})
	defer b2.Release()
	e := newEnv(Options{Mem: mem})
	entry := func(bad int64, seen *atomic.Int32) *sharedEntry {
		return &sharedEntry{uses: 3, pipe: Pipeline{Source: FromBatches(kvSchema, b1, b2), Stages: []Stage{failAt{bad: bad, seen: seen}}}}
	}
	// readAll reads one place's batches, as rows.
	readAll := func(ctx context.Context, en *sharedEntry) ([]string, error) {
		src, err := (&sharedSource{entry: en}).open(ctx, e)
		if err != nil {
			return nil, err
		}
		defer src.Close()
		var rows []string
		for {
			b, err := src.Next(ctx)
			if err != nil {
				if errors.Is(err, io.EOF) {
					return rows, nil
				}
				return rows, err
			}
			rows = append(rows, rowText(b, " ")...)
			b.Release()
		}
	}
	t.Run("once, in order", func(t *testing.T) {
		var seen atomic.Int32
		en := entry(-1, &seen)
		ctx, release := withShareScope(context.Background())
		defer release()
		var wg sync.WaitGroup
		got := make([]string, 3)
		for i := range 3 {
			wg.Go(func() {
				rows, err := readAll(ctx, en)
				got[i] = fmt.Sprint(rows, err)
			})
		}
		wg.Wait()
		want := "[a 1 1.5 b 2 (null) c 3 0.5] <nil>"
		for i, g := range got {
			if g != want {
				t.Errorf("reader %d: %s, want %s", i, g, want)
			}
		}
		if n := seen.Load(); n != 2 {
			t.Errorf("the part saw %d batches, want 2 (one run)", n)
		}
	})
	t.Run("an error reaches every reader", func(t *testing.T) {
		var seen atomic.Int32
		en := entry(2, &seen)
		ctx, release := withShareScope(context.Background())
		defer release()
		for i := range 3 {
			if _, err := readAll(ctx, en); !errors.Is(err, errBad) {
				t.Errorf("reader %d: %v, want %v", i, err, errBad)
			}
		}
		if n := seen.Load(); n > 2 {
			t.Errorf("the part saw %d batches: it ran more than once", n)
		}
	})
	t.Run("a cancelled reader leaves the part to the next", func(t *testing.T) {
		var seen atomic.Int32
		ctx, release := withShareScope(context.Background())
		defer release()
		cancelled, cancel := context.WithCancel(ctx)
		defer cancel()
		en := entry(-1, &seen)
		en.pipe.Stages = []Stage{failAt{bad: -1, seen: &seen, cancel: cancel, once: &sync.Once{}}}
		if _, err := readAll(cancelled, en); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled reader: %v", err)
		}
		if rows, err := readAll(ctx, en); err != nil || strings.Join(rows, ",") != "a 1 1.5,b 2 (null),c 3 0.5" {
			t.Errorf("the next reader: %q, %v", rows, err)
		}
	})
}
