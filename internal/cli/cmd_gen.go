package cli

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
	gen.Settings // the dataset's sizes, as the flags spell them
	out          string
	quiet        bool
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
	opts.Settings.Bind(f)
	f.StringVarP(&opts.out, "out", "o", "", "where to write: a directory, file:// or s3:// URL (required)")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress")
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
	}
	var o gen.Options
	var to gen.TPCHOptions
	var err error
	if tpch {
		to, err = opts.TPCHOptions()
	} else {
		o, err = opts.Options()
	}
	if err != nil {
		return usagef("gen: %v", err)
	}
	st, prefix, err := globals.openStore(ctx, opts.out, 0)
	if err != nil {
		return err
	}
	defer st.Close()
	prog := progress.New("gen "+dataset, -1, opts.quiet)
	if tpch {
		t0 := time.Now()
		to.Progress = prog.Add
		tables, err := gen.TPCH(ctx, st, prefix, to)
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
			opts.SF, humanBytes(bytes), st.URL(prefix), el.Seconds(), float64(bytes)/(1<<20)/el.Seconds())
		return nil
	}
	generate := gen.Lineitem
	if dataset == "taxi" {
		generate = gen.Taxi
	}
	o.Progress = prog.Add
	res, err := generate(ctx, st, prefix, o)
	prog.Done()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "generated %s: %d rows in %d files, %s at %s, %.1f MiB/s\n",
		dataset, res.Rows, len(res.Files), humanBytes(res.Bytes), st.URL(prefix),
		float64(res.Bytes)/(1<<20)/res.Elapsed.Seconds())
	return nil
}
