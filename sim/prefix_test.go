package sim

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/store"
)

func TestKeyPrefix(t *testing.T) {
	for _, tc := range []struct {
		key   string
		depth int
		want  string
	}{
		{"a/b/c/obj", 0, "a/b/c/"},
		{"a/b/c/obj", 1, "a/"},
		{"a/b/c/obj", 2, "a/b/"},
		{"a/b/c/obj", 3, "a/b/c/"},
		{"a/b/c/obj", 9, "a/b/c/"}, // fewer segments: the directory
		{"obj", 0, ""},
		{"obj", 1, ""},
		{"a/", 1, "a/"},
		{"a//b", 2, "a//"},
		{"", 0, ""},
	} {
		if got := KeyPrefix(tc.key, tc.depth); got != tc.want {
			t.Errorf("KeyPrefix(%q, %d) = %q, want %q", tc.key, tc.depth, got, tc.want)
		}
	}
}

// stepped wraps a link whose request-rate clock is stepped by the test, so
// what is admitted follows from the offered rate alone, not from how fast
// the machine runs.
func stepped(t *testing.T, spec string) (*link, *time.Time) {
	t.Helper()
	inner := store.NewMemDriver()
	l := Wrap(inner, mustParse(t, spec)).(*link)
	now := time.Unix(1_000_000, 0)
	l.now = func() time.Time { return now }
	return l, &now
}

// offer sends requests at the offered rate for the simulated duration,
// keys from key(i), and counts what was admitted and refused.
func offer(t *testing.T, l *link, now *time.Time, write bool, perSec int, dur time.Duration, key func(i int) string) (admitted, refused int) {
	t.Helper()
	ctx := context.Background()
	step := time.Second / time.Duration(perSec)
	for i := range int(dur / step) {
		*now = now.Add(step)
		var err error
		if write {
			var w store.DriverWriter
			if w, err = l.NewWriter(ctx, key(i), store.WriteOptions{}); err == nil {
				err = w.Close()
			}
		} else {
			_, err = l.Stat(ctx, key(i))
			if errors.Is(err, store.ErrNotFound) {
				err = nil // the request was admitted; the object is not there
			}
		}
		switch {
		case err == nil:
			admitted++
		case errors.Is(err, ErrRateLimited):
			refused++
			if !errors.Is(err, store.ErrRetryable) || l.Classify(err) != store.KindRetryable ||
				!strings.Contains(err.Error(), "503 SlowDown") {
				t.Fatalf("refusal %v is not a retryable 503 SlowDown", err)
			}
		default:
			t.Fatalf("request %d: %v", i, err)
		}
	}
	return admitted, refused
}

// Offered 1000 a second on one prefix for 10 simulated seconds, a prefix
// limited to 100 writes and 300 reads a second admits that rate (plus the
// bucket's 100ms burst) and refuses the rest; spread over 16 prefixes the
// same load meets no refusal.
func TestPrefixRateLimit(t *testing.T) {
	const dur = 10 * time.Second
	oneKey := func(i int) string { return fmt.Sprintf("job/part-%05d", i) }
	spread := func(i int) string { return fmt.Sprintf("job/p%02d/part-%05d", i%16, i) }
	for _, tc := range []struct {
		name            string
		write           bool
		key             func(int) string
		limit           int
		wantRefusedNone bool
	}{
		{"writes, one prefix", true, oneKey, 100, false},
		{"reads, one prefix", false, oneKey, 300, false},
		{"writes, 16 prefixes", true, spread, 100, true},
		{"reads, 16 prefixes", false, spread, 300, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, now := stepped(t, "reqlimit=100:300")
			admitted, refused := offer(t, l, now, tc.write, 1000, dur, tc.key)
			if admitted+refused != 10000 {
				t.Fatalf("%d admitted + %d refused, want 10000 requests", admitted, refused)
			}
			if tc.wantRefusedNone {
				if refused != 0 {
					t.Errorf("62.5 a second per prefix: %d refused, want none", refused)
				}
				return
			}
			// The rate over the run, plus at most one burst.
			lo, hi := tc.limit*10, tc.limit*10+tc.limit/10+1
			if admitted < lo || admitted > hi {
				t.Errorf("admitted %d in 10s, want %d..%d (%d a second)", admitted, lo, hi, tc.limit)
			}
		})
	}
}

// Reads and writes have their own buckets, prefixes theirs, and a prefix
// at its limit recovers at the rate: tokens come back as time passes.
func TestPrefixRateClasses(t *testing.T) {
	l, now := stepped(t, "reqlimit=10:20,prefixdepth=1")
	ctx := context.Background()
	write := func(key string) error {
		w, err := l.NewWriter(ctx, key, store.WriteOptions{})
		if err != nil {
			return err
		}
		return w.Close()
	}
	// The burst of a 10/s prefix is one request (100ms of it).
	if err := write("a/x/1"); err != nil {
		t.Fatal(err)
	}
	if err := write("a/y/2"); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("second write at once to prefix a/ (depth 1): %v, want SlowDown", err)
	}
	if err := l.Delete(ctx, "a/x/1"); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("a delete is a write: %v, want SlowDown", err)
	}
	if err := write("b/x/1"); err != nil {
		t.Fatalf("another prefix: %v", err)
	}
	// Reads of a/ have their own bucket: two at once (20/s, burst 2).
	if _, err := l.Stat(ctx, "a/x/1"); err != nil {
		t.Fatalf("stat: %v", err)
	}
	if err := l.List(ctx, "a/", func(store.ObjectInfo) error { return nil }); err != nil {
		t.Fatalf("list: %v", err)
	}
	if _, _, err := l.ReadRange(ctx, "a/x/1", store.All(), store.ReadOptions{}); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("third read at once: %v, want SlowDown", err)
	}
	*now = now.Add(100 * time.Millisecond)
	if err := l.Delete(ctx, "a/x/1"); err != nil {
		t.Fatalf("after 100ms the 10/s prefix has a token again: %v", err)
	}
	if err := write("a/x/3"); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("and only one: %v", err)
	}
}

// A profile without request limits never refuses, however fast.
func TestPrefixUnlimited(t *testing.T) {
	l, now := stepped(t, "ttfb=0s,slowdown=0,stream=1GiB/s")
	admitted, refused := offer(t, l, now, true, 100000, time.Second, func(int) string { return "k/obj" })
	if refused != 0 || admitted != 100000 {
		t.Errorf("admitted %d, refused %d, want all of 100000", admitted, refused)
	}
}

// Links that name one reqshare file (processes of one machine) share
// each prefix's rate: two offering 100 reads a second each to a 50/s
// prefix get 50 a second between them, where with buckets of their own
// each would get 50.
func TestPrefixRateShared(t *testing.T) {
	share := filepath.Join(t.TempDir(), "buckets")
	for _, c := range []struct {
		spec string
		want int
	}{
		{"reqlimit=50:50,reqshare=" + share, 500},
		{"reqlimit=50:50", 1000},
	} {
		a, now := stepped(t, c.spec)
		b := Wrap(store.NewMemDriver(), mustParse(t, c.spec)).(*link)
		b.now = func() time.Time { return *now }
		admitted := 0
		for i := range 2000 { // 10 s, each link 100 a second
			if i%2 == 0 {
				*now = now.Add(10 * time.Millisecond)
			}
			l := a
			if i%2 == 1 {
				l = b
			}
			_, err := l.Stat(context.Background(), "p/obj")
			switch {
			case errors.Is(err, ErrRateLimited):
			case err == nil || errors.Is(err, store.ErrNotFound):
				admitted++
			default:
				t.Fatal(err)
			}
		}
		a.Close()
		b.Close()
		if admitted < c.want-10 || admitted > c.want+10 {
			t.Errorf("%s: admitted %d in 10 s, want about %d", c.spec, admitted, c.want)
		}
	}
}
