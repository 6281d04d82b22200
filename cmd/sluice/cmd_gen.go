package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/store"
)

type genOptions struct {
	rows         int64
	files        int
	seed         uint64
	rowGroupRows int64
	concurrency  int
	out          string
	quiet        bool
}

func newGenCommand() *cobra.Command {
	var opts genOptions
	cmd := &cobra.Command{
		Use:   "gen lineitem|taxi --out URL",
		Short: "Generate a deterministic Parquet dataset (TPC-H lineitem or taxi trips)",
		Long: `Generate a snappy Parquet dataset into a store: --files files named
part-00000.parquet, ... under --out, several row groups each.

  lineitem  the 16 TPC-H lineitem columns with TPC-H value distributions
  taxi      taxi trips: pickup/dropoff times, pickup_date, passengers,
            distance, fare, tip, tolls, total, payment type, locations

The same arguments and --seed give byte-identical files. Each file becomes
visible only once it is complete; a failed or interrupted run leaves none
of its unfinished files behind.`,
		Example: `  sluice gen lineitem --rows 6000000 --files 8 --out ./data/lineitem
  sluice gen taxi --rows 1000000 --files 4 --out s3://bucket/taxi/ --seed 7`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || (args[0] != "lineitem" && args[0] != "taxi") {
				return usagef("gen takes one dataset name: lineitem or taxi")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGen(cmd.Context(), cmd.OutOrStdout(), opts, args[0])
		},
	}
	f := cmd.Flags()
	f.Int64Var(&opts.rows, "rows", 1_000_000, "total rows")
	f.IntVar(&opts.files, "files", 4, "number of files")
	f.Uint64Var(&opts.seed, "seed", 1, "random seed")
	f.Int64Var(&opts.rowGroupRows, "row-group-rows", 0, "rows per row group (default: at least 4 row groups per file)")
	f.IntVar(&opts.concurrency, "concurrency", 0, "files generated at once (default: number of CPUs)")
	f.StringVarP(&opts.out, "out", "o", "", "where to write: a directory, file:// or s3:// URL (required)")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress")
	return cmd
}

func runGen(ctx context.Context, out io.Writer, opts genOptions, dataset string) error {
	if opts.out == "" {
		return usagef("gen: --out is required")
	}
	switch {
	case opts.rows <= 0:
		return usagef("gen: --rows must be at least 1, got %d", opts.rows)
	case opts.files <= 0:
		return usagef("gen: --files must be at least 1, got %d", opts.files)
	case opts.rowGroupRows < 0:
		return usagef("gen: --row-group-rows must be 0 (the default) or more, got %d", opts.rowGroupRows)
	}
	st, prefix, err := globals.openStore(ctx, opts.out, 0)
	if err != nil {
		return err
	}
	defer st.Close()
	prog := newProgress("gen "+dataset, -1, opts.quiet)
	o := gen.Options{
		Rows: opts.rows, Files: opts.files, Seed: opts.seed,
		RowGroupRows: opts.rowGroupRows, Concurrency: opts.concurrency,
		Progress: prog.Add,
	}
	res, err := genDataset(ctx, dataset, st, prefix, o)
	prog.Done()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "generated %s: %d rows in %d files, %s at %s, %.1f MiB/s\n",
		dataset, res.Rows, len(res.Files), humanBytes(res.Bytes), st.URL(prefix),
		float64(res.Bytes)/(1<<20)/res.Elapsed.Seconds())
	return nil
}

func genDataset(ctx context.Context, dataset string, st *store.Store, prefix string, o gen.Options) (gen.Result, error) {
	if dataset == "taxi" {
		return gen.Taxi(ctx, st, prefix, o)
	}
	return gen.Lineitem(ctx, st, prefix, o)
}
