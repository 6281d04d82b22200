package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-data/sluice/internal/fidelity"
	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/store/storetest"
)

func mustParse(t testing.TB, spec string) Profile {
	t.Helper()
	p, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// put writes size pseudo-random bytes under key straight into d.
func put(t testing.TB, d store.Driver, key string, size int) []byte {
	t.Helper()
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(size), 1))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	storetest.Put(t, d, key, data)
	return data
}

// oddReader hands out reads of an awkward size, to cross chunk edges.
func readOdd(r io.Reader) ([]byte, error) {
	var out []byte
	buf := make([]byte, 7001)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

func TestBytesUnchanged(t *testing.T) {
	inner := store.NewMemDriver()
	data := put(t, inner, "obj", 300_000)
	d := Wrap(inner, mustParse(t, "ttfb=1ms,p99=2ms,stream=256MiB/s,link=512MiB/s,stall=0.5:1ms"))
	ctx := context.Background()
	for _, r := range []store.Range{
		store.All(), {Off: 0, Len: 1}, {Off: 65535, Len: 65538}, {Off: 1000, Len: -1},
		{Off: 299_999, Len: 10}, {Off: 300_000, Len: 5}, store.Suffix(8), store.Suffix(1 << 20),
	} {
		rc, info, err := d.ReadRange(ctx, "obj", r, store.ReadOptions{})
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		got, err := readOdd(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if info.Size != int64(len(data)) {
			t.Errorf("%+v: size %d, want %d", r, info.Size, len(data))
		}
		start, n := bodyStart(r, info.Size), bodyLen(r, info.Size)
		if want := data[start : start+n]; !bytes.Equal(got, want) {
			t.Errorf("%+v: got %d bytes, want %d (equal prefix %v)", r, len(got), len(want), bytes.HasPrefix(want, got))
		}
	}
}

func bodyStart(r store.Range, size int64) int64 {
	if r.Off < 0 {
		return max(size+r.Off, 0)
	}
	return min(r.Off, size)
}

// Every kind of request pays the 503, and it reaches a Store caller as retryable.
func TestSlowDown(t *testing.T) {
	inner := store.NewMemDriver()
	put(t, inner, "obj", 1000)
	d := Wrap(inner, mustParse(t, "slowdown=1"))
	ctx := context.Background()
	check := func(op string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", op)
		}
		if d.Classify(err) != store.KindRetryable || !errors.Is(err, store.ErrRetryable) {
			t.Errorf("%s: %v does not classify as retryable", op, err)
		}
		if !strings.Contains(err.Error(), "503 SlowDown (simulated)") {
			t.Errorf("%s: %q does not say 503 SlowDown", op, err)
		}
	}
	for range 20 {
		_, _, err := d.ReadRange(ctx, "obj", store.All(), store.ReadOptions{})
		check("read", err)
	}
	_, err := d.Stat(ctx, "obj")
	check("stat", err)
	check("list", d.List(ctx, "", func(store.ObjectInfo) error { return nil }))
	check("delete", d.Delete(ctx, "obj"))
	_, err = d.NewWriter(ctx, "new", store.WriteOptions{})
	check("write", err)
	if _, err := inner.Stat(ctx, "new"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused upload left an object behind: %v", err)
	}

	// Through the portable layer, as fetch will see it.
	s := store.New(d, "mem://t/")
	_, err = s.ReadAll(ctx, "obj")
	if store.KindOf(err) != store.KindRetryable {
		t.Errorf("Store.ReadAll: %v has kind %v, want retryable", err, store.KindOf(err))
	}
}

func TestReset(t *testing.T) {
	inner := store.NewMemDriver()
	data := put(t, inner, "obj", 200_000)
	d := Wrap(inner, mustParse(t, "reset=1,stream=512MiB/s"))
	ctx := context.Background()
	points := map[int]bool{}
	for i := range 40 {
		r := store.Range{Off: int64(i * 1000), Len: int64(50_000 + i*3000)}
		rc, _, err := d.ReadRange(ctx, "obj", r, store.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := readOdd(rc)
		rc.Close()
		if !errors.Is(err, ErrReset) || d.Classify(err) != store.KindRetryable {
			t.Fatalf("read %d: err %v, want a retryable reset", i, err)
		}
		if len(got) >= int(r.Len) {
			t.Fatalf("read %d: delivered all %d bytes before the reset", i, len(got))
		}
		if !bytes.Equal(got, data[r.Off:r.Off+int64(len(got))]) {
			t.Fatalf("read %d: the %d bytes before the reset are not the object's prefix", i, len(got))
		}
		if _, err2 := rc.Read(make([]byte, 10)); err2 != err {
			t.Fatalf("read %d: after the reset Read returned %v, want the same error", i, err2)
		}
		points[len(got)] = true
	}
	if len(points) < 30 {
		t.Errorf("reset points are not spread: %d distinct in 40 reads", len(points))
	}
	// An empty body cannot fail part way, but it still fails.
	rc, _, err := d.ReadRange(ctx, "obj", store.Range{Off: 1 << 30, Len: 10}, store.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadAll(rc); !errors.Is(err, ErrReset) {
		t.Errorf("empty body: %v, want reset", err)
	}
}

func TestStallResumes(t *testing.T) {
	inner := store.NewMemDriver()
	data := put(t, inner, "obj", 100_000)
	d := Wrap(inner, mustParse(t, "stall=1:80ms"))
	start := time.Now()
	rc, _, err := d.ReadRange(context.Background(), "obj", store.All(), store.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := readOdd(rc)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 80*time.Millisecond {
		t.Errorf("read took %v, want at least the 80ms stall", el)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("bytes differ after a stall")
	}
}

// A reader stuck in a stall returns as soon as its context ends or its
// body is closed: that is what a watchdog relies on.
func TestStallInterrupted(t *testing.T) {
	inner := store.NewMemDriver()
	data := put(t, inner, "obj", 100_000)
	d := Wrap(inner, mustParse(t, "stall=1:1h"))
	for _, how := range []string{"cancel", "deadline", "close"} {
		// In the bubble the clock moves only once every goroutine in it is
		// blocked: the deadline comes, and Wait returns, only once the
		// reader is stuck in the stall.
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if how == "deadline" {
				ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
			}
			defer cancel()
			rc, _, err := d.ReadRange(ctx, "obj", store.All(), store.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			go func() {
				synctest.Wait()
				switch how {
				case "cancel":
					cancel()
				case "close":
					rc.Close()
				}
			}()
			start := time.Now()
			got, err := readOdd(rc)
			el := time.Since(start)
			if err == nil || el > 50*time.Millisecond {
				t.Errorf("%s: Read returned %v after %v, want an error once stuck (at the deadline: 50ms)", how, err, el)
			}
			if how == "deadline" && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("deadline: %v, want context.DeadlineExceeded", err)
			}
			if len(got) == len(data) || !bytes.Equal(got, data[:len(got)]) {
				t.Errorf("%s: %d bytes before the stall, want a prefix of the object's %d", how, len(got), len(data))
			}
		})
	}
}

// A deadline nearer than the pacing wait must end the read with the
// context's error when it passes, not fail at once with another error
// (which is what rate.Limiter.WaitN would do).
func TestDeadlineWhilePaced(t *testing.T) {
	inner := store.NewMemDriver()
	put(t, inner, "obj", 4<<20)
	d := Wrap(inner, mustParse(t, "stream=1MiB/s"))
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	rc, _, err := d.ReadRange(ctx, "obj", store.All(), store.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	el := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after %d bytes: %v, want context.DeadlineExceeded", n, err)
	}
	if el < 140*time.Millisecond || el > 2*time.Second {
		t.Errorf("ended after %v, want at the 150ms deadline", el)
	}
	// 150ms at 1 MiB/s is about 150 KiB (plus the first chunk); a busy
	// machine may deliver less, never more.
	if n > 300<<10 {
		t.Errorf("delivered %d bytes by the deadline, want at most about 150 KiB", n)
	}
}

// Uploads have their own link budget: a read and a write at the full link
// rate at once take as long as one, not two (a wall-clock claim: see
// package fidelity).
func TestFidelityFullDuplex(t *testing.T) {
	fidelity.Require(t)
	inner := store.NewMemDriver()
	const size = 2 << 20
	data := put(t, inner, "down", size)
	d := Wrap(inner, mustParse(t, "link=8MiB/s"))
	ctx := context.Background()
	start := time.Now()
	var wg sync.WaitGroup
	var readErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		rc, _, err := d.ReadRange(ctx, "down", store.All(), store.ReadOptions{})
		if err != nil {
			readErr = err
			return
		}
		defer rc.Close()
		_, readErr = io.Copy(io.Discard, rc)
	}()
	storetest.Put(t, d, "up", data)
	wg.Wait()
	el := time.Since(start)
	if readErr != nil {
		t.Fatal(readErr)
	}
	// One direction alone takes 250ms; sharing one budget would take 500ms.
	if el < 230*time.Millisecond || el > 400*time.Millisecond {
		t.Errorf("read and write of 2 MiB each over an 8 MiB/s link took %v, want about 250ms", el)
	}
	rc, _, err := inner.ReadRange(ctx, "up", store.All(), store.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, _ := io.ReadAll(rc); !bytes.Equal(got, data) {
		t.Errorf("uploaded bytes differ")
	}
}

// Given the seed, a serial run draws the same faults; another seed does not.
func TestReproducible(t *testing.T) {
	inner := store.NewMemDriver()
	put(t, inner, "obj", 10)
	run := func(seed string) string {
		d := Wrap(inner, mustParse(t, "slowdown=0.5,seed="+seed))
		var b strings.Builder
		for range 400 {
			if _, err := d.Stat(context.Background(), "obj"); err != nil {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a, b, c := run("7"), run("7"), run("8")
	if a != b {
		t.Errorf("same seed, different runs:\n%s\n%s", a, b)
	}
	if a == c {
		t.Errorf("seeds 7 and 8 drew the same faults")
	}
	if n := strings.Count(a, "x"); n < 160 || n > 240 {
		t.Errorf("slowdown=0.5 failed %d of 400 requests", n)
	}
}

// The drawn first-byte latencies are log-normal with the profile's median
// and 99th percentile (the draws alone; the fidelity test times them).
func TestLatencyDistribution(t *testing.T) {
	l := Wrap(store.NewMemDriver(), mustParse(t, "ttfb=15ms,p99=80ms,seed=1")).(*link)
	const n = 20000
	lat := make([]time.Duration, n)
	for i := range lat {
		lat[i] = l.draw().latency
	}
	p50, p99 := quantile(lat, 0.50), quantile(lat, 0.99)
	t.Logf("drawn p50 %v p99 %v over %d draws", p50, p99, n)
	if !within(float64(p50), float64(15*time.Millisecond), 0.03) {
		t.Errorf("p50 %v, want 15ms within 3%%", p50)
	}
	if !within(float64(p99), float64(80*time.Millisecond), 0.08) {
		t.Errorf("p99 %v, want 80ms within 8%%", p99)
	}
}

func TestListPages(t *testing.T) {
	inner := store.NewMemDriver()
	for i := range 2001 {
		w, _ := inner.NewWriter(context.Background(), fmt.Sprintf("k/%05d", i), store.WriteOptions{})
		w.Close()
	}
	d := Wrap(inner, mustParse(t, "ttfb=20ms"))
	start := time.Now()
	n := 0
	if err := d.List(context.Background(), "k/", func(store.ObjectInfo) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	// Three pages of at most 1000 keys: three round trips.
	if el := time.Since(start); n != 2001 || el < 60*time.Millisecond {
		t.Errorf("listed %d keys in %v, want 2001 in at least 3 x 20ms", n, el)
	}
}

func TestWrapOption(t *testing.T) {
	if WrapOption(Profile{}) != nil || WrapOption(Profile{Name: "x", Seed: 3}) != nil {
		t.Error("WrapOption of a profile that shapes nothing is not nil")
	}
	inner := store.NewMemDriver()
	if Wrap(inner, Profile{}) != inner {
		t.Error("Wrap of the zero profile wrapped")
	}
	wrap := WrapOption(mustParse(t, "s3,slowdown=1"))
	if wrap == nil {
		t.Fatal("WrapOption(s3) is nil")
	}
	s, key, err := store.Open(context.Background(), "mem://simwrap/x", store.Options{Wrap: wrap})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Stat(context.Background(), key); !store.IsRetryable(err) {
		t.Errorf("Stat through a wrapped store: %v, want the simulated 503", err)
	}
	// Errors that are not the model's are the inner driver's to classify.
	if k := wrap(inner).Classify(store.ErrNotFound); k != store.KindNotFound {
		t.Errorf("Classify(ErrNotFound) = %v", k)
	}
}

// A profile that cannot be modelled is refused by every request, with an
// error the store classifies as invalid, never a panic.
func TestWrapRefusesAnInvalidProfile(t *testing.T) {
	inner := store.NewMemDriver()
	put(t, inner, "k", 10)
	st := store.New(Wrap(inner, Profile{TTFB: -time.Millisecond}), "mem://x/")
	_, err := st.Stat(context.Background(), "k")
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "ttfb") {
		t.Fatalf("Stat through an invalid profile: %v, want an invalid-profile error naming ttfb", err)
	}
	if _, err := st.NewWriter(context.Background(), "w", store.WriteOptions{}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("NewWriter: %v", err)
	}
	st = store.New(Wrap(inner, Profile{Reset: 2}), "mem://x/")
	if _, _, err := st.ReadRange(context.Background(), "k", store.All(), store.ReadOptions{}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("ReadRange through reset=2: %v", err)
	}
}
