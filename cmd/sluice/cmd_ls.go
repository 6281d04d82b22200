package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/store"
)

type lsOptions struct {
	long bool
}

func newLsCommand() *cobra.Command {
	var opts lsOptions
	cmd := &cobra.Command{
		Use:   "ls URL",
		Short: "List objects under a prefix with their sizes and a total",
		Long: `List every object whose key starts with the URL's prefix, in key order,
with its size, and a total at the end.`,
		Example: `  sluice ls s3://bucket/lineitem/
  sluice ls ./data/lineitem
  sluice ls -l s3://bucket/taxi/ --endpoint http://127.0.0.1:9000`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLs(cmd.Context(), cmd.OutOrStdout(), opts, args[0])
		},
	}
	cmd.Flags().BoolVarP(&opts.long, "long", "l", false, "also show ETag and modification time")
	return cmd
}

func runLs(ctx context.Context, out io.Writer, opts lsOptions, url string) error {
	st, prefix, err := globals.openStore(ctx, url, 0)
	if err != nil {
		return err
	}
	defer st.Close()
	var n, total int64
	err = st.Walk(ctx, prefix, func(o store.ObjectInfo) error {
		n++
		total += o.Size
		if opts.long {
			fmt.Fprintf(out, "%14d  %s  %s  %s\n", o.Size, o.ModTime.UTC().Format("2006-01-02T15:04:05Z"), o.ETag, st.URL(o.Key))
		} else {
			fmt.Fprintf(out, "%14d  %s\n", o.Size, st.URL(o.Key))
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d objects, %d bytes (%s)\n", n, total, humanBytes(total))
	return nil
}
