package transfer

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

	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/internal/size"
	"github.com/sluice-data/sluice/internal/spell"
	"github.com/sluice-data/sluice/internal/stickyerr"
	"github.com/sluice-data/sluice/store"
)

// List lists key in st a level at a time (store.ListLevel), the listing
// retried as a whole so that a throttled page never leaves a partial one.
// A key that names nothing is an error matching store.ErrNotFound, in the
// words of its form; an empty bucket or an empty directory that exists
// lists nothing and is no error (a local directory that does not exist is
// not found, with or without its slash).
func List(ctx context.Context, st *store.Store, key string, recursive bool) (store.Level, error) {
	var l store.Level
	if err := (retry.Policy{}).Do(ctx, func() (err error) {
		l, err = store.ListLevel(ctx, st, key, recursive)
		return err
	}); err != nil {
		return store.Level{}, err
	}
	if len(l.Objects) == 0 && len(l.Prefixes) == 0 && (key != "" || missingDir(st)) {
		what := "not found: no object or prefix of this name"
		if store.IsGlob(key) {
			what = "not found: no object matches"
		}
		return store.Level{}, &store.Error{Op: "list", URL: st.URL(key), Kind: store.KindNotFound, Err: errors.New(what)}
	}
	return l, nil
}

// missingDir says st is a local directory that does not exist. (An empty
// bucket or prefix of an object store exists as far as anyone can tell.)
func missingDir(st *store.Store) bool {
	u, err := neturl.Parse(st.URL(""))
	if err != nil || u.Scheme != "file" {
		return false
	}
	_, err = os.Stat(u.Path)
	return errors.Is(err, fs.ErrNotExist)
}

// ListingTimeFormat is how a listing prints an object's modification
// time, in local time: the aws CLI's.
const ListingTimeFormat = "2006-01-02 15:04:05"

// ListingOptions say what WriteListing shows.
type ListingOptions struct {
	// ETags adds each object's ETag before its name.
	ETags bool
	// Human prints sizes in KiB, MiB, GiB... rather than bytes.
	Human bool
}

// WriteListing writes l as the aws CLI's "s3 ls" does: each prefix as a
// PRE line, then each object's modification time, size and name relative
// to l.Dir, then a total of objects and bytes (and of prefixes, which a
// recursive listing would open).
func WriteListing(w io.Writer, l store.Level, opts ListingOptions) error {
	bw := &stickyerr.Writer{W: w}
	for _, p := range l.Prefixes {
		fmt.Fprintf(bw, "%30s %s\n", "PRE", p)
	}
	var total int64
	for _, o := range l.Objects {
		total += o.Size
		sz := strconv.FormatInt(o.Size, 10)
		if opts.Human {
			sz = size.IEC(o.Size)
		}
		name := strings.TrimPrefix(o.Key, l.Dir)
		if opts.ETags {
			fmt.Fprintf(bw, "%s %10s %s %s\n", o.ModTime.Local().Format(ListingTimeFormat), sz, o.ETag, name)
		} else {
			fmt.Fprintf(bw, "%s %10s %s\n", o.ModTime.Local().Format(ListingTimeFormat), sz, name)
		}
	}
	fmt.Fprintf(bw, "%s, %s (%s)", spell.Count(len(l.Objects), "object"), spell.Count(total, "byte"), size.IEC(total))
	if len(l.Prefixes) > 0 {
		fmt.Fprintf(bw, "; %s (--recursive lists them)", spell.Count(len(l.Prefixes), "prefix"))
	}
	fmt.Fprintln(bw)
	return bw.Err
}
