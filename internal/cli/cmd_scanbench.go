package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/bench/scanbench"
	"github.com/sluice-data/sluice/internal/profile"
	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

type scanBenchOptions struct {
	scanbench.Settings // what to measure, as the flags spell it
	cache              string
	memory             string
	resweep            bool
	checksum           bool
	rss                bool
	json               bool
	quiet              bool
	timeout            time.Duration
	cpuProfile         string
}

func newScanBenchCommand() *cobra.Command {
	var opts scanBenchOptions
	cmd := &cobra.Command{
		Use:     "bench-scan [URL]",
		Short:   "Measure scan against raw GETs and arrow-go's own ways of reading Parquet from a store",
		Long:    helpText("bench-scan"),
		Example: helpText("bench-scan.examples"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("%s takes at most one URL, got %d (see --help)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			url := ""
			if len(args) == 1 {
				url = args[0]
			}
			opts.RowsGiven, opts.Link = cmd.Flags().Changed("rows"), globals.profile
			return runScanBench(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts, url)
		},
	}
	f := cmd.Flags()
	opts.Settings.Bind(f)
	f.StringVar(&opts.cache, "cache", filepath.Join(os.TempDir(), "sluice-scanbench"), "directory the generated dataset is kept in")
	f.StringVar(&opts.memory, "memory", "", "scan's memory budget (default: scan's); with --rss, the child's (default: a quarter of the dataset)")
	f.BoolVar(&opts.resweep, "resweep", false, "sweep the concurrencies in every run, not only the first")
	f.BoolVar(&opts.checksum, "checksum", false, "checksum every scan's values (costs decode time)")
	f.BoolVar(&opts.rss, "rss", false, `also measure the peak RSS of "sluice scan --memory" in a child process`)
	f.BoolVar(&opts.json, "json", false, "print the report as JSON")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no line per measurement on stderr")
	f.DurationVar(&opts.timeout, "timeout", 30*time.Minute, "give up after this long")
	f.StringVar(&opts.cpuProfile, "cpuprofile", "", "write a CPU profile of the runs to FILE")
	return cmd
}

func runScanBench(ctx context.Context, out, errOut io.Writer, opts scanBenchOptions, url string) error {
	ctx, cancel := context.WithTimeout(ctx, opts.timeout)
	defer cancel()
	var budget int64
	var err error
	if opts.memory != "" {
		if budget, err = parseMemory(opts.memory); err != nil {
			return err
		}
	}
	cfg, faulty, err := opts.Config()
	if err != nil {
		return usageError{err}
	}
	if url == "" {
		rows, err := opts.DatasetRows()
		if err != nil {
			return usageError{err}
		}
		var log func(string)
		if !opts.quiet {
			log = func(s string) { fmt.Fprintln(errOut, s) }
		}
		if url, err = scanbench.Lineitem(ctx, opts.cache, rows, opts.Files, log); err != nil {
			return err
		}
	}

	base, rest := store.SplitGlob(url)
	open := func(wrap func(store.Driver) store.Driver) (*store.Store, string, error) {
		st, key, err := store.Open(ctx, base, store.Options{
			Endpoint: globals.endpoint, Region: globals.region, Concurrency: maxInFlight, Wrap: wrap, MemBuckets: globals.mem,
		})
		return st, key + rest, err
	}
	st, key, err := open(sim.WrapOption(globals.profile))
	if err != nil {
		return err
	}
	defer st.Close()
	local, _, err := open(nil)
	if err != nil {
		return err
	}
	defer local.Close()
	cfg.Store, cfg.Pattern, cfg.Local = st, key, local
	cfg.Memory, cfg.Resweep, cfg.Checksum = budget, opts.resweep, opts.checksum
	// Every reader decodes into the same kind of reusing pool that sluice
	// scan uses, so the ratios compare how they read.
	cfg.Mem = mempool.New(64 << 20)
	if !opts.quiet {
		cfg.Log = errOut
	}
	if opts.Faults != "" {
		fst, _, err := open(sim.WrapOption(faulty))
		if err != nil {
			return err
		}
		defer fst.Close()
		cfg.Faulty = fst
	}
	if opts.rss {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		// The child opens the dataset as this process did.
		cfg.RSS = &scanbench.RSSChild{Name: self, Output: errOut, Args: func(budget int64) []string {
			return append([]string{"scan", url, "--memory", bench.FormatSize(budget), "-q"}, globals.args()...)
		}}
	}
	b, err := scanbench.New(ctx, cfg)
	if err != nil {
		return err
	}
	stop, err := profile.StartCPU(opts.cpuProfile)
	if err != nil {
		return err
	}
	defer stop()
	doc, err := b.Measure(ctx)
	if err != nil {
		return err
	}
	if opts.json {
		return doc.WriteJSON(out)
	}
	doc.Print(out)
	return nil
}
