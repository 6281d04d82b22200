package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/internal/progress"
	"github.com/sluice-data/sluice/internal/size"
	"github.com/sluice-data/sluice/internal/stdio"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

func newScanCommand() *cobra.Command {
	var opts scanFlags
	cmd := &cobra.Command{
		Use:     "scan URL",
		Short:   "Read a Parquet dataset into Arrow: count it, or write it as Arrow IPC or Parquet",
		Long:    helpText("scan"),
		Example: helpText("scan.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runScan(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts, args[0])
		},
	}
	opts.register(cmd.Flags()) // the same flags as run's scan stage
	return cmd
}

func runScan(ctx context.Context, out, errOut io.Writer, opts scanFlags, url string) error {
	profile, err := opts.parse(url)
	if err != nil {
		return err
	}
	spareProc([]string{url}, profile)
	wopts, err := parquetOptions(&opts.write, "")
	if err != nil {
		return err
	}
	var asOf time.Time
	if opts.scan.AsOf != "" {
		asOf, _ = opts.scan.AsOfTime() // checked by parse
	}
	if opts.output == "-" {
		if stdio.IsTerminal(out) {
			return usagef("-o -: stdout is a terminal and the batches are binary Arrow IPC: pipe them on (| sluice show) or write a file (-o q.arrow)")
		}
		// A stage after this one may stop reading early (head): that is
		// an EPIPE to end quietly on, as stages do, not a fatal signal.
		stdio.QuietPipes(nil, out)
	}
	stores := newStoreSet()
	defer stores.Close()
	// Parquet is read through the link model with one SDK attempt (scan
	// retries above the store); objects read whole through --sim's model
	// or the global flags'.
	open, whole := withLink(stores, opts.scan.Sim, profile), stores.Open
	if opts.scan.Sim != "" {
		whole = open
	}
	// The bar's total is known once the footers are read; the scan
	// reports each row group's bytes as it is decoded.
	var prog *progress.Bytes
	res, err := exec.ScanTo(ctx, url, exec.ScanToOptions{
		Columns:     opts.scan.Columns,
		Filter:      opts.scan.Filter,
		BatchRows:   opts.scan.BatchRows,
		Concurrency: opts.scan.Concurrency,
		Dict:        opts.scan.Dict,
		Int96Unit:   opts.scan.Int96Unit,
		Snapshot:    opts.scan.Snapshot,
		Catalog:     opts.scan.Catalog,
		AsOf:        asOf,
		Memory:      opts.scan.Memory,
		Arrival:     opts.scan.Arrival,
		Output:      opts.output,
		Format:      opts.format,
		Write:       wopts,
		Stdout:      out,
		HandOff:     handOff(),
		Open:        open,
		OpenWhole:   whole,
		// An object is written through the latency and bandwidth of the
		// scan's link model, so that --sim shapes an upload as it does the
		// reads. Not through its faults: the scan retries its reads, and
		// nothing above the store retries an output's requests.
		OpenOutput: stores.With("output", func(ctx context.Context, url string) (*store.Store, string, error) {
			so := globals.storeOptions(maxInFlight, 0)
			so.Wrap = sim.WrapOption(profile.Paced())
			return store.Open(ctx, url, so)
		}),
		Raised: func(need int64) {
			given := size.Format(opts.scan.Memory)
			if opts.scan.Memory == 0 {
				given = "512MiB (the default)"
			}
			fmt.Fprintf(errOut, "sluice: warning: --memory %s is less than reading one row group of this dataset takes; using %.0f MiB\n",
				given, float64(need)/(1<<20))
		},
		BoundHeap: boundHeap,
		Started:   func(total int64) { prog = progress.New("scan", total, opts.quiet) },
		Progress:  func(n int64) { prog.Add(n) },
		Done:      func() { prog.Done() },
	})
	if err != nil {
		if opts.output == "-" && errors.Is(err, syscall.EPIPE) {
			return nil // the reader had all it wanted
		}
		// A store's broken connection is an error, not a reader that
		// stopped: only stdout's EPIPE ends quietly.
		if errors.Is(err, exec.ErrInvalid) {
			return stageError(err)
		}
		return err
	}
	if opts.scan.Stats {
		if res.Whole {
			fmt.Fprintf(errOut, "scan: %d rows in %d batches, read whole (not Parquet: no row groups to skip)\n", res.Rows, res.Batches)
		} else {
			fmt.Fprint(errOut, res.Stats.Report(profile.Link))
		}
	}
	if opts.output == "" {
		fmt.Fprintf(out, "%d rows\n", res.Rows)
	}
	return nil
}
