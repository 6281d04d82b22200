package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/internal/progress"
)

type genOptions struct {
	rows         int64
	files        int
	seed         uint64
	rowGroupRows int64
	concurrency  int
	out          string
	quiet        bool
	sf           float64
	fileRows     int64
	// set are the flags given on the command line: --rows and --files
	// mean nothing to tpch, --sf nothing to the others.
	set func(name string) bool
}

func newGenCommand() *cobra.Command {
	var opts genOptions
	cmd := &cobra.Command{
		Use:     "gen lineitem|taxi|tpch --out URL",
		Short:   "Generate a deterministic Parquet dataset (TPC-H, its lineitem alone, or taxi trips)",
		Long:    helpText("gen"),
		Example: helpText("gen.examples"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || (args[0] != "lineitem" && args[0] != "taxi" && args[0] != "tpch") {
				return usagef("gen takes one dataset name: lineitem, taxi or tpch")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.set = func(name string) bool { return cmd.Flags().Changed(name) }
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
	f.Float64Var(&opts.sf, "sf", 1, "tpch: scale factor (0.001 or more; fractions allowed)")
	f.Int64Var(&opts.fileRows, "file-rows", 0, "tpch: most rows in a file (default 1048576)")
	return cmd
}

func runGen(ctx context.Context, out io.Writer, opts genOptions, dataset string) error {
	if opts.set == nil {
		opts.set = func(string) bool { return false }
	}
	tpch := dataset == "tpch"
	switch {
	case opts.out == "":
		return usagef("gen: --out is required")
	case tpch && (opts.set("rows") || opts.set("files")):
		return usagef("gen: tpch is sized by --sf, not --rows or --files")
	case !tpch && (opts.set("sf") || opts.set("file-rows")):
		return usagef("gen: --sf and --file-rows apply to tpch only")
	case tpch && (!(opts.sf >= 0.001) || opts.sf > 100_000):
		return usagef("gen: --sf must be a scale factor from 0.001 to 100000, got %g", opts.sf)
	case opts.fileRows < 0:
		return usagef("gen: --file-rows must be 0 (the default) or more, got %d", opts.fileRows)
	case !tpch && opts.rows <= 0:
		return usagef("gen: --rows must be at least 1, got %d", opts.rows)
	case !tpch && opts.files <= 0:
		return usagef("gen: --files must be at least 1, got %d", opts.files)
	case opts.rowGroupRows < 0:
		return usagef("gen: --row-group-rows must be 0 (the default) or more, got %d", opts.rowGroupRows)
	}
	st, prefix, err := globals.openStore(ctx, opts.out, 0)
	if err != nil {
		return err
	}
	defer st.Close()
	prog := progress.New("gen "+dataset, -1, opts.quiet)
	if tpch {
		t0 := time.Now()
		tables, err := gen.TPCH(ctx, st, prefix, gen.TPCHOptions{
			SF: opts.sf, Seed: opts.seed, FileRows: opts.fileRows, RowGroupRows: opts.rowGroupRows,
			Concurrency: opts.concurrency, Progress: prog.Add,
		})
		prog.Done()
		if err != nil {
			return err
		}
		var bytes int64
		for _, t := range tables {
			fmt.Fprintf(out, "  %-9s %11d rows in %3d files, %s\n", t.Table, t.Rows, len(t.Files), humanBytes(t.Bytes))
			bytes += t.Bytes
		}
		el := time.Since(t0)
		fmt.Fprintf(out, "generated tpch sf %g: %s at %s in %.1fs, %.1f MiB/s\n",
			opts.sf, humanBytes(bytes), st.URL(prefix), el.Seconds(), float64(bytes)/(1<<20)/el.Seconds())
		return nil
	}
	generate := gen.Lineitem
	if dataset == "taxi" {
		generate = gen.Taxi
	}
	res, err := generate(ctx, st, prefix, gen.Options{
		Rows: opts.rows, Files: opts.files, Seed: opts.seed,
		RowGroupRows: opts.rowGroupRows, Concurrency: opts.concurrency,
		Progress: prog.Add,
	})
	prog.Done()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "generated %s: %d rows in %d files, %s at %s, %.1f MiB/s\n",
		dataset, res.Rows, len(res.Files), humanBytes(res.Bytes), st.URL(prefix),
		float64(res.Bytes)/(1<<20)/res.Elapsed.Seconds())
	return nil
}
