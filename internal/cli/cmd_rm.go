package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/transfer"
)

type rmOptions struct {
	recursive bool
	dryrun    bool
	quiet     bool
}

func newRmCommand() *cobra.Command {
	var opts rmOptions
	cmd := &cobra.Command{
		Use:     "rm URL",
		Short:   "Delete an object, or every object under a prefix",
		Long:    helpText("rm"),
		Example: helpText("rm.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRm(cmd.Context(), cmd.OutOrStdout(), opts, args[0])
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&opts.recursive, "recursive", "r", false, "delete every object under the prefix")
	f.BoolVar(&opts.dryrun, "dryrun", false, "print what would be deleted, delete nothing")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "print nothing but errors")
	return cmd
}

func runRm(ctx context.Context, out io.Writer, opts rmOptions, url string) error {
	if store.IsGlob(url) {
		return usagef("rm: %s: globs are not taken (list them with ls, or name a prefix with --recursive)", url)
	}
	st, key, err := globals.openRetried(ctx, url, transfer.DefaultRemoveWorkers)
	if err != nil {
		return err
	}
	defer st.Close()
	ro := transfer.RemoveOptions{Recursive: opts.recursive, DryRun: opts.dryrun}
	if !opts.quiet {
		verb := "delete"
		if opts.dryrun {
			verb = "(dryrun) delete"
		}
		ro.Removed = func(url string) { fmt.Fprintf(out, "%s: %s\n", verb, url) }
	}
	err = transfer.Remove(ctx, st, key, ro)
	if errors.Is(err, transfer.ErrPrefix) {
		return usagef("rm: %s is a prefix: add --recursive to delete everything under it", url)
	}
	return err
}
