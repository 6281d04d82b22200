package fetch

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testStore is a mem store, optionally behind the link model, with the
// inner driver kept for writing around the link.
func testStore(t testing.TB, spec string) (*store.Store, store.Driver) {
	t.Helper()
	inner := store.NewMemDriver()
	d := inner
	if spec != "" {
		p, err := sim.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		d = sim.Wrap(inner, p)
	}
	return store.New(d, "mem://x/"), inner
}

// put writes random bytes under key and returns them and the ETag.
func put(t testing.TB, d store.Driver, key string, size int, seed uint64) ([]byte, string) {
	t.Helper()
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(seed, uint64(size)))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	return data, putBytes(t, d, key, data)
}

func putBytes(t testing.TB, d store.Driver, key string, data []byte) string {
	t.Helper()
	storetest.Put(t, d, key, data)
	info, err := d.Stat(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return info.ETag
}

// small scales the coalescing and splitting bounds down to objects of a
// few hundred KiB, so tests exercise them without hundreds of MiB.
func small(f *Fetcher) *Fetcher {
	f.minHole, f.maxHole = 512, 8*KiB
	f.splitAbove, f.maxPart = 48*KiB, 32*KiB
	return f
}

// windows cuts an object into units of w bytes, as cat does.
func windows(key string, size, w int64) []Request {
	var reqs []Request
	for off := int64(0); off < size; off += w {
		reqs = append(reqs, Request{Key: key, Ranges: []store.Range{{Off: off, Len: min(w, size-off)}}, Size: size})
	}
	return reqs
}

// fetchAll plans reqs with f, reads every unit and checks it against the
// object bytes in objs (as consume does), and returns the plan's stats.
func fetchAll(t testing.TB, ctx context.Context, f *Fetcher, reqs []Request, objs map[string][]byte) Stats {
	t.Helper()
	p := f.Plan(ctx, reqs)
	defer p.Close()
	if err := consume(t, p, reqs, objs); err != nil {
		t.Fatal(err)
	}
	return p.Stats()
}

// consume reads every unit of p and checks each range against the object
// bytes in objs, reading through ReadAt (in pieces) and WriteTo.
func consume(t testing.TB, p *Plan, reqs []Request, objs map[string][]byte) error {
	t.Helper()
	ctx := context.Background()
	for i := 0; ; i++ {
		u, err := p.Next(ctx)
		if err == io.EOF {
			if i != len(reqs) {
				return fmt.Errorf("EOF after %d units, want %d", i, len(reqs))
			}
			return nil
		}
		if err != nil {
			return err
		}
		if u.Index() != i || u.Key() != reqs[i].Key {
			u.Release()
			return fmt.Errorf("unit %d is %d %q, want %q", i, u.Index(), u.Key(), reqs[i].Key)
		}
		if err := checkUnit(u, objs[u.Key()]); err != nil {
			u.Release()
			return fmt.Errorf("unit %d: %w", i, err)
		}
		u.Release()
	}
}

func checkUnit(u *Unit, data []byte) error {
	var want bytes.Buffer
	for _, r := range u.Ranges() {
		if r.Len == 0 {
			continue
		}
		want.Write(data[r.Off : r.Off+r.Len])
		// Read each range in two uneven pieces, across part and page edges.
		got := make([]byte, r.Len)
		cut := r.Len / 3
		if _, err := u.ReadAt(got[:cut], r.Off); err != nil {
			return err
		}
		if _, err := u.ReadAt(got[cut:], r.Off+cut); err != nil {
			return err
		}
		if !bytes.Equal(got, data[r.Off:r.Off+r.Len]) {
			return fmt.Errorf("ReadAt of [%d, %d) differs from the object", r.Off, r.Off+r.Len)
		}
	}
	var got bytes.Buffer
	if _, err := u.WriteTo(&got); err != nil {
		return err
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		return fmt.Errorf("WriteTo gave %d bytes that differ from the %d of the ranges", got.Len(), want.Len())
	}
	return nil
}

// hookDriver lets a test change what one ReadRange does.
type hookDriver struct {
	store.Driver
	mu    sync.Mutex
	calls map[string]int
	hook  func(ctx context.Context, key string, call int, r store.Range, opts store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error, bool)
}

func (h *hookDriver) ReadRange(ctx context.Context, key string, r store.Range, opts store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error) {
	h.mu.Lock()
	if h.calls == nil {
		h.calls = map[string]int{}
	}
	h.calls[key]++
	call := h.calls[key]
	h.mu.Unlock()
	if h.hook != nil {
		if rc, info, err, ok := h.hook(ctx, key, call, r, opts); ok {
			return rc, info, err
		}
	}
	return h.Driver.ReadRange(ctx, key, r, opts)
}

// stallBody hands out limit bytes of rc, every chunk after a pause,
// then blocks until ctx ends.
type stallBody struct {
	ctx   context.Context
	rc    io.ReadCloser
	limit int64
	chunk int
	pause time.Duration
	n     int64
}

func (b *stallBody) Read(p []byte) (int, error) {
	if b.n >= b.limit {
		<-b.ctx.Done()
		return 0, b.ctx.Err()
	}
	if b.pause > 0 {
		select {
		case <-time.After(b.pause):
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	}
	p = p[:min(int64(len(p)), b.limit-b.n, int64(b.chunk))]
	n, err := b.rc.Read(p)
	b.n += int64(n)
	return n, err
}

func (b *stallBody) Close() error { return b.rc.Close() }

func md5sum(s string) []byte {
	h := md5.Sum([]byte(s))
	return h[:]
}
