package fanout

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/store"
)

// JobInfo is a job whose objects are in a store: one that ran with Keep,
// or whose driver died before it could delete them.
type JobInfo struct {
	URL     string // the job's prefix
	ID      string // job-<hex>
	Created time.Time
	Objects int
	Bytes   int64
	// Phases is how many phases the spec has (0 when it cannot be read),
	// Committed how many of them have their manifest.
	Phases, Committed int
}

var jobDir = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^job-[0-9a-f]{12}/`) })

// Jobs lists the jobs under prefix of st (its job-<hex>/ prefixes), oldest
// first.
func Jobs(ctx context.Context, st *store.Store, prefix string) ([]JobInfo, error) {
	byID := map[string]*JobInfo{}
	err := st.Walk(ctx, prefix, func(o store.ObjectInfo) error {
		rest := strings.TrimPrefix(o.Key, prefix)
		dir := jobDir().FindString(rest)
		if dir == "" {
			return nil
		}
		j := byID[dir]
		if j == nil {
			j = &JobInfo{URL: st.URL(prefix + dir), ID: strings.TrimSuffix(dir, "/"), Created: o.ModTime}
			byID[dir] = j
		}
		j.Objects++
		j.Bytes += o.Size
		if o.ModTime.Before(j.Created) {
			j.Created = o.ModTime
		}
		switch k := strings.TrimPrefix(rest, dir); {
		case k == specKey:
			j.Created = o.ModTime
			if b, err := st.ReadAll(ctx, o.Key); err == nil {
				if s, err := ParseSpec(b); err == nil {
					j.Phases = len(s.Phases)
				}
			}
		case strings.HasSuffix(k, "/manifest.json") && strings.Count(k, "/") == 1:
			j.Committed++
		}
		return nil
	})
	if err != nil && store.KindOf(err) != store.KindNotFound {
		return nil, err
	}
	jobs := make([]JobInfo, 0, len(byID))
	for _, j := range byID {
		jobs = append(jobs, *j)
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].Created.Before(jobs[b].Created) })
	return jobs, nil
}

// RemoveJob deletes the job whose prefix is url: every object under it,
// and its unfinished uploads.
func RemoveJob(ctx context.Context, open store.Opener, url string) error {
	if !IsJobURL(url) {
		return fmt.Errorf("%w: %s is not a job's prefix (…/job-<12 hex digits>/)", exec.ErrInvalid, url)
	}
	st, prefix, err := openWith(ctx, open, url)
	if err != nil {
		return err
	}
	defer closeStore(open, st)
	j := &job{st: st, prefix: prefix}
	infos, err := st.List(ctx, prefix)
	if err != nil && store.KindOf(err) != store.KindNotFound {
		return err
	}
	errs := []error{abortUploads(ctx, st, prefix, func(string) bool { return true })}
	for _, info := range infos {
		if err := j.do(ctx, func() error { return st.Delete(ctx, info.Key) }); err != nil && store.KindOf(err) != store.KindNotFound {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// IsJobURL says whether url names a job's prefix (…/job-<hex>/).
func IsJobURL(url string) bool {
	return strings.HasSuffix(url, "/") && jobDir().MatchString(lastDir(url))
}

// lastDir is the last component of a prefix ending in /, with its /.
func lastDir(prefix string) string {
	p := strings.TrimSuffix(prefix, "/")
	return p[strings.LastIndexByte(p, '/')+1:] + "/"
}
