package bench

import (
	"encoding/json"
	"math"
	"slices"
	"time"
)

const mib = 1 << 20

// Span is an interval of a run, as offsets from its start.
type Span struct{ Start, End time.Duration }

// Len is the span's length, zero if it is empty.
func (s Span) Len() time.Duration { return max(s.End-s.Start, 0) }

// MarshalJSON writes {"start_s":..,"end_s":..}.
func (s Span) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Start float64 `json:"start_s"`
		End   float64 `json:"end_s"`
	}{s.Start.Seconds(), s.End.Seconds()})
}

// SteadyWindow is the part of a phase in which every worker is busy: from
// the moment the last worker issued its first request (ramp-up is over) to
// the moment the first worker finished its last one, which is when the
// queue ran dry and fewer requests than the concurrency stay in flight
// (ramp-down begins). Workers take work from one shared queue until it is
// empty, so no worker idles in between but for the instant between two of
// its requests. ok is false when the window is empty, as it is when one
// request per worker is all there is to do and they end unevenly.
func SteadyWindow(recs []Record) (w Span, ok bool) {
	type span struct{ first, last time.Duration }
	type who struct{ process, worker int }
	workers := map[who]*span{}
	for _, r := range recs {
		s := workers[who{r.Process, r.Worker}]
		if s == nil {
			workers[who{r.Process, r.Worker}] = &span{r.Start, r.LastByte}
			continue
		}
		s.first = min(s.first, r.Start)
		s.last = max(s.last, r.LastByte)
	}
	if len(workers) == 0 {
		return Span{}, false
	}
	w = Span{Start: math.MinInt64, End: math.MaxInt64}
	for _, s := range workers {
		w.Start = max(w.Start, s.first)
		w.End = min(w.End, s.last)
	}
	return w, w.End > w.Start
}

// bytesIn is how many body bytes of successful requests moved within w,
// each request's bytes spread evenly over its first to last byte.
func bytesIn(recs []Record, w Span) float64 {
	var total float64
	for _, r := range recs {
		if !r.OK() || r.Bytes == 0 {
			continue
		}
		from := r.FirstByte
		if from <= 0 {
			from = r.Start
		}
		body := Span{from, r.LastByte}
		if body.Len() == 0 {
			if body.End >= w.Start && body.End <= w.End {
				total += float64(r.Bytes)
			}
			continue
		}
		overlap := Span{max(body.Start, w.Start), min(body.End, w.End)}.Len()
		total += float64(r.Bytes) * float64(overlap) / float64(body.Len())
	}
	return total
}

// Timeline is the aggregate MiB/s of successful requests in each of n
// equal bins over s, with the same even spreading as the steady state.
func Timeline(recs []Record, s Span, n int) []float64 {
	out := make([]float64, n)
	if n == 0 || s.Len() == 0 {
		return out
	}
	width := s.Len() / time.Duration(n)
	for i := range out {
		bin := Span{s.Start + time.Duration(i)*width, s.Start + time.Duration(i+1)*width}
		out[i] = bytesIn(recs, bin) / mib / bin.Len().Seconds()
	}
	return out
}

// Dist summarizes a distribution.
type Dist struct {
	N    int     `json:"n"`
	Min  float64 `json:"min"`
	P10  float64 `json:"p10"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Percentile is the q-th quantile (0 <= q <= 1) of sorted values,
// interpolating linearly between the two nearest ranks (as numpy and R's
// default do): with n values, rank q*(n-1). NaN for no values.
func Percentile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := q * float64(n-1)
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// Distribution summarizes values (it sorts a copy). All zero for none.
func Distribution(values []float64) Dist {
	if len(values) == 0 {
		return Dist{}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	return Dist{
		N: len(v), Min: v[0], Max: v[len(v)-1], Mean: sum / float64(len(v)),
		P10: Percentile(v, 0.10), P50: Percentile(v, 0.50), P90: Percentile(v, 0.90), P99: Percentile(v, 0.99),
	}
}

// Summary is what one phase (the puts or the gets of one cell) gave.
type Summary struct {
	Kind Kind `json:"kind"`
	Cell int  `json:"cell"`
	// ObjectSize is the objects' mean size; RangeSize is the size of
	// ranged gets (0: whole objects).
	ObjectSize  int64 `json:"object_size"`
	RangeSize   int64 `json:"range_size"`
	Concurrency int   `json:"concurrency"`
	// Objects counts objects whose every byte moved; Requests counts
	// successful requests and Bytes their body bytes.
	Objects  int   `json:"objects"`
	Requests int   `json:"requests"`
	Bytes    int64 `json:"bytes"`
	// Errors counts requests whose last attempt failed; Retries counts
	// attempts after the first.
	Errors  int `json:"errors"`
	Retries int `json:"retries"`

	// Phase is the phase's wall time: from before its first request to
	// after its last. The whole-run figures are Bytes and Objects over it.
	Phase      Span    `json:"phase"`
	Wall       float64 `json:"wall_s"`
	WholeMiBps float64 `json:"whole_mib_s"`
	WholeObjps float64 `json:"whole_objects_s"`

	// Window is the steady-state window (see SteadyWindow); WindowIsPhase
	// says there was none and the whole phase stands in for it.
	Window        Span    `json:"window"`
	WindowIsPhase bool    `json:"window_is_phase"`
	SteadyMiBps   float64 `json:"steady_mib_s"`
	SteadyObjps   float64 `json:"steady_objects_s"`

	// RequestMiBps is each successful request's bytes over its whole
	// duration (issue to last byte); FirstByteMs and LastByteMs are the
	// latencies from issue to first and to last byte.
	RequestMiBps Dist `json:"request_mib_s"`
	FirstByteMs  Dist `json:"first_byte_ms"`
	LastByteMs   Dist `json:"last_byte_ms"`
}

// Analyze summarizes the records of one phase, which ran over the span
// phase. Records of other phases must be left out.
func Analyze(recs []Record, phase Span) Summary {
	s := Summary{Phase: phase, Wall: phase.Len().Seconds()}
	// Object numbers are per process: objects of two processes differ.
	type obj struct{ process, object int }
	type request struct {
		obj
		off int64
	}
	last := map[request]Record{}
	objBytes := map[obj]int64{}
	objSize := map[obj]int64{}
	var rates, first, lastB []float64
	for _, r := range recs {
		s.Kind, s.Cell, s.Concurrency = r.Kind, r.Cell, r.Concurrency
		if r.Len < r.ObjectSize {
			s.RangeSize = max(s.RangeSize, r.Len)
		}
		o := obj{r.Process, r.Object}
		objSize[o] = r.ObjectSize
		k := request{o, r.Off}
		if prev, ok := last[k]; !ok || r.Attempt > prev.Attempt {
			last[k] = r
		}
		if r.Attempt > 1 {
			s.Retries++
		}
		if !r.OK() {
			continue
		}
		s.Requests++
		s.Bytes += r.Bytes
		objBytes[o] += r.Bytes
		if d := (r.LastByte - r.Start).Seconds(); d > 0 {
			rates = append(rates, float64(r.Bytes)/mib/d)
		}
		if r.FirstByte > 0 {
			first = append(first, float64(r.FirstByte-r.Start)/float64(time.Millisecond))
		}
		lastB = append(lastB, float64(r.LastByte-r.Start)/float64(time.Millisecond))
	}
	for _, r := range last {
		if !r.OK() {
			s.Errors++
		}
	}
	var sizes int64
	for o, n := range objSize {
		sizes += n
		if objBytes[o] == n {
			s.Objects++
		}
	}
	if len(objSize) > 0 {
		s.ObjectSize = sizes / int64(len(objSize))
	}
	if s.Wall > 0 {
		s.WholeMiBps = float64(s.Bytes) / mib / s.Wall
		s.WholeObjps = float64(s.Objects) / s.Wall
	}
	w, ok := SteadyWindow(recs)
	if !ok {
		w, s.WindowIsPhase = phase, true
	}
	s.Window = w
	if w.Len() > 0 {
		s.SteadyMiBps = bytesIn(recs, w) / mib / w.Len().Seconds()
		if s.Objects > 0 {
			s.SteadyObjps = s.SteadyMiBps * mib / (float64(s.Bytes) / float64(s.Objects))
		}
	}
	s.RequestMiBps = Distribution(rates)
	s.FirstByteMs = Distribution(first)
	s.LastByteMs = Distribution(lastB)
	return s
}
