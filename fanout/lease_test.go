package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-data/sluice/store"
)

// A worker's lease watch stops the task once the lease stops changing or
// the job is removed, and never while the driver beats. The lease is
// time, so the test runs in a synctest bubble: its clock moves only when
// the watch and the driver both wait, so a loaded machine cannot make a
// beating driver look gone.
func TestWatchLease(t *testing.T) { synctest.Test(t, testWatchLease) }

func testWatchLease(t *testing.T) {
	fd, err := store.NewFileDriver(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reads := &readHook{Driver: fd}
	st, prefix := store.New(reads, ""), ""
	defer st.Close()
	j := &job{st: st, prefix: prefix}
	const every = 20 * time.Millisecond
	beat := func(n int64) {
		b, _ := json.Marshal(lease{Driver: "test", Beat: n, EveryMS: every.Milliseconds()})
		if err := j.put(context.Background(), leaseKey, b); err != nil {
			t.Error(err)
		}
	}
	if err := j.put(context.Background(), specKey, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	// watch runs a watch, and while beside it until the watch ends.
	watch := func(within time.Duration, while func(stop <-chan struct{})) (time.Duration, error) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		t0 := time.Now()
		done := make(chan struct{})
		go func() { watchLease(ctx, j, cancel); close(done) }()
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() { while(stop); close(stopped) }()
		defer func() { close(stop); <-stopped }()
		select {
		case <-ctx.Done():
		case <-time.After(within):
			cancel(nil)
		}
		<-done
		return time.Since(t0), context.Cause(ctx)
	}

	// beating is a driver that beats from beat first on, twice an interval.
	beating := func(first int64) func(stop <-chan struct{}) {
		return func(stop <-chan struct{}) {
			for n := first; ; n++ {
				select {
				case <-stop:
					return
				case <-time.After(every / 2):
					beat(n)
				}
			}
		}
	}

	// A driver that beats: the watch goes on.
	beat(1)
	_, cause := watch(20*every, beating(2))
	if errors.Is(cause, errDriverGone) {
		t.Fatalf("stopped while the driver beat: %v", cause)
	}

	// A driver that stopped beating: the worker stops after LeaseMisses reads.
	took, cause := watch(100*every, func(<-chan struct{}) {})
	if !errors.Is(cause, errDriverGone) || !strings.Contains(cause.Error(), "did not change") || took < LeaseMisses*every {
		t.Fatalf("a lapsed lease: %v after %v", cause, took)
	}

	// The lapse found, a task started later stops at once.
	took, cause = watch(100*every, func(<-chan struct{}) {})
	if !errors.Is(cause, errDriverGone) || !strings.Contains(cause.Error(), "did not change") || took > LeaseMisses*every {
		t.Fatalf("a task started after the lapse was found: %v after %v", cause, took)
	}

	// The driver beats again (or a new one resumes): the mark of the
	// lapse no longer stops a task.
	beat(100)
	_, cause = watch(10*every, beating(101))
	if errors.Is(cause, errDriverGone) {
		t.Fatalf("stopped by the mark of a lapse the driver recovered from: %v", cause)
	}

	// A removed job: the worker stops at the next read. The job goes once
	// the watch has read the lease and the lapse mark (its start), from
	// the watch's own read: removed before, there is no lease to watch.
	st.Delete(context.Background(), prefix+leaseKey)
	st.Delete(context.Background(), prefix+lapsedKey)
	st.Delete(context.Background(), prefix+specKey)
	beat(1)
	reads.after.Store(func(key string) {
		if key == prefix+lapsedKey {
			st.Delete(context.Background(), prefix+leaseKey)
		}
	})
	_, cause = watch(100*every, func(<-chan struct{}) {})
	if !errors.Is(cause, errDriverGone) || !strings.Contains(cause.Error(), "was removed") {
		t.Fatalf("a removed job: %v", cause)
	}
}

// readHook is a driver that calls after, when set, with the key of each
// read once it is open.
type readHook struct {
	store.Driver
	after atomic.Value // func(key string)
}

func (d *readHook) ReadRange(ctx context.Context, key string, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error) {
	rc, info, err := d.Driver.ReadRange(ctx, key, r, o)
	if f, _ := d.after.Load().(func(string)); f != nil {
		f(key)
	}
	return rc, info, err
}
