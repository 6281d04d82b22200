// Package fanouthook holds fanout's test hooks: ways to make a job
// misbehave on purpose, for the tests of exactly-once commits, killed
// workers, stragglers and corrupt specs. They are not fanout's API: only
// this module's tests and sluice run's hidden --x- flags set them.
//
// The driver's hooks travel in the context given to fanout.Run; the
// workers' in their environment (SLUICE_X_...), which every executor
// passes on to them, so that the job's spec carries none of them.
package fanouthook

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/sluice-data/sluice/store"
)

// Driver holds the driver's hooks.
type Driver struct {
	// DuplicateAll makes the local executor start two attempts of every
	// task at once.
	DuplicateAll bool
	// SpecEdit, when set, rewrites the spec's bytes before they are
	// written (a worker given a corrupt spec, or a pipeline it cannot
	// parse).
	SpecEdit func([]byte) []byte
	// AfterSpec, when set, runs once the spec is written.
	AfterSpec func(ctx context.Context, st *store.Store, key string)
	// AfterPhase, when set, runs once each phase's manifest is written,
	// with the keys of its committed outputs (a lost or corrupt output).
	AfterPhase func(ctx context.Context, st *store.Store, phase int, keys []string)
	// LeaseEvery, when above zero, is how often the driver renews the
	// job's lease (and its workers read it), instead of every 10 s.
	LeaseEvery time.Duration
}

// HalveSpec is a SpecEdit that keeps the first half of the spec's bytes:
// a worker given a corrupt spec.
func HalveSpec(b []byte) []byte { return b[:len(b)/2] }

// ReplacePlan is a SpecEdit that puts planJSON in the spec in place of
// its plan: a worker given a plan it does not know. A spec that is not a
// JSON object is left as it is.
func ReplacePlan(planJSON string) func([]byte) []byte {
	return func(b []byte) []byte {
		var m map[string]any
		if json.Unmarshal(b, &m) != nil {
			return b
		}
		m["plan"] = json.RawMessage(planJSON)
		out, _ := json.Marshal(m)
		return out
	}
}

type driverKey struct{}

// WithDriver returns ctx carrying the driver's hooks h.
func WithDriver(ctx context.Context, h *Driver) context.Context {
	return context.WithValue(ctx, driverKey{}, h)
}

// From returns the driver's hooks ctx carries; none when it carries none.
func From(ctx context.Context) *Driver {
	if h, ok := ctx.Value(driverKey{}).(*Driver); ok && h != nil {
		return h
	}
	return &Driver{}
}

// The workers' hooks, in their environment.
const (
	// EnvPause is a duration every worker waits between writing its
	// output and committing it (to kill workers mid-task).
	EnvPause = "SLUICE_X_PAUSE_BEFORE_COMMIT"
	// EnvStraggle is "PHASE/TASK/DURATION": the first attempt (a1) of
	// that task waits that long before committing (a straggler).
	EnvStraggle = "SLUICE_X_STRAGGLE"
	// EnvFail is "PHASE/TASK": the first attempt (a1) of that task fails
	// before committing (a task retried).
	EnvFail = "SLUICE_X_FAIL"
)

// Fail is the error the attempt labelled attempt of task of phase fails
// with, from this process's environment; nil for every attempt but the
// one EnvFail names.
func Fail(phase, task int, attempt string) error {
	v := os.Getenv(EnvFail)
	if v == "" {
		return nil
	}
	var p, t int
	if n, _ := fmt.Sscanf(v, "%d/%d", &p, &t); n != 2 {
		return fmt.Errorf("%s=%q: want PHASE/TASK", EnvFail, v)
	}
	if p == phase && t == task && attempt == "a1" {
		return fmt.Errorf("injected failure of the first attempt of phase %d task %d (%s)", phase, task, EnvFail)
	}
	return nil
}

// Straggle is the value of EnvStraggle for the first attempt of task
// of phase waiting d.
func Straggle(phase, task int, d time.Duration) string {
	return fmt.Sprintf("%d/%d/%s", phase, task, d)
}

// Pause is how long the attempt labelled attempt of task of phase waits
// before committing, from this process's environment.
func Pause(phase, task int, attempt string) (time.Duration, error) {
	var pause time.Duration
	if v := os.Getenv(EnvPause); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%s=%q: want a duration", EnvPause, v)
		}
		pause = d
	}
	if v := os.Getenv(EnvStraggle); v != "" {
		var p, t int
		var ds string
		if n, _ := fmt.Sscanf(v, "%d/%d/%s", &p, &t, &ds); n != 3 {
			return 0, fmt.Errorf("%s=%q: want PHASE/TASK/DURATION", EnvStraggle, v)
		}
		d, err := time.ParseDuration(ds)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%s=%q: want PHASE/TASK/DURATION", EnvStraggle, v)
		}
		if p == phase && t == task && attempt == "a1" {
			pause += d
		}
	}
	return pause, nil
}
