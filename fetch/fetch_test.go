package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/await"
	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/store"
)

// Random range sets over random objects: every unit comes back in order
// with exactly the object's bytes, whatever the budget, coalescing and
// splitting did.
func TestBytesMatchRandomRanges(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 7))
			spec := ""
			if seed%10 == 0 { // some over a link, so parts finish out of order
				spec = "ttfb=1ms,p99=4ms,stream=64MiB/s"
			}
			st, inner := testStore(t, spec)
			objs := map[string][]byte{}
			etags := map[string]string{}
			var keys []string
			for i := range 1 + rng.IntN(5) {
				key := fmt.Sprintf("obj-%d", i)
				objs[key], etags[key] = put(t, inner, key, rng.IntN(200*KiB), seed*10+uint64(i))
				keys = append(keys, key)
			}
			var reqs []Request
			for range rng.IntN(30) {
				key := keys[rng.IntN(len(keys))]
				size := int64(len(objs[key]))
				req := Request{Key: key, Tag: len(reqs)}
				if rng.IntN(2) == 0 {
					req.ETag = etags[key]
				}
				if rng.IntN(2) == 0 {
					req.Size = size
				}
				for range rng.IntN(6) {
					off := rng.Int64N(size + 1)
					n := rng.Int64N(size - off + 1)
					if rng.IntN(4) == 0 {
						n = min(n, rng.Int64N(64)) // tiny ranges coalesce
					}
					req.Ranges = append(req.Ranges, store.Range{Off: off, Len: n})
				}
				reqs = append(reqs, req)
			}
			memory := int64(64*KiB) << rng.IntN(6)
			opts := Options{Memory: memory, InFlight: 1 + rng.IntN(8)}
			if seed%2 == 1 { // pages from a pool, some given back to it past the budget
				opts.Mem = mempool.New(memory / 2)
			}
			f := small(New(st, opts))
			s := fetchAll(t, context.Background(), f, reqs, objs)
			var want int64
			for _, r := range reqs {
				for _, rg := range r.Ranges {
					want += rg.Len
				}
			}
			if s.BytesRequested != want || s.BytesPlanned > s.BytesFetched || s.Units != int64(len(reqs)) {
				t.Errorf("stats: requested %d (want %d), planned %d, fetched %d, units %d", s.BytesRequested, want, s.BytesPlanned, s.BytesFetched, s.Units)
			}
		})
	}
}

// A slow consumer: fetching runs ahead only as far as the budget, the
// budget is never exceeded, and pages are reused rather than allocated.
func TestMemoryBudget(t *testing.T) {
	st, inner := testStore(t, "ttfb=1ms,stream=200MiB/s")
	const size = 3 * MiB
	data, _ := put(t, inner, "big", size, 1)
	reqs := windows("big", size, 96*KiB)
	const memory = 1 * MiB
	f := small(New(st, Options{Memory: memory}))
	p := f.Plan(context.Background(), reqs)
	defer p.Close()

	// Independently of the plan's accounting, sum the pages of every unit
	// admitted and not released, at every step.
	var high int64
	held := map[*Unit]bool{}
	sample := func() {
		p.mu.Lock()
		n := int64(0)
		for _, u := range p.queue {
			n += int64(len(u.pages) * f.pages.size)
		}
		p.mu.Unlock()
		for u := range held {
			n += int64(len(u.pages) * f.pages.size)
		}
		high = max(high, n)
	}
	ctx := context.Background()
	for i := 0; ; i++ {
		u, err := p.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		held[u] = true
		if i == 0 {
			// A consumer slower than the fetcher: it takes the next unit
			// only once the fetcher has filled the budget and waits for
			// room (p.next: events, not a sleep a busy machine may not
			// honour). Waiting for the budget to fill alone let a busy
			// machine's fetcher reach its next unit only after the
			// consumer had made room, and never wait.
			await.Until(t, "the fetcher to fill the budget and wait", func() bool {
				p.mu.Lock()
				defer p.mu.Unlock()
				return p.held+int64(len(u.pages)*f.pages.size) > memory && p.next != nil
			})
		}
		sample()
		if err := checkUnit(u, data); err != nil {
			t.Fatal(err)
		}
		delete(held, u)
		u.Release()
	}
	s := p.Stats()
	if high > memory || s.MemoryHigh > memory {
		t.Errorf("budget %d exceeded: sampled high-water %d, stats %d", memory, high, s.MemoryHigh)
	}
	if high < memory/2 {
		t.Errorf("high-water %d: the fetcher did not run ahead of a slow consumer", high)
	}
	if s.WaitMemory == 0 {
		t.Error("no time held back by the budget, yet the consumer waited for a full budget")
	}
	if s.BytesAllocated > memory {
		t.Errorf("allocated %d fresh bytes for %d fetched through a %d budget: pages not reused", s.BytesAllocated, s.BytesFetched, memory)
	}
	t.Logf("%v", s)
}

// One unit larger than the whole budget still comes through, alone.
func TestUnitLargerThanBudget(t *testing.T) {
	st, inner := testStore(t, "")
	data, _ := put(t, inner, "a", 300*KiB, 2)
	objs := map[string][]byte{"a": data}
	reqs := []Request{
		{Key: "a", Ranges: []store.Range{{Off: 0, Len: 10 * KiB}}},
		{Key: "a", Ranges: []store.Range{{Off: 0, Len: 300 * KiB}}},
		{Key: "a", Ranges: []store.Range{{Off: 5, Len: 10 * KiB}}},
	}
	fetchAll(t, context.Background(), small(New(st, Options{Memory: 64 * KiB})), reqs, objs)
}

// Throttling, resets and stalls from the link model: the bytes are the
// same, and the retries are counted.
func TestFaultsGiveIdenticalBytes(t *testing.T) {
	for _, seed := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			spec := fmt.Sprintf("ttfb=2ms,p99=10ms,stream=128MiB/s,slowdown=0.05,reset=0.05,stall=0.02:200ms,seed=%d", seed)
			st, inner := testStore(t, spec)
			objs := map[string][]byte{}
			var reqs []Request
			for i := range 4 {
				key := fmt.Sprintf("k%d", i)
				objs[key], _ = put(t, inner, key, 1*MiB+i*1000, uint64(seed*10+i))
				reqs = append(reqs, windows(key, int64(len(objs[key])), 100*KiB)...)
			}
			f := small(New(st, Options{Memory: 2 * MiB, RetryBase: 5 * time.Millisecond}))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s := fetchAll(t, ctx, f, reqs, objs)
			t.Logf("%v", s)
			if s.Retries == 0 {
				t.Errorf("%d requests under 5%% slowdowns and 5%% resets, yet no retries", s.Requests)
			}
		})
	}
}

// A request that stops sending part way is raced by a duplicate from the
// byte it reached; the duplicate wins and no byte is delivered twice.
func TestStalledRequestIsReissued(t *testing.T) {
	st0, inner := testStore(t, "")
	data, _ := put(t, inner, "s", 200*KiB, 3)
	h := &hookDriver{Driver: st0.Driver()}
	h.hook = func(ctx context.Context, key string, call int, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error, bool) {
		if call != 1 {
			return nil, store.ObjectInfo{}, nil, false
		}
		rc, info, err := inner.ReadRange(ctx, key, r, o)
		if err != nil {
			return rc, info, err, true
		}
		return &stallBody{ctx: ctx, rc: rc, limit: r.Len / 2, chunk: 4 * KiB}, info, nil, true
	}
	st := store.New(h, "mem://x/")
	reqs := []Request{{Key: "s", Ranges: []store.Range{{Off: 1000, Len: 40 * KiB}, {Off: 50 * KiB, Len: 100 * KiB}}}}
	f := New(st, Options{})
	start := time.Now()
	s := fetchAll(t, context.Background(), f, reqs, map[string][]byte{"s": data})
	if s.Hedges != 1 || s.HedgeWins != 1 || s.Retries != 0 {
		t.Errorf("hedges %d (won %d), retries %d; want one duplicate that won, no retries", s.Hedges, s.HedgeWins, s.Retries)
	}
	// The duplicate resumed where the stalled one stopped.
	if s.BytesFetched != s.BytesPlanned {
		t.Errorf("fetched %d bytes for %d planned: the duplicate re-read committed bytes", s.BytesFetched, s.BytesPlanned)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v to get past a stall", d)
	}
}

// A request that pauses past the stall limit and then goes on, before the
// duplicate raced against it has delivered, was a false alarm: the
// duplicate is dropped and no byte is read twice. The duplicate decides
// by events, not by a time: it never delivers, and it must be cancelled
// while the original goes on, before the original ends.
func TestPauseIsNotRacedToTheEnd(t *testing.T) {
	st0, inner := testStore(t, "")
	data, _ := put(t, inner, "s", 256*KiB, 6)
	h := &hookDriver{Driver: st0.Driver()}
	ended := make(chan struct{})
	h.hook = func(ctx context.Context, key string, call int, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error, bool) {
		switch call {
		case 1:
			rc, info, err := inner.ReadRange(ctx, key, r, o)
			return &pauseBody{ctx: ctx, rc: rc, at: r.Len / 4, pause: 250 * time.Millisecond, trickle: 2 * time.Millisecond, ended: ended}, info, err, true
		case 2:
			select {
			case <-ended:
				t.Error("the duplicate was still running when the original ended: not dropped when the original went on")
				<-ctx.Done()
			case <-ctx.Done():
			}
			return nil, store.ObjectInfo{}, ctx.Err(), true
		}
		return nil, store.ObjectInfo{}, nil, false
	}
	st := store.New(h, "mem://x/")
	reqs := []Request{{Key: "s", Ranges: []store.Range{{Off: 0, Len: 256 * KiB}}}}
	s := fetchAll(t, context.Background(), New(st, Options{}), reqs, map[string][]byte{"s": data})
	if s.Hedges != 1 || s.HedgeWins != 0 || s.BytesFetched != s.BytesPlanned {
		t.Errorf("%d duplicates (%d won), %d bytes fetched for %d planned; want one, dropped, and no byte twice",
			s.Hedges, s.HedgeWins, s.BytesFetched, s.BytesPlanned)
	}
}

// pauseBody hands out at bytes of rc, pauses once, then the rest a KiB
// at a time, trickle apart; ended, if set, is closed at the end of rc.
type pauseBody struct {
	ctx            context.Context
	rc             io.ReadCloser
	at             int64
	pause, trickle time.Duration
	n              int64
	paused         bool
	ended          chan struct{}
}

func (b *pauseBody) Read(p []byte) (int, error) {
	wait := time.Duration(0)
	switch {
	case b.n < b.at:
		p = p[:min(int64(len(p)), b.at-b.n)]
	case !b.paused:
		b.paused, wait = true, b.pause
	default:
		wait = b.trickle
	}
	if b.n >= b.at {
		p = p[:min(len(p), KiB)]
	}
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	if err == io.EOF && b.ended != nil {
		close(b.ended)
		b.ended = nil
	}
	return n, err
}

func (b *pauseBody) Close() error { return b.rc.Close() }

// A request that keeps trickling is not stalled, but it is far slower
// than the typical request: it is re-issued too.
func TestSlowRequestIsReissued(t *testing.T) {
	st0, inner := testStore(t, "")
	data, _ := put(t, inner, "s", 400*KiB, 4)
	h := &hookDriver{Driver: st0.Driver()}
	var reqs []Request
	for i := range 20 { // typical requests to measure first
		reqs = append(reqs, Request{Key: "s", Ranges: []store.Range{{Off: int64(i) * KiB, Len: KiB}}})
	}
	reqs = append(reqs, Request{Key: "s", Ranges: []store.Range{{Off: 100 * KiB, Len: 256 * KiB}}})
	h.hook = func(ctx context.Context, key string, call int, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error, bool) {
		if r.Len != 256*KiB {
			return nil, store.ObjectInfo{}, nil, false
		}
		rc, info, err := inner.ReadRange(ctx, key, r, o)
		return &stallBody{ctx: ctx, rc: rc, limit: r.Len, chunk: KiB, pause: 20 * time.Millisecond}, info, err, true
	}
	st := store.New(h, "mem://x/")
	f := New(st, Options{InFlight: 1}) // one at a time, so all 20 are measured first
	s := fetchAll(t, context.Background(), f, reqs, map[string][]byte{"s": data})
	if s.Hedges < 1 || s.HedgeWins < 1 {
		t.Errorf("hedges %d (won %d); want the trickling request raced and beaten", s.Hedges, s.HedgeWins)
	}
}

// On a link shared by many requests each gets far less than one stream's
// rate; none is a straggler, and racing them would only spend the link on
// duplicates.
func TestSharedLinkIsNotStraggling(t *testing.T) {
	st, inner := testStore(t, "ttfb=1ms,link=24MiB/s")
	data, _ := put(t, inner, "s", 16*MiB, 5)
	reqs := windows("s", 16*MiB, MiB) // 16 parts in flight at 1.5 MiB/s each
	f := New(st, Options{})
	s := fetchAll(t, context.Background(), f, reqs, map[string][]byte{"s": data})
	if s.Hedges != 0 || s.BytesFetched != s.BytesPlanned {
		t.Errorf("%d duplicates, %d bytes fetched for %d planned; want none and no more", s.Hedges, s.BytesFetched, s.BytesPlanned)
	}
}

// An object replaced between its ranges gives the clear error; the units
// read before it are whole and of the old version, and none mixes the two.
func TestObjectReplacedMidRead(t *testing.T) {
	for _, tc := range []struct {
		name      string
		knownETag bool
		replace   func(t *testing.T, d store.Driver) // before the third request
		want      string
	}{
		{"replaced, ETag learned from the first response", false, func(t *testing.T, d store.Driver) {
			putBytes(t, d, "k", []byte(strings.Repeat("new!", 50*KiB)))
		}, `mem://x/k changed during the read (ETag "OLD" -> "NEW")`},
		{"replaced, ETag from the listing", true, func(t *testing.T, d store.Driver) {
			putBytes(t, d, "k", []byte(strings.Repeat("new!", 50*KiB)))
		}, `mem://x/k changed during the read (ETag "OLD" -> "NEW")`},
		{"deleted", false, func(t *testing.T, d store.Driver) {
			if err := d.Delete(context.Background(), "k"); err != nil {
				t.Fatal(err)
			}
		}, `mem://x/k changed during the read (ETag "OLD" -> deleted)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st0, inner := testStore(t, "")
			data, old := put(t, inner, "k", 200*KiB, 5)
			newETag := fmt.Sprintf("%q", fmt.Sprintf("%x", md5sum(strings.Repeat("new!", 50*KiB))))
			// The third request waits until the consumer is done with the
			// first two units, then replaces the object and goes on.
			gate := make(chan struct{})
			h := &hookDriver{Driver: st0.Driver()}
			h.hook = func(ctx context.Context, key string, call int, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error, bool) {
				if call == 3 {
					if err := waitGate(ctx, gate); err != nil {
						return nil, store.ObjectInfo{}, err, true
					}
					tc.replace(t, inner)
				}
				return nil, store.ObjectInfo{}, nil, false
			}
			st := store.New(h, "mem://x/")
			reqs := windows("k", 200*KiB, 20*KiB)
			if tc.knownETag {
				for i := range reqs {
					reqs[i].ETag = old
				}
			}
			f := small(New(st, Options{InFlight: 1}))
			p := f.Plan(context.Background(), reqs)
			defer p.Close()
			delivered := 0
			var err error
			for {
				var u *Unit
				u, err = p.Next(context.Background())
				if err != nil {
					break
				}
				if werr := u.Wait(context.Background()); werr != nil {
					u.Release()
					err = werr
					break
				}
				if cerr := checkUnit(u, data); cerr != nil {
					t.Errorf("unit %d: %v (a torn read)", u.Index(), cerr)
				}
				delivered++
				u.Release()
				if delivered == 2 {
					close(gate)
				}
			}
			want := strings.NewReplacer("OLD", strings.Trim(old, `"`), "NEW", strings.Trim(newETag, `"`)).Replace(tc.want)
			if err == nil || err.Error() != want {
				t.Fatalf("after %d good units got error %v, want %s", delivered, err, want)
			}
			if !errors.Is(err, store.ErrPrecondition) || store.KindOf(err) != store.KindPrecondition {
				t.Errorf("error %v is not classified as a precondition failure", err)
			}
			if delivered != 2 {
				t.Errorf("%d units delivered, want the 2 read before the change", delivered)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	st, inner := testStore(t, "")
	put(t, inner, "a", 1000, 1)
	tests := []struct {
		name string
		reqs []Request
		want string
	}{
		{"missing object", []Request{{Key: "nope", Ranges: []store.Range{{Off: 0, Len: 10}}}}, "read mem://x/nope: not found"},
		{"past the end, size unknown", []Request{{Key: "a", Ranges: []store.Range{{Off: 900, Len: 200}}}}, "read mem://x/a: range [900, 1100) is past the end of the object (1000 bytes)"},
		{"past the end, size known", []Request{{Key: "a", Size: 1000, Ranges: []store.Range{{Off: 900, Len: 200}}}}, "read mem://x/a: range [900, 1100) is past the end of the object (1000 bytes)"},
		{"suffix range", []Request{{Key: "a", Ranges: []store.Range{store.Suffix(8)}}}, "read mem://x/a: fetch takes absolute ranges, got offset -8 length -1"},
		{"bad key", []Request{{Key: "../a", Ranges: []store.Range{{Off: 0, Len: 1}}}}, "read mem://x/../a: key may not contain '..'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(st, Options{})
			p := f.Plan(context.Background(), tt.reqs)
			defer p.Close()
			var err error
			for err == nil {
				var u *Unit
				if u, err = p.Next(context.Background()); err == nil {
					err = u.Wait(context.Background())
					u.Release()
				}
			}
			if err.Error() != tt.want {
				t.Errorf("got %v, want %s", err, tt.want)
			}
			if s := p.Stats(); s.Retries != 0 {
				t.Errorf("%d retries of a permanent error", s.Retries)
			}
		})
	}
}

// A link that always resets: the plan gives up after MaxRetries, with
// the link's error.
func TestRetriesExhausted(t *testing.T) {
	st, inner := testStore(t, "reset=1")
	put(t, inner, "a", 100*KiB, 1)
	f := New(st, Options{MaxRetries: 3, RetryBase: time.Millisecond})
	p := f.Plan(context.Background(), []Request{{Key: "a", Ranges: []store.Range{{Off: 0, Len: 100 * KiB}}}})
	defer p.Close()
	// The unit's error, or the plan's when every attempt failed before
	// Next was called (a starved consumer).
	u, err := p.Next(context.Background())
	if err == nil {
		err = u.Wait(context.Background())
		u.Release()
	}
	if !store.IsRetryable(err) {
		t.Fatalf("got %v, want the link's retryable error", err)
	}
	if s := p.Stats(); s.Retries != 3 || s.Requests != 4 {
		t.Errorf("retries %d, requests %d; want 3 and 4", s.Retries, s.Requests)
	}
}

// Cancelling the context stops everything: Next and blocked reads
// return, and Close leaves no goroutine behind (goleak in TestMain).
func TestCancel(t *testing.T) {
	st0, inner := testStore(t, "")
	var reqs []Request
	for i := range 8 {
		key := fmt.Sprintf("k%d", i)
		put(t, inner, key, 512*KiB, uint64(i))
		reqs = append(reqs, windows(key, 512*KiB, 128*KiB)...)
	}
	// Every body sends nothing until its context ends: the reads stay
	// blocked however fast or slow the machine is.
	h := &hookDriver{Driver: st0.Driver()}
	inFlight := make(chan struct{}, 64)
	h.hook = func(ctx context.Context, key string, call int, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error, bool) {
		rc, info, err := inner.ReadRange(ctx, key, r, o)
		select {
		case inFlight <- struct{}{}:
		default:
		}
		return &stallBody{ctx: ctx, rc: rc, limit: 0}, info, err, true
	}
	st := store.New(h, "mem://x/")
	ctx, cancel := context.WithCancel(context.Background())
	f := New(st, Options{})
	p := f.Plan(ctx, reqs)
	u, err := p.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := u.ReadAt(make([]byte, 128*KiB), 0)
		done <- err
	}()
	<-inFlight // a request is out, its body holding back every byte
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("blocked ReadAt returned %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("ReadAt still blocked a minute after cancel")
	}
	if _, err := p.Next(context.Background()); !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel: %v", err)
	}
	u.Release()
	p.Close()
}

// Close with requests in flight and units never taken, and units released
// before their bytes arrived: everything stops and nothing leaks.
func TestCloseAndEarlyRelease(t *testing.T) {
	st, inner := testStore(t, "ttfb=2ms,stream=8MiB/s")
	data, _ := put(t, inner, "a", 2*MiB, 1)
	reqs := windows("a", 2*MiB, 64*KiB)
	f := small(New(st, Options{Memory: 512 * KiB}))

	// Release every other unit unread; read the rest.
	p := f.Plan(context.Background(), reqs)
	for i := 0; ; i++ {
		u, err := p.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			if err := checkUnit(u, data); err != nil {
				t.Fatal(err)
			}
		}
		u.Release()
	}
	p.Close()

	// Close early, holding one unit.
	p = f.Plan(context.Background(), reqs)
	u, err := p.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := p.Next(context.Background()); err == nil || !strings.Contains(err.Error(), "plan closed") {
		t.Errorf("Next after Close: %v", err)
	}
	u.Release()
}

// An empty plan and empty units are fine.
func TestEmpty(t *testing.T) {
	st, inner := testStore(t, "")
	put(t, inner, "zero", 0, 1)
	f := New(st, Options{})
	p := f.Plan(context.Background(), nil)
	if _, err := p.Next(context.Background()); err != io.EOF {
		t.Errorf("empty plan: %v", err)
	}
	p.Close()
	reqs := []Request{{Key: "zero"}, {Key: "zero", Ranges: []store.Range{{Off: 0, Len: 0}}}}
	if s := fetchAll(t, context.Background(), f, reqs, map[string][]byte{"zero": nil}); s.Requests != 0 {
		t.Errorf("%d requests for nothing", s.Requests)
	}
}

// Requests come from a sequence while the plan runs (as footers are
// read); an error from it fails the plan after the units before it.
func TestPlanSeq(t *testing.T) {
	st, inner := testStore(t, "")
	data, _ := put(t, inner, "a", 10*KiB, 1)
	boom := errors.New("footer unreadable")
	seq := func(yield func(Request, error) bool) {
		for i := range 3 {
			if !yield(Request{Key: "a", Ranges: []store.Range{{Off: int64(i) * KiB, Len: KiB}}, Tag: i}, nil) {
				return
			}
		}
		yield(Request{}, boom)
	}
	f := New(st, Options{})
	p := f.PlanSeq(context.Background(), seq)
	defer p.Close()
	var got []int
	var err error
	for {
		var u *Unit
		if u, err = p.Next(context.Background()); err != nil {
			break
		}
		// The plan may fail while this unit's bytes are on their way.
		err = checkUnit(u, data)
		u.Release()
		if err != nil {
			break
		}
		got = append(got, u.Tag().(int))
	}
	if !errors.Is(err, boom) {
		t.Errorf("got %v, want the sequence's error", err)
	}
	t.Logf("units before the error: %v", got)
}

// When the link has room for more streams than the starting limit, the
// limit grows as the aggregate throughput keeps rising.
func TestInFlightGrows(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("needs a second of wall time on an idle CPU")
	}
	st, inner := testStore(t, "ttfb=2ms,stream=4MiB/s")
	data, _ := put(t, inner, "a", 4*MiB, 1)
	var reqs []Request
	for range 24 {
		reqs = append(reqs, windows("a", 4*MiB, 128*KiB)...)
	}
	f := New(st, Options{})
	s := fetchAll(t, context.Background(), f, reqs, map[string][]byte{"a": data})
	t.Logf("%v", s)
	if s.InFlightMax <= defaultInFlight {
		t.Errorf("at most %d in flight: did not grow past %d on a link with room", s.InFlightMax, defaultInFlight)
	}
}

// TestHeadFirst: the first unit is split so its parts download in
// parallel, and the units behind it are launched only within the plan's
// window of bytes in flight, which grows as parts finish. Requests for
// every unit but the first are held until the first has arrived: the
// first arrives regardless, and meanwhile only the units the window
// allows were requested (without the window, as many as there are
// in-flight slots).
func TestHeadFirst(t *testing.T) {
	st0, inner := testStore(t, "")
	const unit, units = 96 * KiB, 20
	data, _ := put(t, inner, "o", unit*units, 9)
	gate := make(chan struct{})
	var mu sync.Mutex
	headCalls, behind := 0, map[int64]bool{}
	h := &hookDriver{Driver: st0.Driver()}
	h.hook = func(ctx context.Context, key string, call int, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error, bool) {
		i := r.Off / unit
		mu.Lock()
		if i == 0 {
			headCalls++
		} else {
			behind[i] = true
		}
		mu.Unlock()
		if i > 0 {
			if err := waitGate(ctx, gate); err != nil {
				return nil, store.ObjectInfo{}, err, true
			}
		}
		return nil, store.ObjectInfo{}, nil, false
	}
	st := store.New(h, "mem://x/")
	reqs := windows("o", unit*units, unit)
	f := small(New(st, Options{}))
	f.splitAbove, f.maxPart = 1*MiB, 1*MiB // units behind the first stay whole
	f.headSplit, f.headPart = 64*KiB, 32*KiB
	f.initWindow = 256 * KiB
	p := f.Plan(context.Background(), reqs)
	defer p.Close()
	ctx := context.Background()
	u, err := p.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// The scheduler has used the window the first unit's bytes widened
	// and waits, for the window or to admit the next unit: a scheduler
	// that did not hold back would have asked for more units by then.
	await.Until(t, "the scheduler to be held back once the window widened", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.window != f.initWindow+unit {
			return false
		}
		return p.next != nil || p.windowWait && p.inflight+unit > p.window
	})
	mu.Lock()
	head, n := headCalls, len(behind)
	mu.Unlock()
	// The window: 256 KiB, grown by the first unit's 96 KiB once it
	// arrived, holds three more units of 96 KiB.
	if head != 3 || n > 3 {
		t.Errorf("first unit in %d requests (want 3), %d units behind it requested before it arrived (want at most 3)", head, n)
	}
	close(gate)
	if err := checkUnit(u, data); err != nil {
		t.Fatal(err)
	}
	u.Release()
	for i := 1; ; i++ {
		u, err := p.Next(ctx)
		if err == io.EOF {
			if i != units {
				t.Fatalf("EOF after %d units", i)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if u.Index() != i {
			t.Fatalf("unit %d came as %d", u.Index(), i)
		}
		err = checkUnit(u, data)
		u.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	// What held the units behind back is the window of bytes in flight,
	// or the lead (which starts as large): admission waited for it.
	if s := p.Stats(); s.WaitWindow == 0 && s.WaitMemory == 0 {
		t.Error("no time held back by the window or the lead")
	}
}

// TestGiven: the spans of a unit within the bytes its Request came with
// are copied from there, with no request; spans outside them are
// requested as usual, and every unit reads back the object's bytes.
func TestGiven(t *testing.T) {
	st0, inner := testStore(t, "")
	const size = 300 * KiB
	data, etag := put(t, inner, "o", size, 11)
	var mu sync.Mutex
	var asked []store.Range
	h := &hookDriver{Driver: st0.Driver()}
	h.hook = func(ctx context.Context, key string, call int, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error, bool) {
		mu.Lock()
		asked = append(asked, r)
		mu.Unlock()
		return nil, store.ObjectInfo{}, nil, false
	}
	f := small(New(store.New(h, "mem://x/"), Options{}))
	tailOff := int64(size - 100*KiB) // as if a suffix read had brought the last 100 KiB
	tail := data[tailOff:]
	reqs := []Request{
		// The last 100 KiB, as two ranges: all given.
		{Key: "o", Ranges: []store.Range{{Off: tailOff, Len: 40 * KiB}, {Off: tailOff + 40*KiB, Len: 60 * KiB}}, ETag: etag, Size: size, Have: tail, HaveOff: tailOff},
		// The first 50 KiB: outside what was given.
		{Key: "o", Ranges: []store.Range{{Off: 0, Len: 50 * KiB}}, ETag: etag, Size: size, Have: tail, HaveOff: tailOff},
		// Across the boundary: requested whole.
		{Key: "o", Ranges: []store.Range{{Off: tailOff - 10*KiB, Len: 20 * KiB}}, ETag: etag, Size: size, Have: tail, HaveOff: tailOff},
	}
	s := fetchAll(t, context.Background(), f, reqs, map[string][]byte{"o": data})
	if s.BytesGiven != 100*KiB {
		t.Errorf("%d bytes given, want %d", s.BytesGiven, 100*KiB)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range asked {
		if r.Off >= tailOff {
			t.Errorf("requested %+v, within the bytes given", r)
		}
	}
	if len(asked) == 0 || s.BytesFetched != 70*KiB {
		t.Errorf("%d requests for %d bytes; want the 70 KiB not given", len(asked), s.BytesFetched)
	}
}

// TestLead: a plan holds at most its first window of units while the
// consumer finds every unit's bytes already there, however large the
// budget; once the consumer waits for a unit the lead held back, the lead
// doubles (once for that wait), and the plan reads further ahead.
func TestLead(t *testing.T) {
	st0, inner := testStore(t, "")
	const unit, units = 64 * KiB, 24
	data, _ := put(t, inner, "o", unit*units, 13)
	gate := make(chan struct{})
	var gated atomic.Int64
	gated.Store(-1)
	h := &hookDriver{Driver: st0.Driver()}
	h.hook = func(ctx context.Context, key string, call int, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error, bool) {
		if r.Off/unit == gated.Load() {
			if err := waitGate(ctx, gate); err != nil {
				return nil, store.ObjectInfo{}, err, true
			}
		}
		return nil, store.ObjectInfo{}, nil, false
	}
	f := small(New(store.New(h, "mem://x/"), Options{Memory: 2 * MiB}))
	f.splitAbove, f.maxPart = 1*MiB, 1*MiB // one request a unit
	f.initWindow = 4 * unit
	p := f.Plan(context.Background(), windows("o", unit*units, unit))
	defer p.Close()
	ctx := context.Background()
	lead := func() int64 { p.mu.Lock(); defer p.mu.Unlock(); return p.lead }
	arrived := func(u *Unit) bool {
		for _, pt := range u.parts {
			select {
			case <-pt.doneCh:
			default:
				return false
			}
		}
		return true
	}
	// A consumer that keeps up: it takes a unit only once admitted and
	// reads it only once arrived (polling, so it never waits in the plan).
	for i := 0; i < 12; i++ {
		await.Until(t, "a unit admitted", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.queue) > 0 })
		u, err := p.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		await.Until(t, "the unit to arrive", func() bool { return arrived(u) })
		err = checkUnit(u, data)
		u.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if s := p.Stats(); lead() != 4*unit || s.MemoryHigh > 4*unit || s.Lead != 4*unit {
		t.Fatalf("a consumer that kept up: lead %d, held at most %d, want %d", lead(), s.MemoryHigh, 4*unit)
	}
	// Now it catches up: unit 16, held back by the lead (the scheduler
	// waits to admit it), does not arrive until the consumer waits for it.
	gated.Store(16)
	await.Until(t, "unit 16 held back by the lead", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.next != nil && p.next.index == 16 })
	var grown int64
	for i := 12; i < units; i++ {
		if i < 16 {
			await.Until(t, "a unit admitted", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.queue) > 0 })
		}
		u, err := p.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i < 16 {
			await.Until(t, "the unit to arrive", func() bool { return arrived(u) })
		}
		if i == 16 {
			grown, err = readAtGrowth(t, u, data, lead, 4*unit, gate)
		} else {
			err = checkUnit(u, data)
		}
		u.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Next(ctx); err != io.EOF {
		t.Fatalf("after the last unit: %v", err)
	}
	// Once doubled for that wait, and not again for it; a consumer this
	// fast catches up with the units launched after it too.
	if grown != 8*unit || lead() < grown || lead() > 2*MiB {
		t.Errorf("lead %d after one catching up (want %d), %d at the end", grown, 8*unit, lead())
	}
}

// TestLeadLargeUnits: units larger than the lead go one at a time until
// the consumer waits for one; the lead then grows to two of them at once,
// so the next unit is fetched while one is consumed (doubling alone would
// take several waits to hold two).
func TestLeadLargeUnits(t *testing.T) {
	st0, inner := testStore(t, "")
	const unit, units = 256 * KiB, 6
	data, _ := put(t, inner, "o", unit*units, 17)
	gate := make(chan struct{})
	h := &hookDriver{Driver: st0.Driver()}
	h.hook = func(ctx context.Context, key string, call int, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error, bool) {
		if r.Off/unit == 1 {
			if err := waitGate(ctx, gate); err != nil {
				return nil, store.ObjectInfo{}, err, true
			}
		}
		return nil, store.ObjectInfo{}, nil, false
	}
	f := small(New(store.New(h, "mem://x/"), Options{Memory: 4 * MiB}))
	f.splitAbove, f.maxPart = 1*MiB, 1*MiB // one request a unit
	f.initWindow = unit / 4
	p := f.Plan(context.Background(), windows("o", unit*units, unit))
	defer p.Close()
	ctx := context.Background()
	lead := func() int64 { p.mu.Lock(); defer p.mu.Unlock(); return p.lead }
	var grown int64
	for i := range units {
		u, err := p.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			grown, err = readAtGrowth(t, u, data, lead, unit/4, gate)
		} else {
			err = checkUnit(u, data)
		}
		u.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Doubling alone would give half a unit here; the growth the test
	// sees may already be the next one (the plan runs on meanwhile).
	if want := 2 * int64(f.pages.count(unit)) * int64(f.pages.size); grown < want {
		t.Errorf("lead %d after the consumer waited for a unit of %d, want at least two units' pages (%d)", grown, unit, want)
	}
}

// TestLeadConsumerAhead: two consumers (two decoders) ask for units at
// once; the one that does not get the first waits for the second, larger
// than the lead, before the plan has come to it, and gets it while the
// other still holds the first: the plan sees it waiting when it comes to
// that unit (nothing else would wake it: the first unit's bytes arrive
// with no one waiting for the window).
func TestLeadConsumerAhead(t *testing.T) {
	st, inner := testStore(t, "")
	const unit, units = 256 * KiB, 4
	data, _ := put(t, inner, "o", unit*units, 19)
	f := small(New(st, Options{Memory: 4 * MiB}))
	f.splitAbove, f.maxPart = 1*MiB, 1*MiB
	f.initWindow = unit / 4
	// The plan comes to the second unit only when the test says so.
	reqs := windows("o", unit*units, unit)
	onward := make(chan struct{})
	p := f.PlanSeq(context.Background(), func(yield func(Request, error) bool) {
		for i, r := range reqs {
			if i == 1 {
				<-onward
			}
			if !yield(r, nil) {
				return
			}
		}
	})
	defer p.Close()
	ctx := context.Background()
	got := make(chan *Unit, 2)
	for range 2 {
		go func() {
			u, _ := p.Next(ctx)
			got <- u
		}()
	}
	var held []*Unit
	next := func(what string) {
		select {
		case u := <-got:
			if u == nil {
				t.Fatal("no unit")
			}
			held = append(held, u)
		case <-time.After(time.Minute):
			t.Fatal(what)
		}
	}
	next("no first unit")
	// Its bytes all in, and the other consumer waiting: nothing moves
	// until the plan comes to the second unit.
	await.Until(t, "the first unit's bytes", func() bool {
		for _, pt := range held[0].parts {
			select {
			case <-pt.doneCh:
			default:
				return false
			}
		}
		return true
	})
	await.Until(t, "the other consumer to wait in Next", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.nextWaiting == 1 })
	close(onward)
	next("the second consumer got no unit while the first held its own")
	for _, u := range held {
		if err := checkUnit(u, data); err != nil {
			t.Fatal(err)
		}
		u.Release()
	}
	for {
		u, err := p.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		u.Release()
	}
}

// readAtGrowth reads unit u, whose bytes wait for gate, in the
// background; once the lead moves from before it opens the gate, and it
// returns the lead it saw and the read's error.
func readAtGrowth(t *testing.T, u *Unit, data []byte, lead func() int64, before int64, gate chan struct{}) (int64, error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- checkUnit(u, data) }()
	await.Until(t, "the lead to grow", func() bool { return lead() != before })
	grown := lead()
	close(gate)
	return grown, <-done
}

// TestGivenReleasedAtOnce: a consumer that releases units as soon as it
// has them, or closes the plan, never races the copy of their given bytes.
func TestGivenReleasedAtOnce(t *testing.T) {
	st, inner := testStore(t, "")
	const size = 256 * KiB
	data, etag := put(t, inner, "o", size, 12)
	f := small(New(st, Options{}))
	var reqs []Request
	for off := int64(0); off < size; off += 16 * KiB {
		reqs = append(reqs, Request{Key: "o", Ranges: []store.Range{{Off: off, Len: 16 * KiB}}, ETag: etag, Size: size, Have: data})
	}
	ctx := context.Background()
	for i := range 200 {
		p := f.Plan(ctx, reqs)
		for j := 0; j < i%len(reqs); j++ {
			u, err := p.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			u.Release()
		}
		p.Close()
	}
}

// waitGate holds a hooked request until gate is closed, or fails it with
// its context's error.
func waitGate(ctx context.Context, gate <-chan struct{}) error {
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
