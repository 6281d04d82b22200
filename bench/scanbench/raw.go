package scanbench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/store"
)

// object is one file of the dataset as the baselines see it.
type object struct {
	key  string
	size int64
}

// rawGet reads every byte of objs with c requests in flight and returns
// the time it took. With no more requests than objects, each object is one
// GET; with more, each object is cut into equal ranges so that there are
// at least c of them (a single object cannot keep more than one request
// busy otherwise). Bytes go into a per-worker buffer and are dropped: this
// is what the link gives, with no consumer in the way.
func rawGet(ctx context.Context, st *store.Store, objs []object, c int) (time.Duration, int64, error) {
	type piece struct {
		key string
		r   store.Range
	}
	per := (c + len(objs) - 1) / len(objs)
	var pieces []piece
	for _, o := range objs {
		if per <= 1 {
			pieces = append(pieces, piece{o.key, store.All()})
			continue
		}
		step := (o.size + int64(per) - 1) / int64(per)
		for off := int64(0); off < o.size; off += step {
			pieces = append(pieces, piece{o.key, store.Range{Off: off, Len: min(step, o.size-off)}})
		}
	}
	var next atomic.Int64
	var total atomic.Int64
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for range min(c, len(pieces)) {
		g.Go(func() error {
			buf := make([]byte, 256<<10)
			for {
				i := int(next.Add(1)) - 1
				if i >= len(pieces) {
					return nil
				}
				p := pieces[i]
				rc, _, err := st.ReadRange(gctx, p.key, p.r, store.ReadOptions{})
				if err != nil {
					return err
				}
				n, err := drain(rc, buf)
				rc.Close()
				total.Add(n)
				if err != nil {
					return fmt.Errorf("read %s: %w", st.URL(p.key), err)
				}
			}
		})
	}
	err := g.Wait()
	return time.Since(start), total.Load(), err
}

// drain reads r to the end through buf.
func drain(r io.Reader, buf []byte) (int64, error) {
	var n int64
	for {
		m, err := r.Read(buf)
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// buffers hands each worker of a measurement one growable buffer, kept
// for the measurement's next file: reading into fresh memory costs more
// than the copy on these VMs, and a careful whole-object reader would
// reuse its buffer too.
type buffers struct {
	mu   sync.Mutex
	free [][]byte
}

func (b *buffers) get(n int64) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, buf := range b.free {
		if int64(cap(buf)) >= n {
			b.free = append(b.free[:i], b.free[i+1:]...)
			return buf[:n]
		}
	}
	return make([]byte, n)
}

func (b *buffers) put(buf []byte) {
	b.mu.Lock()
	b.free = append(b.free, buf)
	b.mu.Unlock()
}
