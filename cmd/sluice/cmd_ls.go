package main

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
		Use:   "ls URL",
		Short: "List objects and prefixes, one level or all, with sizes and a total",
		Long: `List what is under a URL, as the aws CLI's "s3 ls" does: one level, the
objects there with their modification time, size and name, and each deeper
prefix once as a PRE line; --recursive lists every object below instead.
Names are relative to the level the URL names. A total ends the listing.

The URL names a prefix (s3://bucket/lineitem/ or a directory), a prefix
written without its slash (s3://bucket/lineitem), the start of names at
one level (s3://bucket/lineitem/part-0), one object, or a glob whose
matches are listed as scan reads them ('*' and '?' stay within one path
element). Nothing there is "not found" (exit code 3); an empty bucket or
directory lists nothing and succeeds.`,
		Example: `  sluice ls s3://bucket/
  sluice ls s3://bucket/lineitem/ --human-readable
  sluice ls s3://bucket/ --recursive
  sluice ls 's3://bucket/lineitem/*.parquet'
  sluice ls ./data/lineitem
  sluice ls -l s3://bucket/taxi/ --endpoint http://127.0.0.1:9000`,
		Args: exactArgs(1),
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
