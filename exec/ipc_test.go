package exec

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
)

// TestIPCThroughPipesAndPool: a stream written to a pipe (gathered
// writes through a descriptor of the sink's own) and read from one
// (bodies in reused, unzeroed Pool buffers) gives the same bytes as
// through memory, and every stage's output through them is unchanged.
func TestIPCThroughPipesAndPool(t *testing.T) {
	taxi, lineitem := testData(t)
	must := mustStage(t)
	mem := checkedMem(t)
	for _, tc := range []struct {
		name  string
		src   SourceStage
		stage Stage
	}{
		{"taxi", Scan([]string{taxi}, ScanOptions{BatchRows: 7000}), must(Filter("trip_distance > 1"))},
		{"lineitem-dict", Scan([]string{lineitem}, ScanOptions{Dict: []string{"l_returnflag", "l_linestatus"}}), Select("l_returnflag", "l_linestatus", "l_quantity", "l_shipdate")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := piped(t, mem, tc.src, tc.stage)
			src := piped(t, mem, tc.src)

			// Stage 1 writes the source's stream to a pipe; stage 2 reads
			// it from that pipe and writes to another; the test reads the
			// last one.
			r1, w1, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r2, w2, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			errs := make(chan error, 2)
			go func() {
				defer w1.Close()
				errs <- Run(context.Background(), Pipeline{Source: ReadIPC(bytes.NewReader(src)), Stages: []Stage{WriteIPC(w1)}}, Options{Open: testOpen, Mem: dirtyPool()})
			}()
			go func() {
				defer w2.Close()
				defer r1.Close()
				errs <- Run(context.Background(), Pipeline{Source: ReadIPC(r1), Stages: []Stage{tc.stage, WriteIPC(w2)}}, Options{Open: testOpen, Mem: dirtyPool(), Memory: 1 << 20})
			}()
			got, err := io.ReadAll(r2)
			r2.Close()
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("through pipes and a Pool: %d bytes, want the %d of the in-memory run", len(got), len(want))
			}
		})
	}
}

// TestIPCPipeWithoutEndIsAnError: a writer that stops between batches
// on a pipe is an error for the reader, not a short result.
func TestIPCPipeWithoutEndIsAnError(t *testing.T) {
	mem := checkedMem(t)
	b := batch(t, mem, kvSchema, []any{"a", 1, 1.5}, []any{"b", 2, 2.5})
	defer b.Release()
	full := ipcOf(t, mem, b, b)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.Write(full[:len(full)-8])
		w.Close()
	}()
	defer r.Close()
	rows, err := collectRows(t, mem, ReadIPC(r), Select("k"))
	if err == nil {
		t.Fatalf("no error, %d rows", len(rows))
	}
}

func TestWritevPartialWrites(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Many buffers, more than one writev takes, and more bytes than a
	// pipe holds: the reader frees room bit by bit, so writes are partial.
	var vec [][]byte
	var want []byte
	for i := range 1500 { // more than IOV_MAX
		b := bytes.Repeat([]byte{byte(i)}, 1+i%700)
		vec = append(vec, b)
		want = append(want, b...)
	}
	done := make(chan []byte)
	go func() {
		var got []byte
		buf := make([]byte, 3000)
		for {
			n, err := r.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				done <- got
				return
			}
		}
	}()
	if err := writev(w, vec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got := <-done; !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d, or they differ", len(got), len(want))
	}
}

// TestDirtyPoolSameResults: the stages that fill buffers without zeroing
// them first (filter's copies, gathers for sort and top) give the same
// stream from a Pool full of stale bytes as from fresh memory.
func TestDirtyPoolSameResults(t *testing.T) {
	taxi, _ := testData(t)
	must := mustStage(t)
	cols := []string{"pickup_date", "trip_distance", "payment_type", "fare_amount"}
	for _, stages := range [][]Stage{
		{must(Filter("trip_distance > 0.5"))},
		{must(Filter("trip_distance > 9"))},
		{Sort([]SortKey{{Column: "fare_amount", Desc: true}})},
		{Top(100, []SortKey{{Column: "trip_distance"}})},
	} {
		src := Scan([]string{taxi}, ScanOptions{Columns: cols, BatchRows: 5000})
		want := fused(t, checkedMem(t), 2, src, stages...)
		if got := fused(t, dirtyPool(), 2, src, stages...); !bytes.Equal(got, want) {
			t.Errorf("%s: from a Pool of stale buffers the stream differs", stages[0].Name())
		}
	}
}
