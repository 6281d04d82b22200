package scanbench

import (
	"context"
	"fmt"
	"io"

	"github.com/sluice-data/sluice/internal/size"
)

// RSSSlack is what a scan's process may hold beyond its memory budget:
// the runtime's own memory and the binary's resident pages.
const RSSSlack = 64 << 20

// RSS is the peak resident memory of a scan with a memory budget, run in
// a child process, against the budget plus RSSSlack.
type RSS struct {
	Budget  int64   `json:"budget"`
	PeakRSS int64   `json:"peak_rss"`
	Limit   int64   `json:"limit"` // budget + RSSSlack
	Seconds float64 `json:"seconds"`
}

// RSSBudget is the budget to measure a scan of datasetBytes at when none
// is given: a quarter of the dataset, in whole MiB, at least 1 MiB, so
// that the budget and not the dataset bounds what it holds.
func RSSBudget(datasetBytes int64) int64 {
	return max(datasetBytes/4>>20<<20, 1<<20)
}

// MeasureRSS runs name with args, a scan given budget, to its end (see
// PeakRSS) and reports its peak resident memory.
func MeasureRSS(ctx context.Context, out io.Writer, budget int64, name string, args ...string) (*RSS, error) {
	peak, d, err := PeakRSS(ctx, out, name, args...)
	if err != nil {
		return nil, err
	}
	return &RSS{Budget: budget, PeakRSS: peak, Limit: budget + RSSSlack, Seconds: d.Seconds()}, nil
}

// Print writes the figure and whether it is within the limit, for a
// dataset of datasetBytes.
func (r *RSS) Print(w io.Writer, datasetBytes int64) {
	verdict := "within"
	if r.PeakRSS > r.Limit {
		verdict = "OVER"
	}
	fmt.Fprintf(w, "peak RSS of sluice scan --memory %s over %.1f MiB: %.1f MiB (%.2fs), %s budget + 64 MiB = %.1f MiB\n",
		size.Format(r.Budget), float64(datasetBytes)/(1<<20), float64(r.PeakRSS)/(1<<20), r.Seconds, verdict, float64(r.Limit)/(1<<20))
}

// lineitemBytesPerRow is what gen writes per lineitem row (snappy).
const lineitemBytesPerRow = 33.3

// LineitemRows is the rows of a generated lineitem dataset (Lineitem) of
// about size bytes, rounded up to a million so that nearby sizes share
// one cached dataset.
func LineitemRows(size int64) int64 {
	return (int64(float64(size)/lineitemBytesPerRow) + 999_999) / 1_000_000 * 1_000_000
}
