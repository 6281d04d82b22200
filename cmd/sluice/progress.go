package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports bytes moved: a bar on a terminal, a plain line every few
// seconds otherwise (logs and CI), nothing when quiet.
type progress struct {
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	w     io.Writer
	desc  string
	total int64
	n     int64
	start time.Time
	last  time.Time
}

func newProgress(desc string, total int64, quiet bool) *progress {
	p := &progress{desc: desc, total: total, start: time.Now(), last: time.Now()}
	if quiet {
		return p
	}
	if term.IsTerminal(int(os.Stderr.Fd())) {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowBytes(true),
			progressbar.OptionUseIECUnits(true), // MiB/s, as every summary says
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetPredictTime(total > 0),
		)
		return p
	}
	p.w = os.Stderr
	return p
}

// Add is safe for concurrent use.
func (p *progress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += n
	if p.bar != nil {
		_ = p.bar.Add64(n)
		return
	}
	if p.w != nil && time.Since(p.last) >= 2*time.Second {
		p.last = time.Now()
		fmt.Fprintf(p.w, "%s: %s, %.1f MiB/s\n", p.desc, p.amount(), p.rate())
	}
}

func (p *progress) amount() string {
	if p.total > 0 {
		return fmt.Sprintf("%s of %s", humanBytes(p.n), humanBytes(p.total))
	}
	return humanBytes(p.n)
}

func (p *progress) rate() float64 {
	return float64(p.n) / (1 << 20) / max(time.Since(p.start).Seconds(), 1e-9)
}

// Done clears the bar.
func (p *progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
