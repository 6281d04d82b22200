package cli

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/exec"
)

// TestScanArrivalPositions: `scan --order arrival -o -` is an Arrow IPC
// stream any Arrow reader reads, each batch carrying its place in the
// dataset: every row group read is one group, numbered in dataset order,
// whose batches come in order and end with a last one; and a filter
// piped after it passes the positions on.
func TestScanArrivalPositions(t *testing.T) {
	dir := pipeData(t) // 3 files of 3 row groups each
	taxi := filepath.Join(dir, "taxi")
	for _, script := range []string{
		"sluice scan " + taxi + " --columns fare_amount --batch-rows 700 --concurrency 8 --order arrival -q -o -",
		"sluice scan " + taxi + " --columns fare_amount --batch-rows 700 --concurrency 8 --order arrival -q -o - | sluice filter 'fare_amount > 20'",
	} {
		out, stderr, code := bash(t, script)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", script, code, stderr)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		rd, err := ipc.NewReader(bytes.NewReader(out), ipc.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		last := map[int64]int64{} // group: the last batch number seen
		ended := map[int64]bool{}
		var rows int64
		var batches, behind int
		var prev exec.Position
		for rd.Next() {
			rec := rd.RecordBatch()
			pos, ok, err := exec.PositionOf(rec)
			if !ok || err != nil {
				t.Fatalf("batch %d: no position (%v)", batches, err)
			}
			if b, seen := last[pos.Group]; ended[pos.Group] || seen && pos.Batch <= b {
				t.Fatalf("batch %d: %v out of order within its group", batches, pos)
			}
			if batches > 0 && (pos.Group < prev.Group || pos.Group == prev.Group && pos.Batch < prev.Batch) {
				behind++
			}
			last[pos.Group], ended[pos.Group], prev = pos.Batch, pos.Last, pos
			rows += rec.NumRows()
			batches++
		}
		if err := rd.Err(); err != nil {
			t.Fatal(err)
		}
		rd.Release()
		mem.AssertSize(t, 0)
		if len(ended) != 9 {
			t.Fatalf("%d groups, want the 9 row groups", len(ended))
		}
		for g := range int64(9) {
			if !ended[g] {
				t.Fatalf("group %d has no last batch", g)
			}
		}
		if rows == 0 || script[len(script)-1] == '-' && rows != 40000 {
			t.Fatalf("%d rows", rows)
		}
		t.Logf("%d batches, %d behind the one before them in dataset order", batches, behind)
	}
}
