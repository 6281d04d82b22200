package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/fetch"
	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/store"
)

type catOptions struct {
	memory string
	stats  bool
}

func newCatCommand() *cobra.Command {
	var opts catOptions
	cmd := &cobra.Command{
		Use:   "cat URL...",
		Short: "Stream objects to stdout, in order, at full bandwidth",
		Long: `Write the bytes of each object to standard output, one object after another
in the order given. A URL ending in / (or naming a directory) stands for every
object under it, in key order.

Objects are read as parallel ranged GETs of 8 MiB through the fetch scheduler,
many at once, so even one large object streams as fast as the link allows;
the output is still strictly in order. At most --memory bytes are held
between the network and stdout. Every object is read from one version: if it
is replaced while cat reads it, cat stops with an error instead of mixing two
versions (output already written stays written).`,
		Example: `  sluice cat s3://bucket/logs/2024-01-01.json | jq .
  sluice cat s3://bucket/part-0.csv s3://bucket/part-1.csv > all.csv
  sluice cat s3://bucket/dump/ --memory 1GiB > dump.bin
  sluice cat mem://x/big --sim s3 --stats > /dev/null`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("cat takes one or more URLs (see --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCat(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.memory, "memory", "256MiB", "most bytes held between the network and the output")
	f.BoolVar(&opts.stats, "stats", false, "print fetch statistics to stderr at the end")
	return cmd
}

// window is the range size cat and cp read objects in: within the 8-16 MiB
// that object stores serve best, and small enough that a default budget
// keeps 32 of them in flight.
const window = 8 << 20

// maxInFlight is what the fetch scheduler may grow to; the S3 transport
// keeps that many connections.
const maxInFlight = 64

func parseMemory(s string) (int64, error) {
	n, err := bench.ParseSize(s)
	if err != nil {
		return 0, usagef("--memory: %v", err)
	}
	if n < 1<<20 {
		return 0, usagef("--memory %s: want at least 1MiB", s)
	}
	return n, nil
}

func runCat(ctx context.Context, out, errOut io.Writer, opts catOptions, urls []string) error {
	memory, err := parseMemory(opts.memory)
	if err != nil {
		return err
	}
	stores := newRetriedStoreSet()
	defer stores.Close()
	resolved, err := resolveAll(ctx, stores, urls)
	if err != nil {
		return err
	}
	// Consecutive URLs in one store share a plan, so a list of small
	// objects is fetched concurrently, not one round trip at a time.
	var groups []objectGroup
	for _, g := range resolved {
		if n := len(groups); n > 0 && groups[n-1].st == g.st {
			groups[n-1].objects = append(groups[n-1].objects, g.objects...)
		} else {
			groups = append(groups, g)
		}
	}
	var total fetch.Stats
	defer func() {
		if opts.stats {
			fmt.Fprintln(errOut, total.String())
		}
	}()
	// One mapped pool for every group's pages, keeping a budget's worth
	// for the next group: fresh memory is most of what a fetch costs in
	// CPU (see fetch.Options.Mem).
	mem := mempool.NewMapped(memory)
	for _, g := range groups {
		f := fetch.New(g.st, fetch.Options{Memory: memory, Mem: mem})
		s, err := catGroup(ctx, out, f, g.objects)
		total.Add(s)
		if err != nil {
			return err
		}
	}
	return nil
}

func catGroup(ctx context.Context, out io.Writer, f *fetch.Fetcher, objects []store.ObjectInfo) (fetch.Stats, error) {
	p := f.Plan(ctx, windowRequests(objects))
	defer p.Close()
	for {
		u, err := p.Next(ctx)
		if err == io.EOF {
			return p.Stats(), nil
		}
		if err != nil {
			return p.Stats(), err
		}
		_, err = u.WriteTo(out)
		u.Release()
		if err != nil {
			return p.Stats(), fmt.Errorf("write output: %w", err)
		}
	}
}

// windowRequests cuts objects into window-sized units, each tagged with its
// object's index; an empty object is one empty unit, so it is not skipped.
func windowRequests(objects []store.ObjectInfo) []fetch.Request {
	var reqs []fetch.Request
	for i, o := range objects {
		if o.Size == 0 {
			reqs = append(reqs, fetch.Request{Key: o.Key, ETag: o.ETag, Tag: i})
			continue
		}
		for off := int64(0); off < o.Size; off += window {
			reqs = append(reqs, fetch.Request{
				Key:    o.Key,
				Ranges: []store.Range{{Off: off, Len: min(window, o.Size-off)}},
				ETag:   o.ETag,
				Size:   o.Size,
				Tag:    i,
			})
		}
	}
	return reqs
}

// objectGroup is objects of one store, in the order they are to be read.
type objectGroup struct {
	st      *store.Store
	listed  bool   // the objects were listed under prefix, not named
	prefix  string // what they were listed under
	objects []store.ObjectInfo
}

// newStoreSet opens each store once, with the global flags.
func newStoreSet() *store.Set {
	return store.NewSet(func(ctx context.Context, url string) (*store.Store, string, error) {
		return globals.openStore(ctx, url, maxInFlight)
	})
}

// newRetriedStoreSet is a store set for a command that retries every
// request it makes itself (fetch, internal/retry), so the SDK's own
// retries are off.
func newRetriedStoreSet() *store.Set {
	return store.NewSet(func(ctx context.Context, url string) (*store.Store, string, error) {
		return globals.openRetried(ctx, url, maxInFlight)
	})
}

// resolveAll resolves urls concurrently (each is a round trip or more),
// keeping their order; the first error in that order is returned.
func resolveAll(ctx context.Context, s *store.Set, urls []string) ([]objectGroup, error) {
	out := make([]objectGroup, len(urls))
	errs := make([]error, len(urls))
	var g errgroup.Group
	g.SetLimit(16)
	for i, u := range urls {
		g.Go(func() error {
			out[i], errs[i] = resolve(ctx, s, u)
			return nil
		})
	}
	g.Wait()
	return out, firstError(errs)
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// resolve turns a URL into the objects it names: one object, or, for a
// URL ending in / (or the root of a store, such as a directory), every
// object under it. A name that is neither an object nor a prefix with
// objects under it is not found.
func resolve(ctx context.Context, s *store.Set, url string) (objectGroup, error) {
	st, key, err := s.Open(ctx, url)
	if err != nil {
		return objectGroup{}, err
	}
	if key != "" && !strings.HasSuffix(key, "/") {
		var info store.ObjectInfo
		err := retry.Policy{}.Do(ctx, func() (err error) {
			info, err = st.Stat(ctx, key)
			return err
		})
		if err == nil {
			return objectGroup{st: st, objects: []store.ObjectInfo{info}}, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return objectGroup{}, err
		}
		// Perhaps a prefix written without its slash.
		objs, lerr := listRetried(ctx, st, key+"/")
		if lerr != nil || len(objs) == 0 {
			return objectGroup{}, err
		}
		return objectGroup{st: st, listed: true, prefix: key + "/", objects: objs}, nil
	}
	objs, err := listRetried(ctx, st, key)
	if err != nil {
		return objectGroup{}, err
	}
	if len(objs) == 0 {
		return objectGroup{}, &store.Error{Op: "list", URL: st.URL(key), Kind: store.KindNotFound, Err: errors.New("no objects under this prefix")}
	}
	return objectGroup{st: st, listed: true, prefix: key, objects: objs}, nil
}

// listRetried lists prefix with the retry policy's retries.
func listRetried(ctx context.Context, st *store.Store, prefix string) ([]store.ObjectInfo, error) {
	var objs []store.ObjectInfo
	err := retry.Policy{}.Do(ctx, func() (err error) {
		objs, err = st.List(ctx, prefix)
		return err
	})
	return objs, err
}
