package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/internal/retry"
)

func newMbCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "mb s3://BUCKET",
		Short:   "Make an S3 bucket",
		Long:    helpText("mb"),
		Example: helpText("mb.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMb(cmd.Context(), cmd.OutOrStdout(), args[0])
		},
	}
	return cmd
}

func runMb(ctx context.Context, out io.Writer, url string) error {
	if !strings.HasPrefix(url, "s3://") {
		return usagef("mb: %s: only s3:// URLs name buckets (directories and mem:// stores need none)", url)
	}
	st, key, err := globals.openRetried(ctx, url, 0)
	if err != nil {
		return err
	}
	defer st.Close()
	if key != "" {
		return usagef("mb: %s names a key inside a bucket: give the bucket alone, %s", url, st.URL(""))
	}
	if err := (retry.Policy{}).Do(ctx, func() error { return st.MakeBucket(ctx) }); err != nil {
		return err
	}
	fmt.Fprintf(out, "make_bucket: %s\n", strings.TrimSuffix(st.URL(""), "/"))
	return nil
}
