package main

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
		Use:   "demo",
		Short: "Run sluice end to end on an embedded S3 endpoint, with no setup",
		Long: `Show what sluice is for, with no setup and no credentials: start an S3
endpoint inside this process over a temporary directory, write a TPC-H
lineitem dataset to it as Parquet, then read all of it into Arrow twice
through the same modelled link (--sim s3, as from a cloud machine next to
S3): with arrow-go's plain Parquet reader, and with sluice. It ends with how
many times faster sluice was (the median of --runs runs of each, taken in
turn). Everything is removed at the end unless --keep.`,
		Example: `  sluice demo
  sluice demo --rows 4000000 --files 8 --keep`,
		Args: exactArgs(0),
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
