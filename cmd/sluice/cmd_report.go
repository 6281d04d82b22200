package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
	var write func(io.Writer, *report.Report) error
	switch strings.ToLower(filepath.Ext(out)) {
	case ".html", ".htm":
		write = report.WriteHTML
	case ".png":
		write = report.WritePNG
	case "":
		if out == "" {
			return usagef("report: -o FILE.html or FILE.png is required")
		}
		fallthrough
	default:
		return usagef("report: -o %q: want a .html or .png file", out)
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
