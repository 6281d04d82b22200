package sim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

var (
	fieldNames = []string{"ttfb", "p99", "stream", "link", "slowdown", "reset", "stall", "reqlimit", "prefixdepth", "reqshare", "seed"}
	fieldList  = strings.Join(fieldNames, ", ")
)

// Parse reads a link profile:
//
//	s3                    an instance next to S3 (15ms/80ms first byte, 90 MiB/s a stream, 1200 MiB/s link,
//	                      3500 writes and 5500 reads a second per prefix)
//	none, or ""           no shaping: the zero Profile, which WrapOption does not wrap
//	ttfb=15ms,p99=80ms,stream=90MiB/s,link=400MiB/s,slowdown=0.05,reset=0.01,stall=0.01:10s,seed=7
//	s3,link=200MiB/s      a named profile with overrides
//	link=40MiB/s,reqlimit=3500:5500,prefixdepth=2
//
// Rates take B, KiB, MiB, GiB, TiB (or KB, MB, GB, TB: powers of 1000) with
// an optional /s; 0 is unlimited. Probabilities are in [0,1]. p99 defaults
// to ttfb (a fixed latency) and must not be below it. stall takes
// probability:duration. reqlimit takes writes:reads a second per key
// prefix (one number sets both; 0 is unlimited); prefixdepth is how many
// leading path segments make a prefix (0, the default: the key's
// directory); reqshare=PATH keeps the buckets in that file, shared by
// every process naming it. Errors are one line naming the bad field.
func Parse(spec string) (Profile, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Profile{}, nil
	}
	fields := strings.Split(spec, ",")
	var p Profile
	if first := strings.TrimSpace(fields[0]); !strings.Contains(first, "=") {
		base, err := lookup(first)
		if err != nil {
			if isField(first) {
				return Profile{}, fmt.Errorf("sim: field %q has no value (want key=value, keys %s)", first, fieldList)
			}
			return Profile{}, err
		}
		p, fields = base, fields[1:]
	}
	seen := map[string]bool{}
	for _, f := range fields {
		f = strings.TrimSpace(f)
		if f == "" {
			return Profile{}, fmt.Errorf("sim: empty field in %q", spec)
		}
		k, v, ok := strings.Cut(f, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok {
			if _, err := lookup(k); err == nil {
				return Profile{}, fmt.Errorf("sim: profile %q must come first", k)
			}
			return Profile{}, fmt.Errorf("sim: field %q has no value (want key=value, keys %s)", k, fieldList)
		}
		if seen[k] {
			return Profile{}, fmt.Errorf("sim: field %q given twice", k)
		}
		seen[k] = true
		if err := p.set(k, v); err != nil {
			return Profile{}, err
		}
	}
	if p.TTFBP99 == 0 {
		p.TTFBP99 = p.TTFB
	}
	if p.Stall == 0 {
		p.StallFor = 0 // a stall that never happens has no length
	}
	if err := p.Validate(); err != nil {
		return Profile{}, err
	}
	return p, nil
}

func isField(k string) bool { return slices.Contains(fieldNames, k) }

func lookup(name string) (Profile, error) {
	if name == "none" {
		return Profile{}, nil
	}
	if p, ok := named[name]; ok {
		return p, nil
	}
	return Profile{}, fmt.Errorf("sim: unknown profile %q (want s3, none, or fields such as ttfb=15ms,stream=90MiB/s)", name)
}

func (p *Profile) set(k, v string) error {
	var err error
	switch k {
	case "ttfb":
		p.TTFB, err = parseDuration(k, v)
	case "p99":
		p.TTFBP99, err = parseDuration(k, v)
	case "stream":
		p.Stream, err = parseRate(k, v)
	case "link":
		p.Link, err = parseRate(k, v)
	case "slowdown":
		p.SlowDown, err = parseProb(k, v)
	case "reset":
		p.Reset, err = parseProb(k, v)
	case "stall":
		prob, d, hasDur := strings.Cut(v, ":")
		if p.Stall, err = parseProb(k, prob); err != nil {
			return err
		}
		p.StallFor = 0
		if hasDur {
			p.StallFor, err = parseDuration("stall duration", d)
		}
	case "reqlimit":
		w, r, both := strings.Cut(v, ":")
		if !both {
			r = w
		}
		if p.ReqWrite, err = parseReqRate("reqlimit", w); err != nil {
			return err
		}
		p.ReqRead, err = parseReqRate("reqlimit", r)
	case "prefixdepth":
		p.PrefixDepth, err = strconv.Atoi(v)
		if err != nil || p.PrefixDepth < 0 || p.PrefixDepth > maxPrefixDepth {
			err = fmt.Errorf("sim: bad prefixdepth %q: want 0 (the key's directory) to %d path segments", v, maxPrefixDepth)
		}
	case "reqshare":
		p.ReqShare = v
	case "seed":
		p.Seed, err = strconv.ParseUint(v, 10, 64)
		if err != nil {
			err = fmt.Errorf("sim: bad seed %q: want an unsigned integer", v)
		}
	default:
		err = fmt.Errorf("sim: unknown field %q (want %s)", k, fieldList)
	}
	return err
}

func parseDuration(k, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("sim: bad %s %q: want a duration such as 15ms", k, v)
	}
	return d, nil
}

// maxPrefixDepth is far deeper than any key layout, and keeps the number
// printable and parseable everywhere.
const maxPrefixDepth = 1 << 16

func parseReqRate(k, v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "/s"), 64)
	if err != nil || !(f == 0 || f >= minReqRate) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("sim: bad %s %q: want requests a second per prefix, writes:reads such as 3500:5500 (0 is unlimited)", k, v)
	}
	return f + 0, nil
}

func parseProb(k, v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0 && f <= 1) {
		return 0, fmt.Errorf("sim: bad %s %q: want a probability in [0,1]", k, v)
	}
	return f + 0, nil // -0 reads as 0
}

// units are tried longest first so "MiB" is not read as "B".
var units = []struct {
	name string
	mult float64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1},
}

func parseRate(k, v string) (float64, error) {
	bad := func(why string) error {
		return fmt.Errorf("sim: bad %s %q: %s", k, v, why)
	}
	s := strings.TrimSuffix(v, "/s")
	mult := 1.0
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.name); ok {
			s, mult = num, u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0) {
		return 0, bad("want a rate such as 90MiB/s (units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)")
	}
	r := f*mult + 0 // -0 reads as 0
	if math.IsInf(r, 0) {
		return 0, bad("too large")
	}
	if r != 0 && r < minRate {
		return 0, bad("want 0 (unlimited) or at least 1B/s")
	}
	return r, nil
}

// formatRate prints a rate in the shortest unit that reads back exactly.
func formatRate(r float64) string {
	best := formatFloat(r) + "B/s"
	for _, u := range units {
		if r < u.mult {
			continue
		}
		s := formatFloat(r/u.mult) + u.name + "/s"
		if back, err := parseRate("", s); err == nil && back == r && len(s) < len(best) {
			best = s
		}
	}
	return best
}
