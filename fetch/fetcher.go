package fetch

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/store"
)

// Fetcher schedules reads from one store. It keeps what it has learned
// about the link (latencies, throughput, the in-flight limit) and a pool of
// pages across plans, so one Fetcher per store and job is the intended use.
// It is safe for concurrent use; plans running at once share the in-flight
// limit, and each has its own memory budget.
type Fetcher struct {
	st    *store.Store
	opts  Options
	retry retry.Policy
	link  *linkModel
	pages *pages

	// scratch holds the buffers bodies are read into before their bytes
	// are committed to a unit, 64 KiB each.
	scratch sync.Pool

	// Coalescing and splitting bounds; variables so tests can scale them
	// down to objects of a few KiB.
	minHole, maxHole    int64
	splitAbove, maxPart int64
	headSplit, headPart int64 // the same for a plan's first unit
	initWindow          int64 // a plan's first window of bytes in flight
}

// New returns a Fetcher reading from st.
func New(st *store.Store, opts Options) *Fetcher {
	opts = opts.withDefaults()
	return &Fetcher{
		st:         st,
		opts:       opts,
		retry:      retry.Policy{Retries: opts.MaxRetries, Base: opts.RetryBase, Max: maxBackoff},
		link:       newLinkModel(opts),
		pages:      newPages(opts.Memory, opts.Mem),
		minHole:    minHole,
		maxHole:    maxHole,
		splitAbove: splitAbove,
		maxPart:    maxPart,
		headSplit:  headSplit,
		headPart:   headPart,
		initWindow: initWindow,
		scratch:    sync.Pool{New: func() any { b := make([]byte, scratchSize); return &b }},
	}
}

const scratchSize = 64 << 10

// Request is one unit of consumption: ranges of one object that the
// consumer reads together and releases together.
type Request struct {
	// Key is the object's key in the Fetcher's store.
	Key string
	// Ranges are absolute (Off >= 0, Len >= 0), in any order, and may
	// overlap; empty ones are ignored.
	Ranges []store.Range
	// ETag, when known (from a listing or a footer read), pins the
	// object's version from the first request; otherwise the first
	// response pins it. Every unit of the same key in a plan reads the
	// same version.
	ETag string
	// Size, when known and above zero, lets ranges past the end fail
	// before any request is made.
	Size int64
	// Tag is carried to the Unit untouched, for the consumer's bookkeeping
	// (which file and row group this is).
	Tag any
	// Have, when set, are bytes of the object from offset HaveOff on that
	// the consumer already read, of the version ETag names (a footer's
	// suffix read that took in the last row group too): the unit's spans
	// that lie within them are copied from there rather than requested,
	// and are ready at once.
	Have    []byte
	HaveOff int64
}

func (r Request) validate(st *store.Store) error {
	for _, rg := range r.Ranges {
		if rg.Off < 0 || rg.Len < 0 {
			return &store.Error{Op: "read", URL: st.URL(r.Key), Kind: store.KindInvalid,
				Err: fmt.Errorf("fetch takes absolute ranges, got offset %d length %d", rg.Off, rg.Len)}
		}
		if r.Size > 0 && rg.Len > 0 && rg.Off+rg.Len > r.Size {
			return pastEnd(st, r.Key, rg.Off, rg.Off+rg.Len, r.Size)
		}
	}
	if r.HaveOff < 0 {
		return &store.Error{Op: "read", URL: st.URL(r.Key), Kind: store.KindInvalid,
			Err: fmt.Errorf("bytes given from offset %d", r.HaveOff)}
	}
	return nil
}

// ErrPastEnd is a range that runs past the end of its object: asked
// for by a reader that knows an object to be longer than it is, such as
// one cut short after it was written.
var ErrPastEnd = errors.New("past the end of the object")

func pastEnd(st *store.Store, key string, a, b, size int64) error {
	return &store.Error{Op: "read", URL: st.URL(key), Kind: store.KindInvalid,
		Err: fmt.Errorf("range [%d, %d) is %w (%d bytes)", a, b, ErrPastEnd, size)}
}

// Plan starts fetching reqs, in that order, and returns the running plan.
// The caller must Close it.
func (f *Fetcher) Plan(ctx context.Context, reqs []Request) *Plan {
	return f.PlanSeq(ctx, func(yield func(Request, error) bool) {
		for _, r := range reqs {
			if !yield(r, nil) {
				return
			}
		}
	})
}

// PlanSeq is Plan over requests produced while the plan runs (for example
// as footers are read). The sequence is pulled only as memory allows, from
// a goroutine of the plan; an error from it fails the plan. Close waits for
// a pull in progress to return, so a sequence that does I/O should watch
// the same context.
func (f *Fetcher) PlanSeq(ctx context.Context, reqs iter.Seq2[Request, error]) *Plan {
	p := newPlan(ctx, f)
	p.wg.Add(2)
	go p.schedule(reqs)
	go p.monitor()
	return p
}
