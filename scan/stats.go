package scan

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluice-data/sluice/fetch"
)

// Stats describe a scan so far, Open included.
type Stats struct {
	Files, FilesPruned         int   // files in the dataset; skipped by partition values
	RowGroups, RowGroupsPruned int   // row groups read; skipped by statistics or partition values
	Rows                       int64 // rows delivered
	RowsDecoded                int64 // rows decoded, before the filter
	Batches                    int64 // batches delivered

	// BytesNeeded is what the scan had to read: the footers and the column
	// chunks of the row groups read. BytesFetched is what came off the
	// wire: footer reads (whose first read is a fixed-size suffix), the
	// fetch plan's bytes (holes read through, retries and duplicates
	// included) and fallback reads.
	BytesNeeded, BytesFetched int64
	// Requests counts the listing, footer reads, the plan's ranged GETs and
	// fallback reads.
	Requests int64
	// Fallbacks are reads arrow-go made outside what was fetched, served
	// by a direct ranged read; zero for files arrow-go reads as expected.
	Fallbacks, FallbackBytes int64

	Open    time.Duration // listing and footers
	Elapsed time.Duration // Open until the last batch was taken (or now)
	// FirstBatch is Open until the first batch was taken: how long a
	// consumer waits before it has anything to work on. Zero before then.
	FirstBatch time.Duration
	// Decode is the time the workers spent decoding (summed over them);
	// FetchWait the time they waited for bytes still arriving; Wait the
	// time the consumer waited in Next for a batch.
	Decode, FetchWait, Wait time.Duration

	Fetch fetch.Stats
}

// MiBps is the scan's throughput: bytes needed over the elapsed time.
func (s Stats) MiBps() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.BytesNeeded) / (1 << 20) / s.Elapsed.Seconds()
}

// DecodeMiBps is the column chunk bytes decoded per second of one
// worker's decoding time: what one core decodes, the ceiling of a scan
// that is not waiting for the network.
func (s Stats) DecodeMiBps() float64 {
	if s.Decode <= 0 {
		return 0
	}
	return float64(s.Fetch.BytesRequested) / (1 << 20) / s.Decode.Seconds()
}

// String is a few lines for --stats.
func (s Stats) String() string {
	var b strings.Builder
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	fmt.Fprintf(&b, "scan: %d rows in %d batches (%d decoded) from %d row groups of %d files (%d row groups, %d files pruned)\n",
		s.Rows, s.Batches, s.RowsDecoded, s.RowGroups, s.Files, s.RowGroupsPruned, s.FilesPruned)
	ratio := 0.0
	if s.BytesNeeded > 0 {
		ratio = float64(s.BytesFetched) / float64(s.BytesNeeded)
	}
	fmt.Fprintf(&b, "scan: %.1f MiB needed, %.1f MiB fetched (%.2fx) in %d requests (%d fallback reads, %.1f KiB)\n",
		mib(s.BytesNeeded), mib(s.BytesFetched), ratio, s.Requests, s.Fallbacks, float64(s.FallbackBytes)/1024)
	fmt.Fprintf(&b, "scan: %v (open %v, first batch %v), %.1f MiB/s; decode %v (%.1f MiB/s per core), decoders waited for bytes %v, consumer waited %v",
		ms(s.Elapsed), ms(s.Open), ms(s.FirstBatch), s.MiBps(), ms(s.Decode), s.DecodeMiBps(), ms(s.FetchWait), ms(s.Wait))
	return b.String()
}

// Report is what --stats prints, a line each: String's, the fetch plan's
// (fetch.Stats.String), and, when link (a modelled link's bytes/s) is
// above zero, the share of the link's capacity the scan used.
func (s Stats) Report(link float64) string {
	var b strings.Builder
	b.WriteString(s.String() + "\n" + s.Fetch.String() + "\n")
	if link > 0 && s.Elapsed > 0 {
		rate := float64(s.BytesFetched) / s.Elapsed.Seconds()
		fmt.Fprintf(&b, "link: %.1f MiB/s of %.1f MiB/s (%.0f%% of the modelled link's capacity)\n",
			rate/(1<<20), link/(1<<20), 100*rate/link)
	}
	return b.String()
}

// Stats returns the scan's figures so far; after the last batch they are final.
func (s *Scanner) Stats() Stats {
	d := s.ds
	fs := s.plan.Stats()
	st := Stats{
		Files:           len(d.files),
		FilesPruned:     d.open.filesPruned,
		RowGroups:       d.open.rowGroups,
		RowGroupsPruned: d.open.rowGroupsPruned,
		Rows:            s.c.rows.Load(),
		RowsDecoded:     s.c.rowsDecoded.Load(),
		Batches:         s.c.batches.Load(),
		BytesNeeded:     d.open.bytesNeeded + d.open.footerNeeded,
		Fallbacks:       s.c.fallbacks.Load(),
		FallbackBytes:   s.c.fallbackBytes.Load(),
		Open:            d.open.elapsed,
		Decode:          time.Duration(s.c.decode.Load()),
		FetchWait:       time.Duration(s.c.fetchWait.Load()),
		Wait:            time.Duration(s.c.consumerWait.Load()),
		Fetch:           fs,
	}
	st.BytesFetched = d.open.footerBytes + fs.BytesFetched + st.FallbackBytes
	st.Requests = 1 + d.open.footerReads + fs.Requests + st.Fallbacks
	s.mu.Lock()
	end, first := s.end, s.first
	s.mu.Unlock()
	if !first.IsZero() {
		st.FirstBatch = d.open.elapsed + first.Sub(s.start)
	}
	if end.IsZero() {
		end = time.Now()
	}
	st.Elapsed = d.open.elapsed + end.Sub(s.start)
	return st
}

// Add adds the figures of another scan to s: counts, bytes and times
// summed, the fetch's as fetch.Stats.Add sums them. Elapsed, Open and FirstBatch
// are summed too, as for scans that ran one after another.
func (s *Stats) Add(o Stats) {
	s.Files += o.Files
	s.FilesPruned += o.FilesPruned
	s.RowGroups += o.RowGroups
	s.RowGroupsPruned += o.RowGroupsPruned
	s.Rows += o.Rows
	s.RowsDecoded += o.RowsDecoded
	s.Batches += o.Batches
	s.BytesNeeded += o.BytesNeeded
	s.BytesFetched += o.BytesFetched
	s.Requests += o.Requests
	s.Fallbacks += o.Fallbacks
	s.FallbackBytes += o.FallbackBytes
	s.Open += o.Open
	s.Elapsed += o.Elapsed
	if s.FirstBatch == 0 {
		s.FirstBatch = o.FirstBatch
	}
	s.Decode += o.Decode
	s.FetchWait += o.FetchWait
	s.Wait += o.Wait
	s.Fetch.Add(o.Fetch)
}
