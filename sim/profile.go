package sim

import (
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Profile describes a link. The zero Profile shapes nothing.
type Profile struct {
	// Name is the named profile the spec started from ("s3"), or empty for
	// a custom one. Overrides keep the name; String shows what changed.
	Name string
	// TTFB is the median first-byte latency and TTFBP99 its 99th
	// percentile; latencies are log-normal between them. TTFBP99 == 0
	// means the same as TTFB (a fixed latency).
	TTFB, TTFBP99 time.Duration
	// Stream caps one body (read or upload) and Link all bodies together,
	// in bytes per second; reads and uploads have separate Link budgets.
	// Zero means unlimited.
	Stream, Link float64
	// Per-request probabilities: SlowDown fails a request before any byte;
	// Reset fails a read body part way; Stall stops a read body part way
	// for StallFor, then lets it continue.
	SlowDown, Reset, Stall float64
	StallFor               time.Duration
	// ReqWrite and ReqRead cap the requests a second that one key prefix
	// takes: writes (PUT, DELETE) and reads (GET, HEAD, LIST). Above them
	// a request fails with a 503 SlowDown, as S3 answers while it
	// repartitions. Zero means unlimited. PrefixDepth says what a prefix
	// is: the key's first PrefixDepth path segments, or with 0 its
	// directory (everything up to the last '/').
	ReqWrite, ReqRead float64
	PrefixDepth       int
	// ReqShare, when set, is a file (an absolute path) holding the
	// prefixes' buckets for every process that names it, so that the
	// processes of one machine share each prefix's rate, as S3's clients
	// do; empty, each process has buckets of its own.
	ReqShare string
	// Seed seeds the draws (latencies, faults, fault points).
	Seed uint64
}

// S3's published request rates per prefix, which the s3 profile models.
const (
	S3ReqWrite = 3500
	S3ReqRead  = 5500
)

// named are the profiles Parse knows by name.
var named = map[string]Profile{
	// An instance in the same region as S3: first byte in 10-20 ms, p99
	// near 80 ms, about 90 MB/s per connection.
	"s3": {
		Name:     "s3",
		TTFB:     15 * time.Millisecond,
		TTFBP99:  80 * time.Millisecond,
		Stream:   90 * MiB,
		Link:     1200 * MiB,
		ReqWrite: S3ReqWrite,
		ReqRead:  S3ReqRead,
	},
}

// Byte sizes, for building profiles in code.
const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
)

// IsNone reports whether p shapes nothing, in which case there is nothing
// to wrap (Name and Seed alone change nothing).
func (p Profile) IsNone() bool {
	return p.TTFB == 0 && p.TTFBP99 == 0 && p.Stream == 0 && p.Link == 0 &&
		p.SlowDown == 0 && p.Reset == 0 && p.Stall == 0 && p.ReqWrite == 0 && p.ReqRead == 0
}

// Paced is p's latency and bandwidth alone, without its faults (SlowDown,
// Reset, Stall) and request limits: the link as a writer that nothing
// retries above the store sees it, so that a modelled fault is one a
// layer is there to recover from.
func (p Profile) Paced() Profile {
	p.SlowDown, p.Reset, p.Stall, p.StallFor = 0, 0, 0, 0
	p.ReqWrite, p.ReqRead, p.PrefixDepth, p.ReqShare = 0, 0, 0, ""
	return p
}

// minRate keeps pacing finite: below one byte a second a chunk would take
// longer than a Duration can say.
const minRate = 1

// minReqRate keeps a prefix's bucket refilling within a Duration.
const minReqRate = 0.001

// Validate reports the first field that makes p unusable, in one line.
func (p Profile) Validate() error {
	dur := func(name string, d time.Duration) error {
		if d < 0 {
			return fmt.Errorf("sim: %s=%v: must not be negative", name, d)
		}
		return nil
	}
	if err := dur("ttfb", p.TTFB); err != nil {
		return err
	}
	if err := dur("p99", p.TTFBP99); err != nil {
		return err
	}
	if p.TTFBP99 != 0 && p.TTFBP99 < p.TTFB {
		return fmt.Errorf("sim: p99=%v is below ttfb=%v (p99 must be >= ttfb)", p.TTFBP99, p.TTFB)
	}
	if p.TTFBP99 != 0 && p.TTFB == 0 {
		return fmt.Errorf("sim: p99=%v needs a ttfb (the median) above zero", p.TTFBP99)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"stream", p.Stream}, {"link", p.Link}} {
		if f.v != 0 && !(f.v >= minRate && !math.IsInf(f.v, 0)) {
			return fmt.Errorf("sim: %s=%s: want 0 (unlimited) or a finite rate of at least 1B/s", f.name, formatFloat(f.v))
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"slowdown", p.SlowDown}, {"reset", p.Reset}, {"stall", p.Stall}} {
		if !(f.v >= 0 && f.v <= 1) {
			return fmt.Errorf("sim: %s=%s: probability must be in [0,1]", f.name, formatFloat(f.v))
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"reqlimit writes", p.ReqWrite}, {"reqlimit reads", p.ReqRead}} {
		if f.v != 0 && !(f.v >= minReqRate && !math.IsInf(f.v, 0)) {
			return fmt.Errorf("sim: %s=%s: want 0 (unlimited) or a finite rate of at least %v requests a second", f.name, formatFloat(f.v), minReqRate)
		}
	}
	if p.ReqShare != "" && (!filepath.IsAbs(p.ReqShare) || strings.ContainsAny(p.ReqShare, ",=")) {
		return fmt.Errorf("sim: reqshare=%s: want an absolute path without , or =", p.ReqShare)
	}
	if p.PrefixDepth < 0 {
		return fmt.Errorf("sim: prefixdepth=%d: must not be negative", p.PrefixDepth)
	}
	if err := dur("stall duration", p.StallFor); err != nil {
		return err
	}
	if p.Stall > 0 && p.StallFor == 0 {
		return fmt.Errorf("sim: stall=%s needs a duration (e.g. stall=%s:10s)", formatFloat(p.Stall), formatFloat(p.Stall))
	}
	return nil
}

// String prints p in the form Parse reads back: the named profile it
// started from followed by what differs, or only the fields that are set.
// The zero Profile prints as "none".
func (p Profile) String() string {
	var fields []string
	add := func(k, v string) { fields = append(fields, k+"="+v) }
	base, ok := named[p.Name]
	if ok {
		fields = append(fields, p.Name)
	}
	// A field is printed when it differs from the base: for a custom
	// profile the base is zero, except p99, which defaults to ttfb.
	baseP99 := base.TTFBP99
	if !ok {
		baseP99 = p.TTFB
	}
	if p.TTFB != base.TTFB {
		add("ttfb", p.TTFB.String())
	}
	if p.p99() != baseP99 {
		add("p99", p.p99().String())
	}
	if p.Stream != base.Stream {
		add("stream", formatRate(p.Stream))
	}
	if p.Link != base.Link {
		add("link", formatRate(p.Link))
	}
	if p.SlowDown != base.SlowDown {
		add("slowdown", formatFloat(p.SlowDown))
	}
	if p.Reset != base.Reset {
		add("reset", formatFloat(p.Reset))
	}
	if p.Stall != base.Stall || p.StallFor != base.StallFor {
		v := formatFloat(p.Stall)
		if p.StallFor != 0 {
			v += ":" + p.StallFor.String()
		}
		add("stall", v)
	}
	if p.ReqWrite != base.ReqWrite || p.ReqRead != base.ReqRead {
		add("reqlimit", formatFloat(p.ReqWrite)+":"+formatFloat(p.ReqRead))
	}
	if p.PrefixDepth != base.PrefixDepth {
		add("prefixdepth", strconv.Itoa(p.PrefixDepth))
	}
	if p.ReqShare != base.ReqShare {
		add("reqshare", p.ReqShare)
	}
	if p.Seed != base.Seed {
		add("seed", strconv.FormatUint(p.Seed, 10))
	}
	if len(fields) == 0 {
		return "none"
	}
	return strings.Join(fields, ",")
}

// p99 is the latency's 99th percentile, defaulting to the median.
func (p Profile) p99() time.Duration {
	if p.TTFBP99 == 0 {
		return p.TTFB
	}
	return p.TTFBP99
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// AttemptSeed is the seed of one attempt of a fanned-out task, from the
// job's seed: every worker and every attempt draws other faults, as
// machines of a cluster would meet them, and a retried attempt is not a
// replay of the one that failed; the same attempt draws the same.
func AttemptSeed(seed uint64, phase, task int, attempt string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d/%d/%s", seed, phase, task, attempt)
	return h.Sum64()
}

// ShareRequests, when p limits request rates and shares its buckets with
// no one yet, makes a new file for them (ReqShare), so that the processes
// given p's spec and the file (",reqshare=" + file) share each prefix's
// rate with this one, as S3's clients do, instead of each having its own.
// It returns "" when there is nothing to share; remove deletes the file.
func (p *Profile) ShareRequests() (file string, remove func(), err error) {
	if p.ReqWrite <= 0 && p.ReqRead <= 0 || p.ReqShare != "" {
		return "", func() {}, nil
	}
	f, err := os.CreateTemp("", "sluice-reqshare-")
	if err != nil {
		return "", nil, err
	}
	f.Close()
	p.ReqShare = f.Name()
	return f.Name(), func() { os.Remove(f.Name()) }, nil
}
