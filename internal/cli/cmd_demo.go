package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/internal/demo"
)

type demoOptions struct {
	rows  int64
	files int
	runs  int
	keep  bool
	quiet bool
}

func newDemoCommand() *cobra.Command {
	var opts demoOptions
	cmd := &cobra.Command{
		Use:     "demo",
		Short:   "Run sluice end to end on an embedded S3 endpoint, with no setup",
		Long:    helpText("demo"),
		Example: helpText("demo.examples"),
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), opts)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&opts.rows, "rows", 1_000_000, "lineitem rows to generate")
	f.IntVar(&opts.files, "files", 4, "files to generate")
	f.IntVar(&opts.runs, "runs", 3, "times each reader reads the dataset (the median is shown)")
	f.BoolVar(&opts.keep, "keep", false, "keep the temporary directory and print where it is")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress lines while it works")
	return cmd
}

func runDemo(ctx context.Context, out io.Writer, opts demoOptions) error {
	if opts.rows <= 0 || opts.files <= 0 || opts.runs <= 0 {
		return usagef("--rows, --files and --runs: want at least 1")
	}
	return demo.Run(ctx, out, demo.Options{
		Rows: opts.rows, Files: opts.files, Runs: opts.runs, Keep: opts.keep, Quiet: opts.quiet,
		Concurrency: maxInFlight,
	})
}
