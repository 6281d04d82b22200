package bench

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
)

// synthetic is a run of procs worker processes, each putting then getting
// n objects of 8 MiB one after another, a request a second (8 MiB/s a
// worker), every worker under its own prefix; the first slow puts of each
// worker are refused once with a 503 first.
func synthetic(cell, procs, n, slow int) []Record {
	var recs []Record
	for p := range procs {
		t := 0.0
		for _, kind := range []Kind{Put, Get} {
			for i := range n {
				key := fmt.Sprintf("job/w%d/obj-%03d", p, i)
				base := Record{Kind: kind, Cell: cell, Concurrency: 1, Object: i, Key: key, ObjectSize: 8 * mib,
					Len: 8 * mib, Attempt: 1, Process: p, Processes: procs}
				if kind == Put && i < slow {
					r := base
					r.Start, r.LastByte, r.Err = sec(t), sec(t), "503 SlowDown (simulated: request rate of the prefix)"
					recs = append(recs, r)
					base.Attempt = 2
				}
				r := base
				r.Start, r.FirstByte, r.LastByte, r.Bytes = sec(t), sec(t), sec(t+1), 8*mib
				recs = append(recs, r)
				t++
			}
		}
	}
	return recs
}

func TestMeasure(t *testing.T) {
	// A one-worker run first (cell 0), then the 4-worker run the model uses.
	recs := append(synthetic(0, 1, 10, 0), synthetic(1, 4, 10, 2)...)
	ms, err := Measure(recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Kind != Put || ms[1].Kind != Get {
		t.Fatalf("measured %+v", ms)
	}
	put, get := ms[0], ms[1]
	if put.Processes != 4 || put.Runs != 1 || put.Prefixes != 4 || put.SlowDowns != 8 || get.SlowDowns != 0 {
		t.Errorf("put %+v", put)
	}
	near(t, "a worker's get MiB/s", get.WorkerMiBps, 8)
	near(t, "a worker's gets a second", get.WorkerReqps, 1)
	near(t, "bytes a request", get.BytesPerRequest, 8*mib)
	near(t, "a worker's put MiB/s", put.WorkerMiBps, 8)
	// 12 attempts for 10 puts: refused attempts are requests too.
	near(t, "a worker's puts a second", put.WorkerReqps, 1.2)
	// Each prefix is one worker's: a request a second.
	near(t, "busiest prefix, admitted", get.BusiestPrefixOKps, 1)

	if _, err := Measure(nil, 0); err == nil {
		t.Error("Measure of nothing")
	}
	failed := synthetic(0, 1, 3, 0)
	for i := range failed {
		failed[i].Err = "boom"
	}
	if _, err := Measure(failed, 0); err == nil || !strings.Contains(err.Error(), "no successful") {
		t.Errorf("Measure of failures: %v", err)
	}
}

func TestPredict(t *testing.T) {
	ms := []Measured{
		{Kind: Put, WorkerMiBps: 40, WorkerReqps: 5},
		{Kind: Get, WorkerMiBps: 40, WorkerReqps: 5},
	}
	ps := Predict(ms, PredictConfig{Workers: []int{100, 2000}})
	if len(ps) != 4 {
		t.Fatalf("%d predictions", len(ps))
	}
	// 100 workers: 500 requests a second, under both limits.
	for _, p := range ps[:2] {
		if p.Binds || p.MiBps != 4000 || p.PrefixesNeeded != 1 || p.PrefixReqps != 500 {
			t.Errorf("100 workers: %+v", p)
		}
	}
	// 2000 workers: 10,000 a second on one prefix binds both, puts at 3500.
	put, get := ps[2], ps[3]
	if !put.Binds || put.Limit != 3500 || put.PrefixesNeeded != 3 || put.BindsFrom != 701 {
		t.Errorf("2000 workers put: %+v", put)
	}
	near(t, "put MiB/s under the limit", put.MiBps, 80000*3500/10000.0)
	if !get.Binds || get.Limit != 5500 || get.PrefixesNeeded != 2 || get.BindsFrom != 1101 {
		t.Errorf("2000 workers get: %+v", get)
	}
	// Spread over 4 prefixes nothing binds; with a limit of our own it does.
	for _, p := range Predict(ms, PredictConfig{Workers: []int{2000}, Prefixes: 4}) {
		if p.Binds || p.MiBps != 80000 || p.PrefixReqps != 2500 {
			t.Errorf("4 prefixes: %+v", p)
		}
	}
	p := Predict(ms[:1], PredictConfig{Workers: []int{2000}, Prefixes: 4, ReqWrite: 1000})[0]
	if !p.Binds || math.Abs(p.MiBps-80000*1000/2500.0) > 1e-9 || p.PrefixesNeeded != 10 {
		t.Errorf("own limit: %+v", p)
	}
	var b bytes.Buffer
	if err := WritePrediction(&b, ms, PredictConfig{}, ps); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "prefixes needed") || strings.Count(b.String(), "\n") != 9 {
		t.Errorf("report:\n%s", b.String())
	}
}
