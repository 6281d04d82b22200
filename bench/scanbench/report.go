package scanbench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

func median(xs []float64) float64 {
	xs = slices.DeleteFunc(slices.Clone(xs), func(x float64) bool { return x == 0 })
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

func medianOf[T any](runs []T, f func(T) float64) float64 {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	return median(xs)
}

// medianSweep is the median, per concurrency, of the runs that measured
// it; the best is the concurrency of the highest median.
func medianSweep(runs []Run, f func(Run) Sweep) Sweep {
	byC := map[int][]float64{}
	for _, r := range runs {
		for c, v := range f(r).MiBps {
			byC[c] = append(byC[c], v)
		}
	}
	var s Sweep
	for _, c := range slices.Sorted(func(yield func(int) bool) {
		for c := range byC {
			if !yield(c) {
				return
			}
		}
	}) {
		s.add(c, median(byC[c]))
	}
	return s
}

func medianScan(runs []Run, f func(Run) *ScanResult) *ScanResult {
	var have []*ScanResult
	for _, r := range runs {
		if s := f(r); s != nil {
			have = append(have, s)
		}
	}
	if len(have) == 0 {
		return nil
	}
	m := func(g func(*ScanResult) float64) float64 { return medianOf(have, g) }
	out := &ScanResult{
		Seconds:           m(func(s *ScanResult) float64 { return s.Seconds }),
		MiBps:             m(func(s *ScanResult) float64 { return s.MiBps }),
		FirstBatchSeconds: m(func(s *ScanResult) float64 { return s.FirstBatchSeconds }),
		BytesNeeded:       int64(m(func(s *ScanResult) float64 { return float64(s.BytesNeeded) })),
		BytesFetched:      int64(m(func(s *ScanResult) float64 { return float64(s.BytesFetched) })),
		Requests:          int64(m(func(s *ScanResult) float64 { return float64(s.Requests) })),
		Retries:           int64(m(func(s *ScanResult) float64 { return float64(s.Retries) })),
		Hedges:            int64(m(func(s *ScanResult) float64 { return float64(s.Hedges) })),
		Rows:              have[0].Rows,
		CPU:               medianCPU(have, func(s *ScanResult) CPU { return s.CPU }),
	}
	out.Elapsed = time.Duration(out.Seconds * float64(time.Second))
	return out
}

func medianCPU[T any](xs []T, f func(T) CPU) CPU {
	return CPU{
		Own:        medianOf(xs, func(x T) float64 { return f(x).Own }),
		Others:     medianOf(xs, func(x T) float64 { return f(x).Others }),
		OwnSeconds: medianOf(xs, func(x T) float64 { return f(x).OwnSeconds }),
	}
}

// medians summarises the runs: each figure's median, and each ratio's
// median over the runs' own ratios (not the ratio of the medians).
func medians(runs []Run) (Run, Ratios) {
	var m Run
	m.Raw = medianSweep(runs, func(r Run) Sweep { return r.Raw })
	m.Naive = medianSweep(runs, func(r Run) Sweep { return r.Naive })
	m.Whole = medianSweep(runs, func(r Run) Sweep { return r.Whole })
	m.NaiveProjection = medianSweep(runs, func(r Run) Sweep { return r.NaiveProjection })
	m.WholeProjection = medianSweep(runs, func(r Run) Sweep { return r.WholeProjection })
	m.Decode = medianOf(runs, func(r Run) float64 { return r.Decode })
	m.DecodeCPU = medianCPU(runs, func(r Run) CPU { return r.DecodeCPU })
	m.ArrowGo = medianOf(runs, func(r Run) float64 { return r.ArrowGo })
	m.ArrowGoCPU = medianCPU(runs, func(r Run) CPU { return r.ArrowGoCPU })
	m.CPU = medianCPU(runs, func(r Run) CPU { return r.CPU })
	m.Scan = medianScan(runs, func(r Run) *ScanResult { return r.Scan })
	m.Projection = medianScan(runs, func(r Run) *ScanResult { return r.Projection })
	m.Clean = medianScan(runs, func(r Run) *ScanResult { return r.Clean })
	m.Faulty = medianScan(runs, func(r Run) *ScanResult { return r.Faulty })
	rs := make([]Ratios, len(runs))
	for i, r := range runs {
		rs[i] = r.Ratios()
	}
	mr := Ratios{
		ScanRaw:         medianOf(rs, func(r Ratios) float64 { return r.ScanRaw }),
		ScanNaive:       medianOf(rs, func(r Ratios) float64 { return r.ScanNaive }),
		ScanWhole:       medianOf(rs, func(r Ratios) float64 { return r.ScanWhole }),
		ScanDecode:      medianOf(rs, func(r Ratios) float64 { return r.ScanDecode }),
		ProjectionNaive: medianOf(rs, func(r Ratios) float64 { return r.ProjectionNaive }),
		ProjectionWhole: medianOf(rs, func(r Ratios) float64 { return r.ProjectionWhole }),
		FaultySlowdown:  medianOf(rs, func(r Ratios) float64 { return r.FaultySlowdown }),
		DecodeArrowGo:   medianOf(rs, func(r Ratios) float64 { return r.DecodeArrowGo }),
	}
	return m, mr
}

// Print writes the report as a table: the medians, the ratios, and each
// run's figures below them.
func (rep *Report) Print(w io.Writer) {
	d := rep.Dataset
	m, mr := rep.Median, rep.MedianRatios
	fmt.Fprintf(w, "dataset %s: %d files, %s, %d rows, %d row groups\n", d.URL, d.Files, mib(d.Bytes), d.Rows, d.RowGroups)
	fmt.Fprintf(w, "medians of %d runs, MiB/s of file bytes:\n", len(rep.Runs))
	sweep := func(name, unit string, s Sweep) {
		if len(s.MiBps) == 0 {
			return
		}
		var all []string
		for _, c := range slices.Sorted(func(yield func(int) bool) {
			for c := range s.MiBps {
				if !yield(c) {
					return
				}
			}
		}) {
			all = append(all, fmt.Sprintf("%d:%.0f", c, s.MiBps[c]))
		}
		fmt.Fprintf(w, "  %-34s %8.1f   (%s %s)\n", fmt.Sprintf("%s (best: %d %s)", name, s.Best, unit), s.Rate(), unit, strings.Join(all, " "))
	}
	sweep("raw GET", "in flight", m.Raw)
	if s := m.Scan; s != nil {
		fmt.Fprintf(w, "  %-34s %8.1f   (%.2fs, first batch %.0fms; %s needed, %s fetched (%.3fx), %d requests, %d duplicates, %d retries)\n",
			"scan, all columns", s.MiBps, s.Seconds, s.FirstBatchSeconds*1000, mib(s.BytesNeeded), mib(s.BytesFetched),
			ratio(float64(s.BytesFetched), float64(s.BytesNeeded)), s.Requests, s.Hedges, s.Retries)
	}
	sweep("naive arrow-go over ReaderAt", "files", m.Naive)
	sweep("whole-object GET, then decode", "files", m.Whole)
	if m.Decode > 0 {
		fmt.Fprintf(w, "  %-34s %8.1f\n", "decode only, from memory", m.Decode)
	}
	if m.ArrowGo > 0 {
		fmt.Fprintf(w, "  %-34s %8.1f\n", "arrow-go record reader, from memory", m.ArrowGo)
	}
	gib := float64(d.Bytes) / (1 << 30)
	var cpu []string
	if s := m.Scan; s != nil && s.CPU.OwnSeconds > 0 {
		cpu = append(cpu, fmt.Sprintf("scan %.1f s per GiB (%.2f cores busy, other processes %.2f)", s.CPU.OwnSeconds/gib, s.CPU.Own, s.CPU.Others))
	}
	if c := m.DecodeCPU; c.OwnSeconds > 0 {
		cpu = append(cpu, fmt.Sprintf("decode only %.1f s per GiB (%.2f cores, others %.2f)", c.OwnSeconds/gib, c.Own, c.Others))
	}
	if c := m.ArrowGoCPU; c.OwnSeconds > 0 {
		cpu = append(cpu, fmt.Sprintf("arrow-go %.1f s per GiB (%.2f cores, others %.2f)", c.OwnSeconds/gib, c.Own, c.Others))
	}
	if len(cpu) > 0 {
		fmt.Fprintf(w, "CPU: %s\n", strings.Join(cpu, "; "))
	}
	fmt.Fprintf(w, "ratios (median of each run's ratio):\n")
	for _, x := range []struct {
		name string
		v    float64
	}{
		{"scan / raw GET", mr.ScanRaw},
		{"scan / naive", mr.ScanNaive},
		{"scan / whole-then-decode", mr.ScanWhole},
		{"scan / decode only", mr.ScanDecode},
		{"projection: scan / naive", mr.ProjectionNaive},
		{"projection: scan / whole-then-decode", mr.ProjectionWhole},
		{"decode only / arrow-go", mr.DecodeArrowGo},
	} {
		if x.v > 0 {
			fmt.Fprintf(w, "  %-34s %8.3f\n", x.name, x.v)
		}
	}
	if p := m.Projection; p != nil {
		fmt.Fprintf(w, "projection %s, MiB/s of its column chunks and footers:\n", strings.Join(d.Projection, ","))
		fmt.Fprintf(w, "  %-34s %8.1f   (%.2fs, first batch %.0fms)\n", "scan", p.MiBps, p.Seconds, p.FirstBatchSeconds*1000)
		sweep("naive arrow-go over ReaderAt", "files", m.NaiveProjection)
		sweep("whole-object GET, then decode", "files", m.WholeProjection)
		fmt.Fprintf(w, "projection: %s fetched for %s of column chunks and footers: %.3fx (scan: %s needed, %d requests)\n",
			mib(p.BytesFetched), mib(d.ProjectionBytes), ratio(float64(p.BytesFetched), float64(d.ProjectionBytes)),
			mib(p.BytesNeeded), p.Requests)
	}
	if m.Clean != nil && m.Faulty != nil {
		same := "identical"
		if !rep.FaultyChecksumsEqual {
			same = "DIFFERENT (" + rep.ChecksumMismatch + ")"
		}
		fmt.Fprintf(w, "faults: clean scan %.2fs, faulty scan %.2fs (%d retries, %d duplicates): time ratio %.3f; checksums %s\n",
			m.Clean.Seconds, m.Faulty.Seconds, m.Faulty.Retries, m.Faulty.Hedges, mr.FaultySlowdown, same)
	}
	fmt.Fprintf(w, "runs:\n")
	for i, r := range rep.Runs {
		rr := r.Ratios()
		var parts []string
		add := func(f string, a ...any) { parts = append(parts, fmt.Sprintf(f, a...)) }
		if r.Raw.Best > 0 {
			add("raw %.0f", r.Raw.Rate())
		}
		if r.Scan != nil {
			add("scan %.0f (first batch %.0fms)", r.Scan.MiBps, r.Scan.FirstBatchSeconds*1000)
		}
		if r.Projection != nil {
			add("projection %.3fx", ratio(float64(r.Projection.BytesFetched), float64(d.ProjectionBytes)))
		}
		// The figures this run measured, each only if it did.
		for _, f := range []struct {
			format string
			v      float64
		}{
			{"naive %.0f", r.Naive.Rate()}, {"whole %.0f", r.Whole.Rate()},
			{"decode %.0f", r.Decode}, {"arrow-go %.0f", r.ArrowGo},
			{"decode/arrow-go %.2f", rr.DecodeArrowGo}, {"scan/raw %.3f", rr.ScanRaw},
			{"scan/naive %.2f", rr.ScanNaive}, {"scan/whole %.2f", rr.ScanWhole},
			{"projection scan/naive %.2f", rr.ProjectionNaive}, {"projection scan/whole %.2f", rr.ProjectionWhole},
			{"faulty/clean %.3f", rr.FaultySlowdown},
		} {
			if f.v > 0 {
				add(f.format, f.v)
			}
		}
		if r.CPU.OwnSeconds > 0 {
			add("other processes %.2f cores", r.CPU.Others)
		}
		fmt.Fprintf(w, "  %d: %s\n", i+1, strings.Join(parts, ", "))
	}
}
