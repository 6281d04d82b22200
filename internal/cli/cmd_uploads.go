package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/transfer"
)

type uploadsOptions struct {
	abort     bool
	dryrun    bool
	olderThan time.Duration
	quiet     bool
}

func newUploadsCommand() *cobra.Command {
	var opts uploadsOptions
	cmd := &cobra.Command{
		Use:     "uploads s3://BUCKET[/PREFIX]",
		Short:   "List, or abort, unfinished multipart uploads under a prefix",
		Long:    helpText("uploads"),
		Example: helpText("uploads.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUploads(cmd.Context(), cmd.OutOrStdout(), opts, args[0])
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.abort, "abort", false, "abort every upload listed")
	f.BoolVar(&opts.dryrun, "dryrun", false, "with --abort: print what would be aborted, abort nothing")
	f.DurationVar(&opts.olderThan, "older-than", 0, "only uploads started at least this long ago (e.g. 24h)")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "print nothing but errors")
	return cmd
}

func runUploads(ctx context.Context, out io.Writer, opts uploadsOptions, url string) error {
	switch {
	case opts.dryrun && !opts.abort:
		return usagef("uploads: --dryrun goes with --abort (listing aborts nothing)")
	case opts.olderThan < 0:
		return usagef("uploads: --older-than must not be negative, got %s", opts.olderThan)
	case store.IsGlob(url):
		return usagef("uploads: %s: globs are not taken (name a prefix)", url)
	}
	st, prefix, err := globals.openRetried(ctx, url, transfer.DefaultRemoveWorkers)
	if err != nil {
		return err
	}
	defer st.Close()
	var before time.Time
	if opts.olderThan > 0 {
		before = time.Now().Add(-opts.olderThan)
	}
	ups, err := transfer.Uploads(ctx, st, prefix, before)
	if err != nil {
		return err
	}
	say := func(format string, a ...any) {
		if !opts.quiet {
			fmt.Fprintf(out, format, a...)
		}
	}
	for _, u := range ups {
		switch {
		case !opts.abort:
			say("%s  %s  %s\n", u.Initiated.UTC().Format(time.RFC3339), st.URL(u.Key), u.ID)
		case opts.dryrun:
			say("(dryrun) abort: %s (%s)\n", st.URL(u.Key), u.ID)
		default:
			if err := transfer.AbortUpload(ctx, st, u); err != nil {
				return err
			}
			say("abort: %s (%s)\n", st.URL(u.Key), u.ID)
		}
	}
	return nil
}
