package bench

import (
	"context"
	"testing"

	"github.com/sluice-data/sluice/store"
)

func TestWorkerRecordsRoundTrip(t *testing.T) {
	ctx := context.Background()
	st, prefix, err := store.Open(ctx, "mem://bench-records/run/", store.Options{MemBuckets: store.NewMemBuckets()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs := []Record{{Kind: Put, Cell: 1, Key: "a", ObjectSize: 10}, {Kind: Get, Cell: 2, Key: "b", ObjectSize: 20}}
	if err := PutWorkerRecords(ctx, st, prefix, 3, recs); err != nil {
		t.Fatal(err)
	}
	got, err := WorkerRecords(ctx, st, prefix, 3)
	if err != nil || len(got) != 2 || got[1].Key != "b" || got[1].ObjectSize != 20 {
		t.Errorf("read back %+v, %v", got, err)
	}
	// A worker that died before writing any left none: not an error.
	if got, err := WorkerRecords(ctx, st, prefix, 4); got != nil || err != nil {
		t.Errorf("worker without records: %v, %v", got, err)
	}
}

func TestLastRoundKeepsItsCells(t *testing.T) {
	res := WorkersResult{
		Runs:    []WorkersRun{{Round: 0, Workers: 1, Cell: 0}, {Round: 0, Workers: 2, Cell: 1}, {Round: 1, Workers: 1, Cell: 2}, {Round: 1, Workers: 2, Cell: 3}},
		Records: []Record{{Cell: 0}, {Cell: 1}, {Cell: 2}, {Cell: 3}, {Cell: 3}},
	}
	got := res.LastRound()
	if len(got) != 3 || got[0].Cell != 2 || got[2].Cell != 3 {
		t.Errorf("LastRound: %+v", got)
	}
	if (WorkersResult{}).LastRound() != nil {
		t.Error("no runs: want no records")
	}
}
