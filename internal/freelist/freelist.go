// Package freelist keeps the working memory of parallel workers (an
// expression's scratch, a batch's encoded keys) from one batch to the
// next.
package freelist

import "sync"

// List is a free list of *T. Unlike a sync.Pool it keeps what it holds
// across garbage collections: a pipeline that allocates little collects
// every few milliseconds, and memory dropped at each collection is made
// again, which is the cost reusing it is there to avoid (TPC-H Q6 made
// 140 MB of expression scratch that way, and collected every 8 ms). It
// holds at most as many as were ever in use at once. The zero value is
// ready to use.
type List[T any] struct {
	mu   sync.Mutex
	free []*T
}

// Get returns a *T no other caller holds: one put back, or a new zero T.
func (l *List[T]) Get() *T {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.free); n > 0 {
		x := l.free[n-1]
		l.free[n-1] = nil
		l.free = l.free[:n-1]
		return x
	}
	return new(T)
}

// Put gives x back for a later Get; the caller no longer uses it.
func (l *List[T]) Put(x *T) {
	l.mu.Lock()
	l.free = append(l.free, x)
	l.mu.Unlock()
}
