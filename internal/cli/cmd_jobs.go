package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/fanout"
)

func newJobsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "jobs ls|rm|gc",
		Short:   "List and remove the fanned-out jobs left in a store",
		Long:    helpText("jobs"),
		Example: helpText("jobs.examples"),
	}
	var olderThan time.Duration
	ls := &cobra.Command{
		Use:   "ls STORE",
		Short: "List the jobs under a --store prefix, oldest first",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runJobsLs(cmd.Context(), cmd.OutOrStdout(), args[0])
		},
	}
	rm := &cobra.Command{
		Use:   "rm JOB...",
		Short: "Remove jobs: their objects and unfinished uploads",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, url := range args {
				if !fanout.IsJobURL(url) {
					return usagef("jobs rm: %s is not a job's prefix (…/job-<12 hex digits>/; sluice jobs ls lists them)", url)
				}
			}
			stores := newStoreSet()
			defer stores.Close()
			for _, url := range args {
				if err := fanout.RemoveJob(cmd.Context(), stores.Open, url); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", url)
			}
			return nil
		},
	}
	gc := &cobra.Command{
		Use:   "gc STORE --older-than DURATION",
		Short: "Remove the jobs under a --store prefix older than --older-than",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if olderThan <= 0 {
				return usagef("jobs gc: --older-than must be a positive duration such as 24h")
			}
			return runJobsGC(cmd.Context(), cmd.OutOrStdout(), args[0], olderThan)
		},
	}
	gc.Flags().DurationVar(&olderThan, "older-than", 0, "remove jobs created longer ago than this (such as 24h); a running job's driver may still need a younger one")
	cmd.AddCommand(ls, rm, gc)
	return cmd
}

func listJobs(ctx context.Context, url string) ([]fanout.JobInfo, error) {
	if !strings.HasSuffix(url, "/") {
		url += "/"
	}
	st, prefix, err := globals.openRetried(ctx, url, maxInFlight)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return fanout.Jobs(ctx, st, prefix)
}

func runJobsLs(ctx context.Context, out io.Writer, url string) error {
	jobs, err := listJobs(ctx, url)
	if err != nil {
		return err
	}
	return fanout.WriteJobs(out, jobs, time.Now())
}

func runJobsGC(ctx context.Context, out io.Writer, url string, olderThan time.Duration) error {
	jobs, err := listJobs(ctx, url)
	if err != nil {
		return err
	}
	stores := newStoreSet()
	defer stores.Close()
	for _, j := range jobs {
		if time.Since(j.Created) < olderThan {
			continue
		}
		if err := fanout.RemoveJob(ctx, stores.Open, j.URL); err != nil {
			return err
		}
		fmt.Fprintf(out, "removed %s (%s old, %s)\n", j.URL, time.Since(j.Created).Round(time.Second), humanBytes(j.Bytes))
	}
	return nil
}
