// Package progress draws what a command of sluice is doing on stderr: a
// bar of bytes moved, or a bar a phase of a fanned-out job. It is the
// CLI's, not a library's: nothing here is part of the results.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/sluice-data/sluice/internal/size"
)

// Bytes reports bytes (or rows) moved: a bar on a terminal, a plain line
// every few seconds otherwise (logs and CI), nothing when quiet.
type Bytes struct {
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	w     io.Writer
	desc  string
	rows  bool // counts rows, not bytes
	total int64
	n     int64
	start time.Time
	last  time.Time
}

// New starts a report of total bytes (negative: unknown) on stderr.
func New(desc string, total int64, quiet bool) *Bytes {
	return start(desc, total, false, quiet)
}

// NewRows starts a report of total rows (negative: unknown) on stderr.
func NewRows(desc string, total int64, quiet bool) *Bytes {
	return start(desc, total, true, quiet)
}

func start(desc string, total int64, rows, quiet bool) *Bytes {
	p := &Bytes{desc: desc, rows: rows, total: total, start: time.Now(), last: time.Now()}
	if quiet {
		return p
	}
	if term.IsTerminal(int(os.Stderr.Fd())) {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetPredictTime(total > 0),
		}
		if rows {
			opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("rows"))
		} else {
			opts = append(opts, progressbar.OptionShowBytes(true),
				progressbar.OptionUseIECUnits(true)) // MiB/s, as every summary says
		}
		p.bar = progressbar.NewOptions64(total, opts...)
		return p
	}
	p.w = os.Stderr
	return p
}

// Add counts n more bytes; it is safe for concurrent use.
func (p *Bytes) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += n
	if p.bar != nil {
		_ = p.bar.Add64(n)
		return
	}
	if p.w != nil && time.Since(p.last) >= 2*time.Second {
		p.last = time.Now()
		fmt.Fprintf(p.w, "%s: %s\n", p.desc, p.line())
	}
}

// line is the plain report: so much (of so much), at a rate.
func (p *Bytes) line() string {
	secs := max(time.Since(p.start).Seconds(), 1e-9)
	if p.rows {
		if p.total > 0 {
			return fmt.Sprintf("%d of %d rows, %.0f rows/s", p.n, p.total, float64(p.n)/secs)
		}
		return fmt.Sprintf("%d rows, %.0f rows/s", p.n, float64(p.n)/secs)
	}
	amount := size.IEC(p.n)
	if p.total > 0 {
		amount = fmt.Sprintf("%s of %s", size.IEC(p.n), size.IEC(p.total))
	}
	return fmt.Sprintf("%s, %.1f MiB/s", amount, float64(p.n)/(1<<20)/secs)
}

// Done clears the bar.
func (p *Bytes) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
