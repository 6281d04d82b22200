package progress

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/internal/size"
)

// Job draws a fanned-out job's progress on a terminal: one bar
// a phase, refreshed in place, of its tasks done out of all, with those
// running, the failed attempts, what the committed attempts read and
// wrote, the rate and the time left. Each phase's bar stays as a line of
// its own once the phase is over.
type Job struct {
	w     io.Writer
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	start time.Time
	last  fanout.Progress
}

// NewJob draws on w.
func NewJob(w io.Writer) *Job { return &Job{w: w} }

// Update is fanout.Options.Progress.
func (p *Job) Update(pr fanout.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr == p.last {
		return
	}
	if p.bar == nil || pr.Index != p.last.Index {
		p.finish()
		p.start = time.Now()
		p.bar = progressbar.NewOptions(pr.Tasks,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetWidth(20),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
		)
	}
	p.last = pr
	p.bar.Describe(p.describe(pr))
	_ = p.bar.Set(pr.Done)
}

// describe is the words before the bar.
func (p *Job) describe(pr fanout.Progress) string {
	s := fmt.Sprintf("phase %d (%s): %d running, %d failed attempts", pr.Index, pr.Phase, pr.Running, pr.Failed)
	if pr.BytesIn > 0 || pr.BytesOut > 0 {
		secs := max(time.Since(p.start).Seconds(), 1e-3)
		s += fmt.Sprintf(", %d rows, %s in (%.1f MiB/s), %s out", pr.RowsIn, size.IEC(pr.BytesIn), float64(pr.BytesIn)/(1<<20)/secs, size.IEC(pr.BytesOut))
	}
	return s
}

// finish ends the running phase's bar, leaving its last state.
func (p *Job) finish() {
	if p.bar != nil && !p.bar.IsFinished() {
		_ = p.bar.Exit()
		fmt.Fprintln(p.w)
	}
	p.bar = nil
}

// Close ends the display.
func (p *Job) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finish()
}
