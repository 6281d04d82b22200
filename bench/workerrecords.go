package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/sluice-data/sluice/store"
)

// workerRecordsName is the name of worker i's records under a run's
// records prefix.
func workerRecordsName(i int) string { return fmt.Sprintf("w%03d.jsonl", i) }

// PutWorkerRecords leaves worker i's records under prefix in st, where
// WorkerRecords reads them: the store, not the executor that started the
// worker, carries what it measured back to the driver.
func PutWorkerRecords(ctx context.Context, st *store.Store, prefix string, i int, recs []Record) error {
	var b bytes.Buffer
	if err := WriteRecords(&b, "jsonl", recs); err != nil {
		return err
	}
	if _, err := st.Put(ctx, prefix+workerRecordsName(i), &b, store.WriteOptions{}); err != nil {
		return fmt.Errorf("writing the records: %w", err)
	}
	return nil
}

// WorkerRecords reads the records PutWorkerRecords left for worker i
// under prefix; none, and no error, when it left none (it died first).
func WorkerRecords(ctx context.Context, st *store.Store, prefix string, i int) ([]Record, error) {
	b, err := st.ReadAll(ctx, prefix+workerRecordsName(i))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading its records: %w", err)
	}
	return ReadRecords(bytes.NewReader(b), "jsonl")
}

// LastRound is the records of the result's last round, every worker
// count's: one round's timeline, whose panels compare the counts.
func (r WorkersResult) LastRound() []Record {
	if len(r.Runs) == 0 {
		return nil
	}
	last := r.Runs[len(r.Runs)-1].Round
	cells := map[int]bool{}
	for _, run := range r.Runs {
		cells[run.Cell] = run.Round == last
	}
	var recs []Record
	for _, rec := range r.Records {
		if cells[rec.Cell] {
			recs = append(recs, rec)
		}
	}
	return recs
}
