package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

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

// RunWorker is one worker process of a fanned-out run (RunWorkers): the
// benchmark cfg under its own prefix of the run's, WorkerPrefix(run,
// index), from cfg.Start, which the run's workers share, its seed moved by
// its index so that no two workers write the same bytes. Then, also after
// a failure or cancellation (what was measured is the driver's to report),
// it leaves its records under recordsPrefix in records (PutWorkerRecords).
// It fails when a request failed after its retries.
func RunWorker(ctx context.Context, st *store.Store, run string, index int, cfg Config, records *store.Store, recordsPrefix string) error {
	cfg.Seed = max(cfg.Seed, 1) + uint64(index)
	res, runErr := Run(ctx, st, WorkerPrefix(run, index), cfg)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := PutWorkerRecords(wctx, records, recordsPrefix, index, res.Records); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil {
		return runErr
	}
	for _, s := range res.Summaries {
		if s.Errors > 0 {
			return fmt.Errorf("bench: %d requests failed after retries", s.Errors)
		}
	}
	return nil
}
