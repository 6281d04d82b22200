package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/transfer"
)

type lsOptions struct {
	long          bool
	recursive     bool
	humanReadable bool
}

func newLsCommand() *cobra.Command {
	var opts lsOptions
	cmd := &cobra.Command{
		Use:     "ls URL",
		Short:   "List objects and prefixes, one level or all, with sizes and a total",
		Long:    helpText("ls"),
		Example: helpText("ls.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLs(cmd.Context(), cmd.OutOrStdout(), opts, args[0])
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&opts.long, "long", "l", false, "also show each object's ETag")
	f.BoolVarP(&opts.recursive, "recursive", "r", false, "list every object below the prefix, not one level")
	f.BoolVarP(&opts.humanReadable, "human-readable", "H", false, "sizes in KiB, MiB, GiB...")
	return cmd
}

func runLs(ctx context.Context, out io.Writer, opts lsOptions, url string) error {
	base, rest := store.SplitGlob(url)
	st, key, err := globals.openRetried(ctx, base, 0)
	if err != nil {
		return err
	}
	defer st.Close()
	l, err := transfer.List(ctx, st, key+rest, opts.recursive)
	if err != nil {
		return err
	}
	return transfer.WriteListing(out, l, transfer.ListingOptions{ETags: opts.long, Human: opts.humanReadable})
}
