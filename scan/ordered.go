package scan

import (
	"fmt"
	"sync"
)

// order is the dataset-order delivery of an Options.Ordered scan.
// Workers take row groups in dataset order from the fetch plan; a worker
// starts decoding one only when it is fewer than window row groups ahead
// of the one due, so the batches held here for row groups ahead of a
// slow one are at most those of window row groups.
type order struct {
	window int
	index  map[[2]int]int // (file, row group) to index in Dataset.groups

	mu   sync.Mutex
	due  int           // index of the row group Next delivers from
	turn chan struct{} // closed when due moves on

	// Only the consumer (Next, Close) touches these.
	held     map[int][]Batch
	complete map[int]bool
}

func newOrder(d *Dataset, window int) *order {
	o := &order{window: window, index: map[[2]int]int{}, turn: make(chan struct{}), held: map[int][]Batch{}, complete: map[int]bool{}}
	for i, g := range d.groups {
		o.index[[2]int{g.file.index, g.rg}] = i
	}
	return o
}

// waitTurn blocks until row group i is within the window, or the scan stops.
func (s *Scanner) waitTurn(i int) error {
	o := s.order
	for {
		o.mu.Lock()
		ok, turn := i < o.due+o.window, o.turn
		o.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-turn:
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
	}
}

func (o *order) advance() {
	o.mu.Lock()
	o.due++
	close(o.turn)
	o.turn = make(chan struct{})
	o.mu.Unlock()
}

// nextOrdered is Next for an ordered scan: the next batch of the row group
// due, taking batches of later row groups off the channel and holding
// them until their turn.
func (s *Scanner) nextOrdered() (Batch, bool) {
	o := s.order
	for {
		o.mu.Lock()
		due := o.due
		o.mu.Unlock()
		if due >= len(s.ds.groups) {
			// Every row group is delivered, but the worker that sent the
			// last batch may still be in arrow-go's final read of its row
			// group, holding buffers of the allocator. The scan ends, as
			// an unordered one does, when out closes: every worker done.
			for b := range s.out {
				b.Release() // none comes: every row group is delivered
			}
			return Batch{}, false
		}
		if bs := o.held[due]; len(bs) > 0 {
			b := bs[0]
			bs[0] = Batch{}
			o.held[due] = bs[1:]
			return b, true
		}
		if o.complete[due] {
			delete(o.held, due)
			delete(o.complete, due)
			o.advance()
			continue
		}
		b, ok := <-s.out
		if !ok {
			s.mu.Lock()
			if s.err == nil && !s.closed && s.ctx.Err() == nil {
				// Every worker ended without an error, yet a row group
				// never came: a bug, reported rather than a short result.
				s.err = fmt.Errorf("scan: row group %d of %s never arrived", s.ds.groups[due].rg, s.ds.groups[due].file.url)
			}
			s.mu.Unlock()
			return Batch{}, false
		}
		i := o.index[[2]int{b.Pos.File, b.Pos.RowGroup}]
		o.held[i] = append(o.held[i], b)
		if b.Pos.Last {
			o.complete[i] = true
		}
	}
}

// release drops what is held.
func (o *order) release() {
	for _, bs := range o.held {
		for _, b := range bs {
			b.Release()
		}
	}
	o.held = nil
}
