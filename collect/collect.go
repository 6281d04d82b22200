package collect

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/sluice-data/sluice/scan"
)

// Order is the order a Stream delivers batches in.
type Order int

const (
	// Arrival delivers each batch as soon as it is produced.
	Arrival Order = iota
	// Dataset delivers batches in Pos order, holding at most a window of
	// them out of order.
	Dataset
)

func (o Order) String() string {
	if o == Dataset {
		return "dataset"
	}
	return "arrival"
}

// ParseOrder reads "arrival" or "dataset".
func ParseOrder(s string) (Order, error) {
	switch s {
	case "arrival":
		return Arrival, nil
	case "dataset":
		return Dataset, nil
	}
	return 0, fmt.Errorf("order %q: want arrival or dataset", s)
}

// Options configure Collect. The zero value delivers in arrival order
// with GOMAXPROCS producers.
type Options struct {
	Order Order
	// Parallel is how many parts are produced at once. Default GOMAXPROCS.
	Parallel int
	// Window is, in dataset order, the most batches of parts after the
	// head that are held; a producer whose batch does not fit waits.
	// Default 2 per producer.
	Window int
	// WindowBytes, when positive, also bounds the bytes of those batches
	// (one batch is always let in, however large).
	WindowBytes int64
}

// Producer produces part, handing each batch to emit in the part's
// dataset order. emit takes the batch (its one reference) whether or not
// it returns an error; an error from emit means the stream has stopped,
// and the producer should return it. A producer must return when ctx is
// done.
type Producer func(ctx context.Context, part int, emit func(scan.Batch) error) error

// Item is what a Flow carries: a batch, or what a stage made of one.
type Item interface {
	// Release frees the item; the holder of an item calls it once.
	Release()
	// NumRows and Bytes size the item for Options.WindowBytes and Stats.
	NumRows() int64
	Bytes() int64
}

// errClosed is the cause the producers are cancelled with by Close.
var errClosed = errors.New("collect: closed")

// errEnd is what Map's producer returns for a part past its input's end.
var errEnd = errors.New("collect: no more input")

// Stream is the consumer's end of a Collect.
type Stream = Flow[Batch]

// Flow is the consumer's end of a Start, a Map or a Collect: Next, Batch,
// Err, Close, used from one goroutine.
type Flow[T Item] struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	opts   Options
	next   atomic.Int64 // the next part a producer takes
	wg     sync.WaitGroup

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on a change of state someone waits for
	waiting int           // goroutines in wait
	err     error
	closed  bool
	running int // producers not yet returned

	// parts is how many parts there are: fixed by Start, found at the end
	// of Map's input.
	parts int

	// Arrival order: one queue. Dataset order: a queue per part, the head
	// part's delivered first; done marks parts whose producer returned.
	queue   []T
	queues  map[int][]T
	done    map[int]bool
	head    int
	held    int   // batches queued for parts after the head
	heldB   int64 // and their bytes
	queued  int   // all batches queued
	queuedB int64

	cur T

	peak, peakBytes int64
	batches, rows   int64
}

// Collect starts producing parts 0..parts-1 and returns the stream the
// consumer reads them from. Close it when done.
func Collect(ctx context.Context, parts int, produce Producer, opts Options) *Stream {
	return Start(ctx, parts, func(ctx context.Context, part int, emit func(Batch) error) error {
		return produce(ctx, part, func(b scan.Batch) error {
			if b.RecordBatch == nil {
				return fmt.Errorf("collect: part %d: nil batch", part)
			}
			return emit(Batch{RecordBatch: b.RecordBatch, Pos: Pos{Part: part, Position: b.Pos}})
		})
	}, opts)
}

// Start starts producing parts 0..parts-1 of items of any kind, as
// Collect does batches, and returns the flow the consumer reads them
// from. Close it when done.
func Start[T Item](ctx context.Context, parts int, produce func(ctx context.Context, part int, emit func(T) error) error, opts Options) *Flow[T] {
	if opts.Parallel <= 0 {
		opts.Parallel = runtime.GOMAXPROCS(0)
	}
	workers := max(min(opts.Parallel, parts), 0)
	if opts.Window <= 0 {
		opts.Window = 2 * max(opts.Parallel, 1)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	s := &Flow[T]{
		ctx:     ctx,
		cancel:  cancel,
		opts:    opts,
		parts:   parts,
		changed: make(chan struct{}),
		queues:  map[int][]T{},
		done:    map[int]bool{},
		running: workers,
	}
	s.wg.Add(workers)
	for range workers {
		go s.work(produce)
	}
	return s
}

// work produces parts, in order, until there are none left or the
// stream stops.
func (s *Flow[T]) work(produce func(context.Context, int, func(T) error) error) {
	defer func() {
		s.mu.Lock()
		s.running--
		s.notify()
		s.mu.Unlock()
		s.wg.Done()
	}()
	for {
		part := int(s.next.Add(1) - 1)
		s.mu.Lock()
		past := part >= s.parts
		s.mu.Unlock()
		if past || s.ctx.Err() != nil {
			return
		}
		err := s.produceOne(produce, part)
		if err == nil && s.ctx.Err() != nil {
			err = context.Cause(s.ctx)
		}
		if errors.Is(err, errEnd) {
			// Map's input ended before this part: it and every later one
			// do not exist.
			s.mu.Lock()
			s.parts = min(s.parts, part)
			s.notify()
			s.mu.Unlock()
			return
		}
		if err != nil {
			s.fail(err)
			return
		}
		s.mu.Lock()
		s.done[part] = true
		s.notify()
		s.mu.Unlock()
	}
}

// produceOne runs a producer, turning a panic into a *PanicError so that
// one bad part ends the stream instead of the process.
func (s *Flow[T]) produceOne(produce func(context.Context, int, func(T) error) error, part int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Part: part, Value: r, Stack: debug.Stack()}
		}
	}()
	return produce(s.ctx, part, func(b T) error { return s.emit(part, b) })
}

// PanicError is a producer's panic, ended as the stream's error. Error
// is one line; Stack is where it happened, for whoever reports the bug.
type PanicError struct {
	Part  int
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("collect: part %d: panic: %v", e.Part, e.Value)
}

// Unwrap is the panic's value when it is an error (a runtime.Error...).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// notify wakes everyone waiting for a change; s.mu is held.
func (s *Flow[T]) notify() {
	if s.waiting == 0 {
		return // nobody to wake: no channel to close and make again
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// wait releases s.mu until the state changes or the stream is cancelled,
// and takes it again.
func (s *Flow[T]) wait() {
	ch := s.changed
	s.waiting++
	s.mu.Unlock()
	select {
	case <-ch:
	case <-s.ctx.Done():
	}
	s.mu.Lock()
	s.waiting--
}

// fail records the stream's first error and stops the producers. The
// cancellations Close causes are not errors of the stream.
func (s *Flow[T]) fail(err error) {
	s.mu.Lock()
	if s.err == nil && !s.closed && !errors.Is(err, errClosed) {
		s.err = err
	}
	s.notify()
	s.mu.Unlock()
	s.cancel(err)
}

// emit queues a batch of part, waiting while there is no room for it.
func (s *Flow[T]) emit(part int, b T) error {
	size := b.Bytes()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.ctx.Err() != nil {
			b.Release()
			return context.Cause(s.ctx)
		}
		if s.opts.Order == Arrival {
			// With one batch queued per producer but one, and each producer
			// holding at most the one it is handing over, at most two
			// batches per producer are alive, the consumer's included.
			if len(s.queue) < max(s.opts.Parallel-1, 1) {
				s.queue = append(s.queue, b)
				s.add(size)
				return nil
			}
		} else {
			q := s.queues[part]
			switch {
			case part == s.head && len(q) < 2:
				// The head always moves: it is what the consumer waits for.
				s.queues[part] = append(q, b)
				s.add(size)
				return nil
			case part != s.head && s.held < s.opts.Window &&
				(s.opts.WindowBytes <= 0 || s.held == 0 || s.heldB+size <= s.opts.WindowBytes):
				s.queues[part] = append(q, b)
				s.held++
				s.heldB += size
				s.add(size)
				return nil
			}
		}
		s.wait()
	}
}

// add counts a queued batch; s.mu is held.
func (s *Flow[T]) add(size int64) {
	s.queued++
	s.queuedB += size
	s.peak = max(s.peak, int64(s.queued))
	s.peakBytes = max(s.peakBytes, s.queuedB)
	s.notify()
}

// take removes a delivered batch from the counts; s.mu is held.
func (s *Flow[T]) take(b T) {
	s.queued--
	s.queuedB -= b.Bytes()
	s.batches++
	s.rows += b.NumRows()
	s.notify()
}

// Next waits for the next batch; false means the stream is over (see
// Err). The batch Next moved to is Batch.
func (s *Flow[T]) Next() bool {
	var zero T
	s.cur = zero
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.err != nil || s.closed {
			return false
		}
		if s.opts.Order == Arrival {
			if len(s.queue) > 0 {
				s.cur = s.queue[0]
				s.queue[0] = zero
				s.queue = s.queue[1:]
				s.take(s.cur)
				return true
			}
		} else {
			for {
				if q := s.queues[s.head]; len(q) > 0 {
					s.cur = q[0]
					if len(q) == 1 {
						delete(s.queues, s.head)
					} else {
						q[0] = zero
						s.queues[s.head] = q[1:]
					}
					s.take(s.cur)
					return true
				}
				if !s.done[s.head] {
					break
				}
				// The head is complete: the next part becomes the head,
				// and its queued batches leave the window.
				delete(s.done, s.head)
				s.head++
				for _, b := range s.queues[s.head] {
					s.held--
					s.heldB -= b.Bytes()
				}
				s.notify()
			}
		}
		if s.running == 0 {
			if s.err == nil && s.ctx.Err() != nil {
				s.err = context.Cause(s.ctx)
				return false
			}
			if s.opts.Order == Dataset && s.head < s.parts {
				// Every producer returned without error, so every part is
				// done; this cannot happen.
				s.err = fmt.Errorf("collect: part %d never completed", s.head)
			}
			return false
		}
		if s.ctx.Err() != nil && s.err == nil {
			// The caller's context ended: the producers stop with it.
			s.err = context.Cause(s.ctx)
			return false
		}
		s.wait()
	}
}

// Batch is the item Next moved to. The caller owns it: Release it when
// done.
func (s *Flow[T]) Batch() T { return s.cur }

// Err is why the stream stopped early: nil after every batch of every
// part was delivered (or after Close), else the first error.
func (s *Flow[T]) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Stats describe a stream so far.
type Stats struct {
	Batches, Rows int64
	// Peak is the most batches the collector held queued at once, and
	// PeakBytes the most bytes (batches a producer is still making, or
	// is waiting to hand over, are not counted).
	Peak, PeakBytes int64
}

// Stats describes the stream so far.
func (s *Flow[T]) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Batches: s.batches, Rows: s.rows, Peak: s.peak, PeakBytes: s.peakBytes}
}

// Close stops the producers, waits for them and releases every batch not
// yet delivered. It is safe to call more than once; batches already
// delivered stay the consumer's.
func (s *Flow[T]) Close() {
	s.mu.Lock()
	s.closed = true
	s.notify()
	s.mu.Unlock()
	s.cancel(errClosed)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.queue {
		b.Release()
	}
	s.queue = nil
	for _, q := range s.queues {
		for _, b := range q {
			b.Release()
		}
	}
	s.queues = map[int][]T{}
	s.queued, s.queuedB, s.held, s.heldB = 0, 0, 0, 0
}

// Drain hands every item of a flow to fn in the flow's order and closes
// it: the error is the flow's, or fn's first. fn does not own the item;
// it is released when fn returns.
func Drain[T Item](s *Flow[T], fn func(T) error) error {
	defer s.Close()
	for s.Next() {
		b := s.Batch()
		err := fn(b)
		b.Release()
		if err != nil {
			return err
		}
	}
	return s.Err()
}
