package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/store"
)

type rmOptions struct {
	recursive bool
	dryrun    bool
	quiet     bool
}

func newRmCommand() *cobra.Command {
	var opts rmOptions
	cmd := &cobra.Command{
		Use:   "rm URL",
		Short: "Delete an object, or every object under a prefix",
		Long: `Delete one object, or with --recursive every object under a prefix (a
directory, s3://bucket/prefix/, or a prefix written without its slash), as
the aws CLI's "s3 rm" does. Each deleted object is printed as
"delete: URL"; --dryrun prints "(dryrun) delete: URL" and deletes nothing.

A URL that names nothing is "not found" (exit code 3). A prefix without
--recursive is refused, so one mistyped URL cannot delete a tree.`,
		Example: `  sluice rm s3://bucket/lineitem/part-00000.parquet
  sluice rm --recursive --dryrun s3://bucket/lineitem/
  sluice rm --recursive s3://bucket/lineitem/
  sluice rm -r ./data/old`,
		Args: exactArgs(1),
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

// rmWorkers is how many deletes are in flight at once: one round trip
// each, so a prefix of many objects is latency-bound without them.
const rmWorkers = 16

func runRm(ctx context.Context, out io.Writer, opts rmOptions, url string) error {
	if store.IsGlob(url) {
		return usagef("rm: %s: globs are not taken (list them with ls, or name a prefix with --recursive)", url)
	}
	st, key, err := globals.openRetried(ctx, url, rmWorkers)
	if err != nil {
		return err
	}
	defer st.Close()
	policy := retry.Policy{}

	if !opts.recursive {
		if key == "" || strings.HasSuffix(key, "/") {
			return usagef("rm: %s is a prefix: add --recursive to delete everything under it", url)
		}
		err := policy.Do(ctx, func() error {
			_, err := st.Stat(ctx, key)
			return err
		})
		if errors.Is(err, store.ErrNotFound) {
			objs, lerr := listRetried(ctx, st, key+"/")
			if lerr == nil && len(objs) > 0 {
				return usagef("rm: %s is a prefix: add --recursive to delete everything under it", url)
			}
		}
		if err != nil {
			return err
		}
		return deleteObjects(ctx, out, st, []string{key}, opts)
	}

	prefix := key
	objs, err := listRetried(ctx, st, prefix)
	if err != nil {
		return err
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		// "s3://b/li" deletes li and what is under li/, never li-2.
		all := objs
		objs = objs[:0:0]
		for _, o := range all {
			if o.Key == prefix || strings.HasPrefix(o.Key, prefix+"/") {
				objs = append(objs, o)
			}
		}
	}
	if len(objs) == 0 {
		return &store.Error{Op: "delete", URL: st.URL(prefix), Kind: store.KindNotFound, Err: errors.New("no objects under this prefix")}
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return deleteObjects(ctx, out, st, keys, opts)
}

// deleteObjects deletes keys, several at once, printing each as it goes.
// An object already gone (deleted by someone else meanwhile) is no error.
func deleteObjects(ctx context.Context, out io.Writer, st *store.Store, keys []string, opts rmOptions) error {
	var mu sync.Mutex
	say := func(format string, a ...any) {
		if opts.quiet {
			return
		}
		mu.Lock()
		fmt.Fprintf(out, format, a...)
		mu.Unlock()
	}
	if opts.dryrun {
		for _, k := range keys {
			say("(dryrun) delete: %s\n", st.URL(k))
		}
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(rmWorkers)
	for _, k := range keys {
		g.Go(func() error {
			err := retry.Policy{}.Do(gctx, func() error { return st.Delete(gctx, k) })
			if errors.Is(err, store.ErrNotFound) && len(keys) > 1 {
				return nil // listed, then deleted by someone else
			}
			if err != nil {
				return err
			}
			say("delete: %s\n", st.URL(k))
			return nil
		})
	}
	return g.Wait()
}
