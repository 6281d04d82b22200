package fanout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sluice-data/sluice/internal/fanouthook"
	"github.com/sluice-data/sluice/store"
)

// The driver's lease: while it runs, the driver rewrites leaseKey every
// LeaseEvery with a higher beat, and every worker reads it as often. A
// worker whose lease has not changed for LeaseMisses reads in a row (by
// its own clock, so no two clocks are compared), or whose job is gone,
// stops: a cluster's workers, whose driver died with no signal reaching
// them, end within (LeaseMisses+1) x LeaseEvery. Local workers have the
// parent-death signal besides.
//
// The first worker to find the lease lapsed writes lapsedKey, so that
// the tasks a cluster starts after it stop at once instead of each
// watching the lease for as long; a driver that resumes the job removes
// it.
const (
	leaseKey    = "lease.json"
	lapsedKey   = "lease-lapsed.json"
	LeaseEvery  = 10 * time.Second
	LeaseMisses = 6
)

// lease is the lease object's content.
type lease struct {
	Driver string `json:"driver"`
	Beat   int64  `json:"beat"`
	// EveryMS is the driver's interval, which its workers read at.
	EveryMS int64 `json:"every_ms"`
}

// lapse is the lapsed marker's content: the lease a worker saw unchanged.
type lapse struct {
	Driver string    `json:"driver"`
	Beat   int64     `json:"beat"`
	Why    string    `json:"why"`
	Found  time.Time `json:"found"`
}

// holdLease writes the lease now and then every interval until stop is
// called. A beat that fails is tried again at the next one.
func (d *driver) holdLease(ctx context.Context) (stop func(), err error) {
	every := LeaseEvery
	if e := fanouthook.From(ctx).LeaseEvery; e > 0 {
		every = e
	}
	host, _ := os.Hostname()
	l := lease{Driver: fmt.Sprintf("%s pid %d", host, os.Getpid()), EveryMS: every.Milliseconds()}
	put := func() error {
		l.Beat++
		b, _ := json.Marshal(l)
		return d.j.put(ctx, leaseKey, b)
	}
	if err := d.j.do(ctx, func() error { return d.j.st.Delete(ctx, d.j.prefix+lapsedKey) }); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("job lease: %w", err)
	}
	if err := put(); err != nil {
		return nil, fmt.Errorf("job lease: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := put(); err != nil && ctx.Err() == nil {
					d.logf("job lease: %v (tried again in %v)", err, every)
				}
			}
		}
	}()
	return func() { cancel(); <-done }, nil
}

// errDriverGone is the cause a worker stops with when its job's lease
// lapsed or its job was removed.
var errDriverGone = errors.New("the job's driver is gone")

// watchLease reads the job's lease at the interval it names and cancels
// the task with errDriverGone once it has not changed for LeaseMisses
// reads, or once the job is gone (its spec removed). A job without a
// lease (a dry run's, submitted by hand) is not watched.
func watchLease(ctx context.Context, j *job, cancel context.CancelCauseFunc) {
	var last lease
	every, misses := LeaseEvery, 0
	read := func() (lease, error) {
		var l lease
		b, err := j.st.ReadAll(ctx, j.prefix+leaseKey)
		if err == nil {
			err = json.Unmarshal(b, &l)
		}
		return l, err
	}
	l, err := read()
	if err != nil {
		return
	}
	// A lapse another worker found stops this task only while the lease
	// is still the one it saw lapse: a driver that beats again, or a new
	// one resuming the job, is alive.
	var lapsed lapse
	if b, err := j.st.ReadAll(ctx, j.prefix+lapsedKey); err == nil && json.Unmarshal(b, &lapsed) == nil &&
		lapsed.Driver == l.Driver && lapsed.Beat == l.Beat {
		cancel(fmt.Errorf("%w: %s", errDriverGone, lapsed.Why))
		return
	}
	last = l
	if l.EveryMS > 0 {
		every = time.Duration(l.EveryMS) * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l, err := read()
		switch {
		case errors.Is(err, store.ErrNotFound):
			if _, serr := j.st.Stat(ctx, j.prefix+specKey); errors.Is(serr, store.ErrNotFound) {
				cancel(fmt.Errorf("%w: the job %s was removed", errDriverGone, j.url("")))
				return
			}
		case err != nil:
			// A read that failed says nothing of the driver: only a lease
			// read unchanged counts.
		case l.Beat == last.Beat && l.Driver == last.Driver:
			misses++
		default:
			last, misses = l, 0
		}
		if misses >= LeaseMisses {
			why := fmt.Sprintf("its lease %s did not change for %v", j.url(leaseKey), time.Duration(misses)*every)
			// Best effort: without it, later tasks watch for as long.
			b, _ := json.Marshal(lapse{Driver: last.Driver, Beat: last.Beat, Why: why, Found: time.Now().UTC()})
			_, _ = j.st.Put(ctx, j.prefix+lapsedKey, bytes.NewReader(b), store.WriteOptions{})
			cancel(fmt.Errorf("%w: %s", errDriverGone, why))
			return
		}
	}
}
