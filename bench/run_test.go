package bench

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-data/sluice/internal/fidelity"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

func TestMain(m *testing.M) {
	// TestExecLauncherLocal's workers are this binary.
	if os.Getenv(benchTestWorker) != "" {
		os.Exit(testWorker(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

// testCtx bounds every test that moves data, on a machine shared with others.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func memStore(t *testing.T) (*store.Store, store.Driver) {
	d := store.NewMemDriver()
	return store.New(d, "mem://bench-test/"), d
}

func putRaw(t *testing.T, st *store.Store, key string, size int) {
	t.Helper()
	if _, err := st.Put(context.Background(), key, bytes.NewReader(make([]byte, size)), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func keys(t *testing.T, st *store.Store, prefix string) []string {
	t.Helper()
	objs, err := st.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, o := range objs {
		ks = append(ks, o.Key)
	}
	return ks
}

func TestRunWritesReadsAndCleansUp(t *testing.T) {
	st, _ := memStore(t)
	putRaw(t, st, "data/mine", 10)
	putRaw(t, st, "elsewhere", 10)
	res, err := Run(testCtx(t), st, "data", Config{Sizes: []int64{1 << 20, 300_000}, Concurrency: []int{1, 3}, Objects: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Prefix, "data/sluice-bench-") || !strings.HasSuffix(res.Prefix, "/") {
		t.Fatalf("prefix %q is not a fresh one inside data/", res.Prefix)
	}
	if got := keys(t, st, ""); len(got) != 2 || got[0] != "data/mine" || got[1] != "elsewhere" {
		t.Fatalf("after the run the store holds %v; want only the two keys that were there", got)
	}
	if len(res.Summaries) != 8 {
		t.Fatalf("%d summaries, want 2 sizes x 2 concurrencies x put+get", len(res.Summaries))
	}
	for i, s := range res.Summaries {
		wantKind := []Kind{Put, Get}[i%2]
		if s.Kind != wantKind || s.Objects != 5 || s.Errors != 0 || s.Cell != i/2 {
			t.Errorf("summary %d: %s cell %d objects %d errors %d", i, s.Kind, s.Cell, s.Objects, s.Errors)
		}
		if s.SteadyMiBps <= 0 || s.WholeMiBps <= 0 {
			t.Errorf("summary %d: no throughput: %+v", i, s)
		}
	}
	if len(res.Records) != 40 || res.GeneratorMiBps <= 0 {
		t.Fatalf("%d records (want 40), generator %.0f MiB/s", len(res.Records), res.GeneratorMiBps)
	}
	for _, r := range res.Records {
		if !strings.HasPrefix(r.Key, res.Prefix) || r.Worker >= r.Concurrency || r.Bytes != r.ObjectSize || r.FirstByte < r.Start || r.LastByte < r.FirstByte {
			t.Fatalf("bad record %+v", r)
		}
	}
}

func TestRunKeepThenReadOnlyRanged(t *testing.T) {
	st, _ := memStore(t)
	ctx := testCtx(t)
	w, err := Run(ctx, st, "", Config{Sizes: []int64{5 << 20}, Concurrency: []int{2}, Objects: 3, WriteOnly: true, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(t, st, w.Prefix); len(got) != 3 || !w.Kept {
		t.Fatalf("kept %v (Kept=%v), want 3 objects", got, w.Kept)
	}
	// The objects hold the generator's bytes.
	want := make([]byte, 5<<20)
	NewPayload(1).Fill(want, 0, 0)
	if got, err := st.ReadAll(ctx, w.Prefix+"obj-000000"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("object 0 differs from the payload (err %v)", err)
	}
	r, err := Run(ctx, st, w.Prefix, Config{Concurrency: []int{4}, ReadOnly: true, RangeSize: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Summaries) != 1 || len(r.Records) != 9 {
		t.Fatalf("%d summaries, %d records; want 1 get phase of 3 objects x 3 ranges", len(r.Summaries), len(r.Records))
	}
	s := r.Summaries[0]
	if s.Kind != Get || s.Objects != 3 || s.Requests != 9 || s.Bytes != 15<<20 || s.RangeSize != 2<<20 {
		t.Fatalf("summary %+v", s)
	}
	if got := keys(t, st, w.Prefix); len(got) != 3 {
		t.Fatalf("read-only removed objects: %v", got)
	}
}

// TestFidelityStreamCapAndWholeRun reads through a link of 16 MiB/s a
// stream at concurrency 1: the steady figure must show the cap, and the
// whole-run figure must agree with Run timed from outside (wall-clock
// claims: see package fidelity).
func TestFidelityStreamCapAndWholeRun(t *testing.T) {
	fidelity.Require(t)
	const stream = 16 << 20
	inner := store.NewMemDriver()
	raw := store.New(inner, "mem://cap/")
	for i := range 4 {
		putRaw(t, raw, "in/"+string(rune('a'+i)), 4<<20)
	}
	st := store.New(sim.Wrap(inner, sim.Profile{Stream: stream}), "mem://cap/")
	start := time.Now()
	res, err := Run(testCtx(t), st, "in/", Config{Concurrency: []int{1}, ReadOnly: true})
	outside := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summaries[0]
	t.Logf("steady %.2f MiB/s, whole %.2f MiB/s, request p50 %.2f MiB/s, outside %v", s.SteadyMiBps, s.WholeMiBps, s.RequestMiBps.P50, outside)
	if math.Abs(s.SteadyMiBps-16)/16 > 0.10 {
		t.Errorf("steady %.2f MiB/s at concurrency 1, want 16 MiB/s within 10%%", s.SteadyMiBps)
	}
	outsideMiBps := float64(16<<20) / mib / outside.Seconds()
	if d := math.Abs(s.WholeMiBps-outsideMiBps) / outsideMiBps; d > 0.02 {
		t.Errorf("whole-run %.2f MiB/s vs %.2f MiB/s timed from outside: %.1f%% apart, want within 2%%", s.WholeMiBps, outsideMiBps, 100*d)
	}
}

// TestAutoFindsLinkCap: 32 MiB/s a stream, 80 MiB/s for the link; one
// stream gives 32, two 64, four and eight the link's 80, so the search
// must stop at 4 with the link cap. Where it stops is a wall-clock claim,
// checked in a fidelity run (package fidelity); always, the search ends
// with one result.
func TestAutoFindsLinkCap(t *testing.T) {
	inner := store.NewMemDriver()
	raw := store.New(inner, "mem://auto/")
	for i := range 16 {
		putRaw(t, raw, "in/"+string(rune('a'+i)), 2<<20)
	}
	p, err := sim.Parse("stream=32MiB/s,link=80MiB/s")
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(sim.Wrap(inner, p), "mem://auto/")
	res, err := Run(testCtx(t), st, "in/", Config{Auto: true, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var tbl bytes.Buffer
	WriteTable(&tbl, res.Summaries, Wide)
	t.Logf("\n%s", tbl.String())
	if len(res.Auto) != 1 {
		t.Fatalf("auto results %+v", res.Auto)
	}
	a := res.Auto[0]
	if a.Concurrency < 1 || a.SteadyMiBps <= 0 {
		t.Errorf("auto %+v: no concurrency chosen or nothing read", a)
	}
	if fidelity.On() && (!a.Saturated || a.Concurrency < 4 || a.SteadyMiBps < 0.95*80) {
		t.Errorf("auto %+v; want saturated at 4 or more with at least 95%% of 80 MiB/s", a)
	}
}

func TestRunRetriesSlowDowns(t *testing.T) {
	p, err := sim.Parse("slowdown=0.3,seed=3")
	if err != nil {
		t.Fatal(err)
	}
	inner := store.NewMemDriver()
	st := store.New(sim.Wrap(inner, p), "mem://retry/")
	res, err := Run(testCtx(t), st, "", Config{Sizes: []int64{64 << 10}, Concurrency: []int{4}, Objects: 20, Attempts: 20})
	if err != nil {
		t.Fatal(err)
	}
	var retries int
	for _, s := range res.Summaries {
		retries += s.Retries
		if s.Errors != 0 || s.Objects != 20 {
			t.Errorf("%s: errors %d objects %d", s.Kind, s.Errors, s.Objects)
		}
	}
	if retries == 0 {
		t.Error("no retries with 30% of requests slowed down")
	}
	if left := keys(t, store.New(inner, ""), ""); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Sizes: []int64{0}, Concurrency: []int{1}}, "object size must be positive"},
		{Config{Sizes: []int64{-5}, Concurrency: []int{1}}, "object size must be positive"},
		{Config{Concurrency: []int{1}}, "no object size"},
		{Config{Sizes: []int64{1}, Concurrency: []int{0}}, "concurrency must be"},
		{Config{Sizes: []int64{1}}, "no concurrency"},
		{Config{Sizes: []int64{1}, Concurrency: []int{1}, Objects: -1}, "objects must not be negative"},
		{Config{ReadOnly: true, WriteOnly: true, Concurrency: []int{1}}, "exclude each other"},
		{Config{ReadOnly: true, Sizes: []int64{1}, Concurrency: []int{1}}, "sizes do not apply"},
		{Config{Sizes: []int64{1}, Concurrency: []int{1}, RangeSize: -1}, "range size"},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want %q", c.cfg, err, c.want)
		}
		st, _ := memStore(t)
		if _, err := Run(context.Background(), st, "", c.cfg); err == nil {
			t.Errorf("Run(%+v) ran", c.cfg)
		} else if left := keys(t, st, ""); len(left) > 0 {
			t.Errorf("Run(%+v) left %v", c.cfg, left)
		}
	}
}

// denyWrites is a store that fails every write after accepting its first
// bytes, as an unwritable bucket does.
type denyWrites struct{ store.Driver }

type deniedWriter struct{ store.DriverWriter }

func (d denyWrites) NewWriter(ctx context.Context, key string, o store.WriteOptions) (store.DriverWriter, error) {
	w, err := d.Driver.NewWriter(ctx, key, o)
	return deniedWriter{w}, err
}

func (w deniedWriter) Close() error {
	_ = w.DriverWriter.Abort()
	return store.ErrPermission
}

func TestRunUnwritableStops(t *testing.T) {
	d := store.NewMemDriver()
	st := store.New(denyWrites{d}, "mem://deny/")
	res, err := Run(testCtx(t), st, "p", Config{Sizes: []int64{1 << 20}, Concurrency: []int{4}, Objects: 50})
	if !errors.Is(err, store.ErrPermission) {
		t.Fatalf("err = %v, want permission denied", err)
	}
	if n := len(res.Records); n == 0 || n > 8 {
		t.Errorf("%d put attempts after a permission error; want the run to stop at once", n)
	}
	if left := keys(t, st, ""); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
}

// cancelOnBytes cancels the run once some bytes have moved.
type cancelOnBytes struct {
	cancel context.CancelFunc
	n      atomic.Int64
}

func (c *cancelOnBytes) PhaseStart(PhaseInfo)    {}
func (c *cancelOnBytes) PhaseEnd(Summary, error) {}
func (c *cancelOnBytes) Add(n int64) {
	if c.n.Add(n) > 8<<20 {
		c.cancel()
	}
}

func TestRunCleansUpWhenCancelled(t *testing.T) {
	st, _ := memStore(t)
	putRaw(t, st, "keep/other", 1)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	obs := &cancelOnBytes{cancel: cancel}
	_, err := Run(ctx, st, "keep", Config{Sizes: []int64{1 << 20}, Concurrency: []int{2}, Objects: 40, Observer: obs})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want canceled", err)
	}
	if got := keys(t, st, ""); len(got) != 1 || got[0] != "keep/other" {
		t.Fatalf("after cancel the store holds %v", got)
	}
}

func TestReadOnlyNothingThere(t *testing.T) {
	st, _ := memStore(t)
	_, err := Run(testCtx(t), st, "missing/", Config{ReadOnly: true, Concurrency: []int{1}})
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "no objects") {
		t.Fatalf("err = %v", err)
	}
}

func TestRecordsAndPlotOutputs(t *testing.T) {
	st, _ := memStore(t)
	res, err := Run(testCtx(t), st, "", Config{Sizes: []int64{1 << 20}, Concurrency: []int{2}, Objects: 6})
	if err != nil {
		t.Fatal(err)
	}
	var jl, cs, rep bytes.Buffer
	if err := WriteRecords(&jl, "jsonl", res.Records); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(jl.String()), "\n")
	if len(lines) != 12 || !strings.HasPrefix(lines[0], `{"kind":"put","cell":0,"concurrency":2,`) || !strings.Contains(lines[0], `"error":null`) {
		t.Fatalf("jsonl: %d lines, first %s", len(lines), lines[0])
	}
	if err := WriteRecords(&cs, "csv", res.Records); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cs.String(), "kind,cell,concurrency,worker,object,key,object_size,offset,length,attempt,start,first_byte,last_byte,bytes,error,process,processes\nput,0,2,") {
		t.Fatalf("csv starts %q", cs.String()[:120])
	}
	if err := WriteReport(&rep, res, Narrow); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"put: 6 objects of 1MiB, concurrency 2", "get: 6 objects", "steady state", "whole phase", "first byte", "object generator"} {
		if !strings.Contains(rep.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, rep.String())
		}
	}
}
