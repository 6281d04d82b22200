package exec

import (
	"context"
	"sync"
)

// A run's Options.Memory is one budget for everything in it that holds
// rows and can spill them (hash aggregations' groups, sorts' batches,
// joins' right sides, shared parts' results, batches held to restore
// dataset order), in the outermost Run and in every Run it starts (a
// join's other side, a shared part, a let): each such Run would
// otherwise hold a whole budget of its own, and each consumer in it
// another. A consumer holds a reservation, grows it before it holds
// more, and spills what it holds when a grow fails.
//
// A grow fails when it would take the run past its budget, or the
// consumer past its share: the budget less what is pinned (held by
// consumers that no longer spill: a join's side read whole, a shared
// result), divided evenly among the spillable consumers that have grown
// and not freed since. A consumer counts from its first bytes, not from
// its making: a sort after an aggregation does not halve the
// aggregation's share before it has a row. So the first consumer may
// take the whole budget while it is alone, and gives way at its next
// grow once another holds rows, instead of starving it into spilling all
// it gets.
//
// Others may hold the budget past their shares (an aggregation forces in
// its whole result while it sends it on), so a grow may fail though the
// consumer holds less than its share, or nothing. A consumer that spills
// what it holds whenever a grow fails would then spill a batch at a time:
// a sort grows with growFloor instead, holding up to a floor within its
// share before it spills; batches held to restore dataset order hold the
// first one whatever the budget says.

// memBudget is one run's budget, shared by the Runs it starts.
type memBudget struct {
	mu     sync.Mutex
	size   int64
	used   int64
	peak   int64 // the most used has been, for tests
	pinned int64
	live   int // spillable reservations that grew and have not freed
}

func newMemBudget(size int64) *memBudget { return &memBudget{size: size} }

type budgetKey struct{}

// withBudget returns ctx with b as the budget of the Runs under it.
func withBudget(ctx context.Context, b *memBudget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

func budgetOf(ctx context.Context) *memBudget {
	b, _ := ctx.Value(budgetKey{}).(*memBudget)
	return b
}

// reservation is what one consumer holds of a budget.
type reservation struct {
	b *memBudget
	// limit, when above zero, caps the consumer on its own (a sort's or
	// a join's --memory, a join side's share of the sides still to read).
	limit  int64
	held   int64
	live   bool // counted in b.live
	pinned bool
}

func (b *memBudget) reserve(limit int64) *reservation {
	return &reservation{b: b, limit: limit}
}

// share is what one spillable consumer may hold now. Called with mu held.
func (b *memBudget) share(r *reservation) int64 {
	n := b.live
	if !r.live {
		n++
	}
	s := (b.size - b.pinned) / int64(n)
	if r.limit > 0 {
		s = min(s, r.limit)
	}
	return s
}

// grow adds n bytes to what r holds, or says false and adds nothing when
// that would take the budget or r past its share.
func (r *reservation) grow(n int64) bool { return r.growFloor(n, 0) }

// growFloor is grow for a consumer that spills what it holds when a
// grow fails: where grow would fail it still adds n if r then holds no
// more than floor and no more than its share (what grow would let it
// hold were the budget not full), so that it need not spill less than
// that. It says false, adding nothing, otherwise.
func (r *reservation) growFloor(n, floor int64) bool {
	if n <= 0 {
		r.shrink(-n)
		return true
	}
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	share := b.share(r)
	if b.used+n <= b.size && r.held+n <= share || r.held+n <= min(floor, share) {
		r.add(n)
		return true
	}
	return false
}

// force adds n bytes whatever the budget says, for what must be held
// to go on at all (one part of a join's spilled side within the join's
// own bound, a fold that may not spill again).
func (r *reservation) force(n int64) {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	r.add(n)
}

// add counts n more bytes. Called with mu held.
func (r *reservation) add(n int64) {
	b := r.b
	if !r.live && !r.pinned && n > 0 {
		r.live = true
		b.live++
	}
	r.held += n
	b.used += n
	if r.pinned {
		b.pinned += n
	}
	b.peak = max(b.peak, b.used)
}

// shrink gives back n of the bytes r holds.
func (r *reservation) shrink(n int64) {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	n = min(n, r.held)
	r.held -= n
	b.used -= n
	if r.pinned {
		b.pinned -= n
	}
}

// pin says r's consumer keeps what it holds until it frees it and will
// not spill it: the spillable consumers share what is left.
func (r *reservation) pin() {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.pinned {
		return
	}
	if r.live {
		r.live = false
		b.live--
	}
	r.pinned = true
	b.pinned += r.held
}

// free gives back all r holds; r counts as a consumer again only when it
// next grows. It may be called more than once.
func (r *reservation) free() {
	if r == nil {
		return
	}
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= r.held
	if r.pinned {
		b.pinned -= r.held
	}
	if r.live {
		b.live--
	}
	r.held, r.live, r.pinned = 0, false, false
}

// stats are the budget's size, the bytes reserved now and the most ever.
func (b *memBudget) stats() (size, used, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size, b.used, b.peak
}

// sideShare is what a join's right side, read before the run with left-1
// more after it, may hold: its share of what is not pinned among those
// sides and what the run does after them (the fair rule, counting the
// consumers known to come, since each side read whole is pinned for the
// whole run), and no more than half the run's budget; or join --memory,
// as the user said.
func sideShare(e *env, o JoinOptions, left int) int64 {
	if o.Memory > 0 {
		return o.Memory
	}
	b := e.budget
	b.mu.Lock()
	free := b.size - b.pinned
	b.mu.Unlock()
	return min(free/int64(left+1), joinBudget(e, o))
}
