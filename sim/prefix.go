package sim

import (
	"fmt"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// prefixBurst sizes a prefix's token bucket: a prefix that was idle may
// take this long's worth of requests at once before the rate applies.
// Short, so that a run of a few seconds sees the modelled rate and not
// the burst.
const prefixBurst = 100 * time.Millisecond

type prefixClass struct {
	prefix string
	write  bool
}

// KeyPrefix is the prefix a request for key counts against: its first
// depth path segments (each with its '/'), or, when depth is 0 or the key
// has fewer segments, its directory: everything up to the last '/' ("" for
// a key without one). S3 partitions by key prefix, and spreading hot keys
// over directories is how clients keep under its per-prefix rates.
func KeyPrefix(key string, depth int) string {
	if depth > 0 {
		seen := 0
		for i := range len(key) {
			if key[i] == '/' {
				if seen++; seen == depth {
					return key[:i+1]
				}
			}
		}
	}
	return key[:strings.LastIndexByte(key, '/')+1]
}

// admit takes a token from key's prefix for one read or write, or answers
// the 503 S3 gives above the rate. A refused request takes no token.
func (l *link) admit(write bool, key string) error {
	limit := l.p.ReqRead
	if write {
		limit = l.p.ReqWrite
	}
	if limit == 0 {
		return nil
	}
	pc := prefixClass{KeyPrefix(key, l.p.PrefixDepth), write}
	what := "reads"
	if write {
		what = "writes"
	}
	burst := max(1, int(limit*prefixBurst.Seconds()))
	if l.p.ReqShare != "" {
		sh, err := l.sharedBuckets()
		if err != nil {
			return err
		}
		ok, err := sh.take(what+" "+l.scope+pc.prefix, limit, float64(burst), l.now())
		if err != nil || ok {
			return err
		}
		return fmt.Errorf("%w: prefix %q over %s %s a second", ErrRateLimited, pc.prefix, formatFloat(limit), what)
	}
	l.prefixMu.Lock()
	defer l.prefixMu.Unlock()
	lim := l.prefixes[pc]
	if lim == nil {
		if l.prefixes == nil {
			l.prefixes = map[prefixClass]*rate.Limiter{}
		}
		lim = rate.NewLimiter(rate.Limit(limit), burst)
		l.prefixes[pc] = lim
	}
	if lim.AllowN(l.now(), 1) {
		return nil
	}
	return fmt.Errorf("%w: prefix %q over %s %s a second", ErrRateLimited, pc.prefix, formatFloat(limit), what)
}

// sharedBuckets opens the file of Profile.ReqShare once.
func (l *link) sharedBuckets() (*sharedBuckets, error) {
	l.prefixMu.Lock()
	defer l.prefixMu.Unlock()
	if l.shared == nil && l.sharedErr == nil {
		l.shared, l.sharedErr = openShared(l.p.ReqShare)
	}
	return l.shared, l.sharedErr
}
