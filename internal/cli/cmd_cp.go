package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/fetch"
	"github.com/sluice-data/sluice/internal/progress"
	"github.com/sluice-data/sluice/internal/spell"
	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/transfer"
)

type cpOptions struct {
	memory string
	stats  bool
	quiet  bool
}

func newCpCommand() *cobra.Command {
	var opts cpOptions
	cmd := &cobra.Command{
		Use:     "cp SRC DST",
		Short:   "Copy an object, or every object under a prefix, into another store",
		Long:    helpText("cp"),
		Example: helpText("cp.examples"),
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCp(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts, args[0], args[1])
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.memory, "memory", "256MiB", "most bytes held between reading and writing")
	f.BoolVar(&opts.stats, "stats", false, "print fetch statistics to stderr at the end")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress")
	return cmd
}

func runCp(ctx context.Context, out, errOut io.Writer, opts cpOptions, srcURL, dstURL string) error {
	memory, err := parseMemory(opts.memory)
	if err != nil {
		return err
	}
	stores := newRetriedStoreSet()
	defer stores.Close()
	src, err := transfer.Resolve(ctx, stores.Open, srcURL)
	if err != nil {
		return err
	}
	dst, dstKey, err := stores.Open(ctx, dstURL)
	if err != nil {
		return err
	}
	jobs := transfer.Jobs(src.Objects, dstKey, strings.HasSuffix(dstURL, "/"))
	var total int64
	for _, j := range jobs {
		total += j.Src.Size
	}

	start := time.Now()
	prog := progress.New("cp", total, opts.quiet)
	stats, err := transfer.Copy(ctx, src.Store, dst, jobs, transfer.Options{
		Fetch:    fetch.Options{Memory: memory, Mem: mempool.NewMapped(memory)},
		Progress: prog.Add,
	})
	prog.Done()
	if opts.stats {
		fmt.Fprintln(errOut, stats.String())
	}
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	fmt.Fprintf(out, "copied %s, %s in %.1fs (%.1f MiB/s) to %s\n",
		spell.Count(len(jobs), "object"), humanBytes(total), secs, float64(total)/(1<<20)/max(secs, 1e-9), dst.URL(dstKey))
	return nil
}
