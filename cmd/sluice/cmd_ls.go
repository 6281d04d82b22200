package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	neturl "net/url"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/store"
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

// lsTimeFormat is the aws CLI's, in local time.
const lsTimeFormat = "2006-01-02 15:04:05"

func runLs(ctx context.Context, out io.Writer, opts lsOptions, url string) error {
	base, rest := store.SplitGlob(url)
	st, key, err := globals.openRetried(ctx, base, 0)
	if err != nil {
		return err
	}
	defer st.Close()
	key += rest

	// The listing is retried as a whole, so a throttled page never leaves
	// a partial one.
	var l store.Level
	if err := (retry.Policy{}).Do(ctx, func() (err error) {
		l, err = store.ListLevel(ctx, st, key, opts.recursive)
		return err
	}); err != nil {
		return err
	}
	if len(l.Objects) == 0 && len(l.Prefixes) == 0 && (key != "" || missingDir(st)) {
		what := "not found: no object or prefix of this name"
		if store.IsGlob(key) {
			what = "not found: no object matches"
		}
		return &store.Error{Op: "list", URL: st.URL(key), Kind: store.KindNotFound, Err: errors.New(what)}
	}
	for _, p := range l.Prefixes {
		fmt.Fprintf(out, "%30s %s\n", "PRE", p)
	}
	var total int64
	for _, o := range l.Objects {
		total += o.Size
		size := strconv.FormatInt(o.Size, 10)
		if opts.humanReadable {
			size = humanBytes(o.Size)
		}
		name := strings.TrimPrefix(o.Key, l.Dir)
		if opts.long {
			fmt.Fprintf(out, "%s %10s %s %s\n", o.ModTime.Local().Format(lsTimeFormat), size, o.ETag, name)
		} else {
			fmt.Fprintf(out, "%s %10s %s\n", o.ModTime.Local().Format(lsTimeFormat), size, name)
		}
	}
	fmt.Fprintf(out, "%s, %s (%s)", plural(len(l.Objects), "object"), plural(total, "byte"), humanBytes(total))
	if len(l.Prefixes) > 0 {
		fmt.Fprintf(out, "; %s (--recursive lists them)", plural(len(l.Prefixes), "prefix"))
	}
	fmt.Fprintln(out)
	return nil
}

// plural is "1 object", "2 objects", "3 prefixes".
func plural[N int | int64](n N, noun string) string {
	s := strconv.FormatInt(int64(n), 10) + " " + noun
	switch {
	case n == 1:
		return s
	case strings.HasSuffix(noun, "x"):
		return s + "es"
	}
	return s + "s"
}

// missingDir says st is a local directory that does not exist: ls ./nope/
// is not found, as ls ./nope is. (An empty bucket or prefix of an object
// store exists as far as anyone can tell.)
func missingDir(st *store.Store) bool {
	u, err := neturl.Parse(st.URL(""))
	if err != nil || u.Scheme != "file" {
		return false
	}
	_, err = os.Stat(u.Path)
	return errors.Is(err, fs.ErrNotExist)
}
