package sim

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	s3 := named["s3"]
	for _, tc := range []struct {
		spec string
		want Profile
	}{
		{"", Profile{}},
		{"none", Profile{}},
		{" none ", Profile{}},
		{"s3", s3},
		{"s3,link=200MiB/s", func() Profile { p := s3; p.Link = 200 * MiB; return p }()},
		{"s3, seed=9 ,stall=0.5:2s", func() Profile { p := s3; p.Seed = 9; p.Stall = 0.5; p.StallFor = 2 * time.Second; return p }()},
		{"none,ttfb=1ms", Profile{TTFB: time.Millisecond, TTFBP99: time.Millisecond}},
		{
			"ttfb=15ms,p99=80ms,stream=90MiB/s,link=400MiB/s,slowdown=0.05,reset=0.01,stall=0.01:10s",
			Profile{TTFB: 15 * time.Millisecond, TTFBP99: 80 * time.Millisecond, Stream: 90 * MiB, Link: 400 * MiB,
				SlowDown: 0.05, Reset: 0.01, Stall: 0.01, StallFor: 10 * time.Second},
		},
		{"stream=1.5GiB", Profile{Stream: 1.5 * GiB}},
		{"stream=10KiB/s,link=3KB", Profile{Stream: 10 * KiB, Link: 3000}},
		{"stream=90MB/s,link=1GB/s", Profile{Stream: 90e6, Link: 1e9}},
		{"stream=1,link=0", Profile{Stream: 1}},
		{"stall=0", Profile{}},
		{"stall=0:5s", Profile{}}, // a stall that never happens has no length
		{"slowdown=1,reset=0,seed=18446744073709551615", Profile{SlowDown: 1, Seed: 1<<64 - 1}},
		{"s3,ttfb=0,p99=0", func() Profile { p := s3; p.TTFB, p.TTFBP99 = 0, 0; return p }()},
		{"s3,p99=0", func() Profile { p := s3; p.TTFBP99 = p.TTFB; return p }()},
		{"reqlimit=3500:5500", Profile{ReqWrite: 3500, ReqRead: 5500}},
		{"reqlimit=100/s", Profile{ReqWrite: 100, ReqRead: 100}},
		{"link=40MiB/s,reqlimit=0:5.5,prefixdepth=2", Profile{Link: 40 * MiB, ReqRead: 5.5, PrefixDepth: 2}},
		{"s3,reqlimit=0", func() Profile { p := s3; p.ReqWrite, p.ReqRead = 0, 0; return p }()},
		{"prefixdepth=1", Profile{PrefixDepth: 1}},
		{"reqlimit=1,reqshare=/tmp/b", Profile{ReqWrite: 1, ReqRead: 1, ReqShare: "/tmp/b"}},
	} {
		got, err := Parse(tc.spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.spec, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Parse(%q)\n got %+v\nwant %+v", tc.spec, got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"tttfb=5ms", `sim: unknown field "tttfb" (want ttfb, p99, stream, link, slowdown, reset, stall, reqlimit, prefixdepth, reqshare, seed)`},
		{"s4", `unknown profile "s4"`},
		{"ttfb=5ms,s3", `profile "s3" must come first`},
		{"ttfb", `field "ttfb" has no value`},
		{"ttfb=5ms,ttfb=6ms", `field "ttfb" given twice`},
		{"s3,", `empty field`},
		{"ttfb=fast", `bad ttfb "fast"`},
		{"ttfb=-5ms", `bad ttfb "-5ms"`},
		{"ttfb=15ms,p99=5ms", `sim: p99=5ms is below ttfb=15ms`},
		{"s3,ttfb=100ms", `p99=80ms is below ttfb=100ms`},
		{"p99=5ms", `p99=5ms needs a ttfb`},
		{"stream=90Mbps", `bad stream "90Mbps"`},
		{"link=-1MiB/s", `bad link "-1MiB/s"`},
		{"link=NaN", `bad link "NaN"`},
		{"link=inf", `bad link "inf"`},
		{"link=1e308TiB", `bad link "1e308TiB": too large`},
		{"stream=0.5B/s", `want 0 (unlimited) or at least 1B/s`},
		{"slowdown=1.5", `bad slowdown "1.5": want a probability in [0,1]`},
		{"reset=-0.1", `bad reset "-0.1"`},
		{"reset=NaN", `bad reset "NaN"`},
		{"stall=0.1", `stall=0.1 needs a duration`},
		{"stall=0.1:x", `bad stall duration "x"`},
		{"stall=2:1s", `bad stall "2"`},
		{"seed=-1", `bad seed "-1"`},
		{"tt\nfb=1", `unknown field "tt\nfb"`},
		{"reqlimit=fast", `bad reqlimit "fast"`},
		{"reqlimit=-1:5", `bad reqlimit "-1"`},
		{"reqlimit=1:NaN", `bad reqlimit "NaN"`},
		{"reqlimit=1:2:3", `bad reqlimit "2:3"`},
		{"reqlimit=1e-9", `bad reqlimit "1e-9"`},
		{"reqlimit=inf", `bad reqlimit "inf"`},
		{"prefixdepth=-1", `bad prefixdepth "-1"`},
		{"prefixdepth=x", `bad prefixdepth "x"`},
		{"reqshare=rel/b", "reqshare=rel/b: want an absolute path"},
		{"prefixdepth=99999999", `bad prefixdepth "99999999"`},
	} {
		_, err := Parse(tc.spec)
		if err == nil {
			t.Errorf("Parse(%q) accepted it, want error containing %q", tc.spec, tc.want)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || !strings.HasPrefix(msg, "sim: ") || strings.Contains(msg, "\n") {
			t.Errorf("Parse(%q) = %q, want one line starting sim: and containing %q", tc.spec, msg, tc.want)
		}
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"none", "none"},
		{"s3", "s3"},
		{"s3,link=200MiB/s", "s3,link=200MiB/s"},
		{"s3,stream=0", "s3,stream=0B/s"},
		{"s3,ttfb=15ms,seed=3", "s3,seed=3"},
		{"ttfb=15ms,p99=80ms,stream=90MiB/s,link=400MiB/s,slowdown=0.05,reset=0.01,stall=0.01:10s",
			"ttfb=15ms,p99=80ms,stream=90MiB/s,link=400MiB/s,slowdown=0.05,reset=0.01,stall=0.01:10s"},
		{"ttfb=5ms", "ttfb=5ms"},
		{"stream=90MB/s,link=1536KiB", "stream=90MB/s,link=1.5MiB/s"},
		{"stream=1000", "stream=1KB/s"},
		{"link=1023", "link=1023B/s"},
		{"s3,reqlimit=350:550", "s3,reqlimit=350:550"},
		{"reqlimit=7", "reqlimit=7:7"},
		{"s3,reqlimit=0,prefixdepth=3", "s3,reqlimit=0:0,prefixdepth=3"},
	} {
		p, err := Parse(tc.spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.spec, err)
		}
		if got := p.String(); got != tc.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.spec, got, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "none", "s3", "s3,link=200MiB/s", "s3,ttfb=0,p99=0",
		"ttfb=15ms,p99=80ms,stream=90MiB/s,link=400MiB/s,slowdown=0.05,reset=0.01,stall=0.01:10s",
		"stream=1.5GiB,link=3KB/s,seed=7", "stall=0:5s", "ttfb=1h2m3.000000004s", "link=1e-3TiB",
		"tttfb=5ms", "ttfb=15ms,p99=5ms", "slowdown=NaN", "link=0x1p20", " s3 , seed = 1 ",
		"reqlimit=3500:5500,prefixdepth=2", "s3,reqlimit=0.5", "reqlimit=1e308:0",
		"reqlimit=50:80,reqshare=/tmp/sluice-b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := Parse(spec)
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "sim: ") {
				t.Fatalf("Parse(%q): error %q is not one line starting sim:", spec, msg)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("Parse(%q) accepted an invalid profile %+v: %v", spec, p, err)
		}
		s := p.String()
		q, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q) = %+v, but its String %q does not parse: %v", spec, p, s, err)
		}
		if q != p {
			t.Fatalf("round trip of %q through %q:\n got %+v\nwant %+v", spec, s, q, p)
		}
		if s2 := q.String(); s2 != s {
			t.Fatalf("String not stable: %q then %q", s, s2)
		}
	})
}

// TestPaced: a profile's pacing without its faults keeps the latency and
// bandwidth and drops every fault and request limit; a profile of faults
// alone paces nothing.
func TestPaced(t *testing.T) {
	p, err := Parse("s3,link=100MiB/s,slowdown=0.05,reset=0.01,stall=0.01:10s,reqlimit=10:20,prefixdepth=1,reqshare=/tmp/x,seed=7")
	if err != nil {
		t.Fatal(err)
	}
	want := named["s3"]
	want.Link, want.Seed = 100*MiB, 7
	want.ReqWrite, want.ReqRead = 0, 0
	if got := p.Paced(); got != want {
		t.Fatalf("Paced() = %+v\nwant       %+v", got, want)
	}
	if err := p.Paced().Validate(); err != nil {
		t.Fatal(err)
	}
	faults, err := Parse("slowdown=0.5,reqlimit=1")
	if err != nil {
		t.Fatal(err)
	}
	if !faults.Paced().IsNone() {
		t.Fatalf("%+v paces something", faults.Paced())
	}
}
