package progress

import (
	"fmt"
	"os"

	"golang.org/x/term"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/internal/size"
)

// Bench is a bench.Observer: a report a phase, and on a plain stderr a
// line with each phase's figures as it ends.
type Bench struct {
	Quiet bool
	p     *Bytes
}

// PhaseStart starts the phase's report.
func (b *Bench) PhaseStart(info bench.PhaseInfo) {
	desc := fmt.Sprintf("%s %s x%d c=%d", info.Kind, size.IEC(info.ObjectSize), info.Objects, info.Concurrency)
	b.p = New(desc, info.Bytes, b.Quiet)
}

// Add counts bytes the store took.
func (b *Bench) Add(n int64) { b.p.Add(n) }

// PhaseEnd ends the phase's report.
func (b *Bench) PhaseEnd(s bench.Summary, err error) {
	b.p.Done()
	// A failed phase says nothing here: its error is the one line printed.
	if err == nil && !b.Quiet && !term.IsTerminal(int(os.Stderr.Fd())) {
		fmt.Fprintf(os.Stderr, "%s: %.1f MiB/s steady, %.1f MiB/s whole phase, %d errors\n", b.p.desc, s.SteadyMiBps, s.WholeMiBps, s.Errors)
	}
}
