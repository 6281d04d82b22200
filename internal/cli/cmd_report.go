package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/fanout/report"
	"github.com/sluice-data/sluice/internal/atomicfile"
)

func newReportCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:     "report EVENTS -o FILE.html|FILE.png",
		Short:   "Draw a fanned-out job's event log: a timeline per worker, retries, stragglers, throughput",
		Long:    helpText("report"),
		Example: helpText("report.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(args[0], out)
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "where to write: FILE.html (a page) or FILE.png (the figure)")
	return cmd
}

func runReport(events, out string) error {
	if prog.Report == nil {
		return errors.New("report: this program draws no reports (sluice-full does)")
	}
	write, err := prog.Report(out)
	if err != nil {
		return usagef("report: %v", err)
	}
	f, err := os.Open(events)
	if err != nil {
		return err
	}
	defer f.Close()
	rep, err := report.Read(f)
	if err != nil {
		return fmt.Errorf("%s: %w", events, err)
	}
	return atomicfile.Write(out, func(w io.Writer) error { return write(w, rep) })
}
