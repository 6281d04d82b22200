package cli

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/sluice-data/sluice/internal/buildinfo"
	"github.com/sluice-data/sluice/internal/size"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

// globalOptions are the flags every command that touches a store accepts.
type globalOptions struct {
	endpoint string
	region   string
	sim      string
	profile  sim.Profile
	// mem are this process's mem:// buckets: one command's stores share
	// them, and they end with the process.
	mem *store.MemBuckets
}

var globals = globalOptions{mem: store.NewMemBuckets()}

// args are the global flags as given, for a child process of this binary
// (a worker) to open stores the same way.
func (g *globalOptions) args() []string {
	var a []string
	for _, f := range []struct{ name, v string }{{"--endpoint", g.endpoint}, {"--region", g.region}, {"--sim", g.sim}} {
		if f.v != "" {
			a = append(a, f.name, f.v)
		}
	}
	return a
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "sluice",
		Short:         "Move columnar data between object storage and Apache Arrow at network speed",
		Long:          helpText("sluice"),
		Example:       helpText("sluice.examples"),
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Version(),
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			p, err := sim.Parse(globals.sim)
			if err != nil {
				return usageError{err}
			}
			globals.profile = p
			return nil
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// Flag descriptions wrap to the terminal (cobra prints each on one
	// line, some 300 characters long).
	cobra.AddTemplateFunc("wrappedFlags", func(fs *pflag.FlagSet) string { return fs.FlagUsagesWrapped(helpWidth()) })
	root.SetUsageTemplate(strings.NewReplacer(
		".LocalFlags.FlagUsages", "wrappedFlags .LocalFlags",
		".InheritedFlags.FlagUsages", "wrappedFlags .InheritedFlags").Replace(root.UsageTemplate()))
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	f := root.PersistentFlags()
	f.StringVar(&globals.endpoint, "endpoint", "", "S3 endpoint URL (default: AWS_ENDPOINT_URL, else AWS)")
	f.StringVar(&globals.region, "region", "", "S3 region (default: AWS_REGION or shared config, else us-east-1)")
	f.StringVar(&globals.sim, "sim", "", "model a remote link: s3, or ttfb=15ms,... (sluice help sim)")

	root.AddCommand(
		newLsCommand(),
		newRmCommand(),
		newUploadsCommand(),
		newMbCommand(),
		newVersionCommand(),
		newGenCommand(),
		newServerCommand(),
		newDemoCommand(),
		newBenchCommand(),
		newCatCommand(),
		newCpCommand(),
		newServeCommand(),
		newGetCommand(),
		newScanCommand(),
		newScanBenchCommand(),
		newRunCommand(),
		newReportCommand(),
		newJobsCommand(),
		newWorkerCommand(),
	)
	root.AddCommand(stageCommands(root)...)
	root.AddCommand(helpTopics()...)
	return root
}

// openStore opens a URL with the global flags applied, the link model included.
func (g *globalOptions) openStore(ctx context.Context, url string, concurrency int) (*store.Store, string, error) {
	return g.open(ctx, url, g.storeOptions(concurrency, 0))
}

// open opens url with opts through the link model of --sim (sim.Open),
// or, when opts.Wrap is nil, without it (bookkeeping that is not what a
// benchmark measures).
func (g *globalOptions) open(ctx context.Context, url string, opts store.Options) (*store.Store, string, error) {
	if opts.Wrap == nil {
		return store.Open(ctx, url, opts)
	}
	return sim.Open(ctx, url, opts, g.profile)
}

// openRetried opens a URL for a command whose every request is retried
// above the store (by fetch, scan or internal/retry): the S3 SDK then
// makes one attempt per request, so that retries do not multiply.
func (g *globalOptions) openRetried(ctx context.Context, url string, concurrency int) (*store.Store, string, error) {
	return g.open(ctx, url, g.storeOptions(concurrency, 1))
}

func (g *globalOptions) storeOptions(concurrency, attempts int) store.Options {
	return store.Options{
		Endpoint:    g.endpoint,
		Region:      g.region,
		Concurrency: concurrency,
		Attempts:    attempts,
		Wrap:        sim.WrapOption(g.profile),
		MemBuckets:  g.mem,
	}
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %d argument(s), got %d (see --help)", cmd.CommandPath(), n, len(args))
		}
		return nil
	}
}

// helpWidth is the width help wraps to: the terminal's, within 60-120
// columns; 100 when stdout is not a terminal.
func helpWidth() int {
	w, _, err := term.GetSize(int(os.Stdout.Fd()))
	if err != nil {
		return 100
	}
	return min(max(w, 60), 120)
}

// fill wraps text at spaces into lines of at most width characters.
func fill(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		if i > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// humanBytes is how every summary prints a byte count (1.5 MiB).
func humanBytes(n int64) string { return size.IEC(n) }
