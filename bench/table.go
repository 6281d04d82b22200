package bench

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Columns chooses the columns of a sweep's table.
type Columns int

const (
	// Narrow, the default, fits within 100 columns: steady and whole
	// MiB/s, the median request's MiB/s, first- and last-byte p50 and p99,
	// errors and retries.
	Narrow Columns = iota
	// Wide adds objects a second, the requests' MiB/s p10 and p90, and the
	// latencies' p90 and max: some 120 columns.
	Wide
)

// WriteTable prints one row per summary, the figures cols chooses: a
// sweep's table.
func WriteTable(w io.Writer, sums []Summary, cols Columns) error {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	// Two header lines, units above and percentiles below, keep the
	// columns as narrow as their figures.
	if cols == Wide {
		fmt.Fprintln(tw, "\t\t\t\tMiB/s\t\t\treq MiB/s\tfirst byte ms\tlast byte ms\t\t\t")
		fmt.Fprintln(tw, "op\tsize\tconc\tobjs\tsteady\twhole\tobj/s\tp10/p50/p90\tp50/p90/p99/max\tp50/p90/p99/max\terrors\tretries\t")
	} else {
		fmt.Fprintln(tw, "\t\t\t\tMiB/s\t\treq MiB/s\tfirst byte\tlast byte\t\t\t")
		fmt.Fprintln(tw, "op\tsize\tconc\tobjs\tsteady\twhole\tp50\tms p50/p99\tms p50/p99\terrors\tretries\t")
	}
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.1f\t", s.Kind, sizeLabel(s), s.Concurrency, s.Objects, s.SteadyMiBps, s.WholeMiBps)
		if cols == Wide {
			fmt.Fprintf(tw, "%.1f\t%s\t%s\t%s\t", s.SteadyObjps,
				joinDist(s.RequestMiBps, "%.1f", s.RequestMiBps.P10, s.RequestMiBps.P50, s.RequestMiBps.P90),
				joinDist(s.FirstByteMs, "%s", s.FirstByteMs.P50, s.FirstByteMs.P90, s.FirstByteMs.P99, s.FirstByteMs.Max),
				joinDist(s.LastByteMs, "%s", s.LastByteMs.P50, s.LastByteMs.P90, s.LastByteMs.P99, s.LastByteMs.Max))
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t",
				joinDist(s.RequestMiBps, "%.1f", s.RequestMiBps.P50),
				joinDist(s.FirstByteMs, "%s", s.FirstByteMs.P50, s.FirstByteMs.P99),
				joinDist(s.LastByteMs, "%s", s.LastByteMs.P50, s.LastByteMs.P99))
		}
		fmt.Fprintf(tw, "%d\t%d\t\n", s.Errors, s.Retries)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeTrimmed(w, b.Bytes())
}

// writeTrimmed writes a tabwriter's lines without the padding of their
// empty trailing cells, and without the margin of blanks they all begin
// with (right-aligned cells are padded on their left).
func writeTrimmed(w io.Writer, p []byte) error {
	var lines [][]byte
	margin := -1
	for line := range bytes.Lines(p) {
		line = bytes.TrimRight(line, " \n")
		lines = append(lines, line)
		if n := len(line) - len(bytes.TrimLeft(line, " ")); len(line) > 0 && (margin < 0 || n < margin) {
			margin = n
		}
	}
	var b bytes.Buffer
	for _, line := range lines {
		if len(line) > 0 {
			b.Write(line[margin:])
		}
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}

func sizeLabel(s Summary) string {
	l := humanSize(s.ObjectSize)
	if s.RangeSize > 0 {
		l += " in " + humanSize(s.RangeSize)
	}
	return l
}

func joinDist(d Dist, format string, v ...float64) string {
	if d.N == 0 {
		return "-"
	}
	parts := make([]string, len(v))
	for i, x := range v {
		if format == "%s" {
			parts[i] = ms(x)
		} else {
			parts[i] = fmt.Sprintf(format, x)
		}
	}
	return strings.Join(parts, "/")
}

// ms prints milliseconds with the precision that matters at their scale.
func ms(x float64) string {
	if x < 10 {
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.0f", x)
}

// WriteSummary prints one phase in full: both throughput figures with the
// window they cover, and every percentile.
func WriteSummary(w io.Writer, s Summary) error {
	what := fmt.Sprintf("%d objects of %s", s.Objects, humanSize(s.ObjectSize))
	if s.RangeSize > 0 {
		what += fmt.Sprintf(" in %s ranges", humanSize(s.RangeSize))
	}
	window := "no steady window (workers never all busy): whole phase"
	if !s.WindowIsPhase {
		window = fmt.Sprintf("window %.3fs-%.3fs, %.0f%% of the phase", s.Window.Start.Seconds(), s.Window.End.Seconds(),
			100*s.Window.Len().Seconds()/max(s.Wall, 1e-9))
	}
	d := func(x Dist, unit string, f func(float64) string) string {
		if x.N == 0 {
			return "-"
		}
		return fmt.Sprintf("%-6s min %s  p10 %s  p50 %s  p90 %s  p99 %s  max %s", unit,
			f(x.Min), f(x.P10), f(x.P50), f(x.P90), f(x.P99), f(x.Max))
	}
	mibs := func(x float64) string { return fmt.Sprintf("%.1f", x) }
	_, err := fmt.Fprintf(w, `%s: %s, concurrency %d
  steady state  %8.1f MiB/s  %7.1f objects/s  (%s)
  whole phase   %8.1f MiB/s  %7.1f objects/s  (%s in %.3fs)
  per request   %s
  first byte    %s
  last byte     %s
  errors %d, retries %d
`, s.Kind, what, s.Concurrency,
		s.SteadyMiBps, s.SteadyObjps, window,
		s.WholeMiBps, s.WholeObjps, humanSize(s.Bytes), s.Wall,
		d(s.RequestMiBps, "MiB/s", mibs), d(s.FirstByteMs, "ms", ms), d(s.LastByteMs, "ms", ms),
		s.Errors, s.Retries)
	return err
}

// WriteReport prints a run: each phase in full when there is one cell,
// the table with cols when there are more, then what the auto search
// found and how fast the object bytes were made.
func WriteReport(w io.Writer, res Result, cols Columns) error {
	cells := map[int]bool{}
	for _, s := range res.Summaries {
		cells[s.Cell] = true
	}
	if len(cells) == 1 {
		for _, s := range res.Summaries {
			if err := WriteSummary(w, s); err != nil {
				return err
			}
		}
	} else if err := WriteTable(w, res.Summaries, cols); err != nil {
		return err
	}
	for _, a := range res.Auto {
		if a.Saturated {
			fmt.Fprintf(w, "auto: %s of %s saturate at concurrency %d: %.1f MiB/s (doubling it gained less than 5%%)\n",
				a.Kind, humanSize(a.ObjectSize), a.Concurrency, a.SteadyMiBps)
		} else {
			fmt.Fprintf(w, "auto: %s of %s still gaining at the limit, concurrency %d: %.1f MiB/s\n",
				a.Kind, humanSize(a.ObjectSize), a.Concurrency, a.SteadyMiBps)
		}
	}
	if res.GeneratorMiBps > 0 {
		fmt.Fprintf(w, "object generator: %.0f MiB/s on one core\n", res.GeneratorMiBps)
	}
	return nil
}
