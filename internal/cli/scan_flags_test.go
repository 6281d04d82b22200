package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

// TestStageFlagsOneDefinition walks every stage: the flags sluice run
// parses the stage's text with are the flags of its command (sluice scan
// for scan), the same names, shorthands, types, defaults and help. Only
// --cpuprofile differs: a piped stage profiles itself, sluice run the
// whole run.
func TestStageFlagsOneDefinition(t *testing.T) {
	root := newRootCommand()
	describe := func(fs *pflag.FlagSet) map[string]string {
		out := map[string]string{}
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Name != "cpuprofile" && f.Name != "help" {
				out[f.Name] = f.Shorthand + "|" + f.Value.Type() + "|" + f.DefValue + "|" + f.Usage
			}
		})
		return out
	}
	for _, d := range plan.Defs() {
		inRun := pflag.NewFlagSet(d.Name, pflag.ContinueOnError)
		d.Bind(inRun)
		var cli *cobra.Command
		for _, c := range root.Commands() {
			if c.Name() == d.Name {
				cli = c
			}
		}
		if cli == nil {
			t.Errorf("stage %s has no command of its own", d.Name)
			continue
		}
		a, b := describe(inRun), describe(cli.LocalFlags())
		if d.Name == "scan" {
			// sluice scan's own: where its batches go.
			for _, own := range []string{"output", "format", "quiet", "compression", "row-group-rows"} {
				if b[own] == "" {
					t.Errorf("sluice scan lacks --%s", own)
				}
				delete(b, own)
			}
		}
		for name, want := range a {
			if b[name] != want {
				t.Errorf("%s --%s: in run %q, as a command %q", d.Name, name, want, b[name])
			}
		}
		for name := range b {
			if _, ok := a[name]; !ok {
				t.Errorf("%s --%s: a flag of the command that run's stage lacks", d.Name, name)
			}
		}
		if d.Name == "scan" && (a["filter"] == "" || a["dict"] == "" || a["order"] == "" || a["sim"] == "" || a["stats"] == "") {
			t.Errorf("scan lacks a flag: %v", a)
		}
	}
}

// sortedLineitem writes lineitem sorted by l_shipdate into dir as a Parquet
// file of row groups of 2000 rows, as a table clustered by date is.
func sortedLineitem(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	st := store.New(store.NewMemDriver(), "mem://sorted/")
	if _, err := gen.Lineitem(ctx, st, "raw", gen.Options{Rows: 40_000, Files: 2, Seed: 11}); err != nil {
		t.Fatal(err)
	}
	var recs []arrow.RecordBatch
	open := func(ctx context.Context, u string) (*store.Store, string, error) {
		return st, strings.TrimPrefix(u, "mem://sorted/"), nil
	}
	err := exec.Run(ctx, exec.Pipeline{
		Source: exec.Scan([]string{"mem://sorted/raw/"}, exec.ScanOptions{}),
		Stages: []exec.Stage{exec.Sort([]exec.SortKey{{Column: "l_shipdate"}}), exec.Collect(nil, func(rec arrow.RecordBatch) error {
			rec.Retain()
			recs = append(recs, rec)
			return nil
		})},
	}, exec.Options{Open: open})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	dir := filepath.Join(t.TempDir(), "sorted")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("sort gave no batches")
	}
	for f, part := range [][]arrow.RecordBatch{recs} {
		var buf bytes.Buffer
		w, err := pqarrow.NewFileWriter(part[0].Schema(), &buf,
			parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(2000), parquet.WithStats(true), parquet.WithAllocator(memory.NewGoAllocator())),
			pqarrow.NewArrowWriterProperties())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range part {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%d.parquet", f)), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var (
	statsGroups = regexp.MustCompile(`from (\d+) row groups of (\d+) files \((\d+) row groups, (\d+) files pruned\)`)
	statsBytes  = regexp.MustCompile(`([\d.]+) MiB needed, ([\d.]+) MiB fetched \([\d.]+x\) in (\d+) requests`)
)

// TestFusedFilterPrunesAsScanFilter: over a dataset sorted by
// l_shipdate, run 'scan X | filter E | count-by l_returnflag' reads the
// row groups and fetches the bytes scan X --filter E --columns
// l_returnflag does (the columns the stages read, and no others), as
// --stats on both shows, and gives the rows scan's filter keeps.
func TestFusedFilterPrunesAsScanFilter(t *testing.T) {
	dir := sortedLineitem(t)
	const filter = "l_shipdate >= date '1998-06-01'"
	alone := sluice(t, nil, "scan", dir, "--filter", filter, "--columns", "l_returnflag", "--stats", "--concurrency", "1")
	fused := sluice(t, nil, "run", "scan "+dir+" --stats --concurrency 1 | filter \""+filter+"\" | count-by l_returnflag | to-csv")
	if alone.code != 0 || fused.code != 0 {
		t.Fatalf("scan: %+v\nrun: %+v", alone, fused)
	}
	ga, gf := statsGroups.FindStringSubmatch(alone.stderr), statsGroups.FindStringSubmatch(fused.stderr)
	ba, bf := statsBytes.FindStringSubmatch(alone.stderr), statsBytes.FindStringSubmatch(fused.stderr)
	if ga == nil || gf == nil || ba == nil || bf == nil {
		t.Fatalf("no statistics:\nscan: %s\nrun: %s", alone.stderr, fused.stderr)
	}
	if strings.Join(ga[1:], " ") != strings.Join(gf[1:], " ") || strings.Join(ba[1:3], " ") != strings.Join(bf[1:3], " ") {
		t.Fatalf("scan --filter: %s, %s\nrun's scan | filter: %s, %s", ga[0], ba[0], gf[0], bf[0])
	}
	if ga[3] == "0" {
		t.Fatalf("nothing pruned over a sorted dataset: %s", ga[0])
	}
	t.Logf("both: %s; %s", ga[0], ba[0])
	// The same rows: scan counts them, the fused pipeline counts them by flag.
	var n int64
	for _, line := range strings.Split(strings.TrimSpace(fused.stdout), "\n")[1:] {
		var flag string
		var c int64
		if _, err := fmt.Sscanf(line, "%1s,%d", &flag, &c); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		n += c
	}
	if want := strings.TrimSpace(alone.stdout); want != fmt.Sprintf("%d rows", n) {
		t.Fatalf("scan --filter counted %s, the pipeline %d rows", want, n)
	}
}

// TestScanFetchesWhatStagesRead: run 'scan X --stats | count-by
// l_returnflag' fetches what scan X --columns l_returnflag fetches, far
// less than every column, fused and fanned out, with the same result.
func TestScanFetchesWhatStagesRead(t *testing.T) {
	// Files larger than those a scan reads whole with their footers.
	dir := filepath.Join(t.TempDir(), "lineitem")
	if r := sluice(t, nil, "gen", "lineitem", "--rows", "200000", "--files", "2", "--out", dir, "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	all := sluice(t, nil, "scan", dir, "--stats")
	one := sluice(t, nil, "scan", dir, "--columns", "l_returnflag", "--stats")
	if all.code != 0 || one.code != 0 {
		t.Fatalf("scan: %+v\n%+v", all, one)
	}
	bAll, bOne := statsBytes.FindStringSubmatch(all.stderr), statsBytes.FindStringSubmatch(one.stderr)
	if bAll == nil || bOne == nil {
		t.Fatalf("no statistics: %s\n%s", all.stderr, one.stderr)
	}
	fetched := func(m []string) float64 { f, _ := strconv.ParseFloat(m[2], 64); return f }
	if fetched(bOne)*5 > fetched(bAll) {
		t.Fatalf("one column fetches %s MiB of all columns' %s MiB", bOne[2], bAll[2])
	}
	t.Logf("every column: %s; --columns l_returnflag: %s", bAll[0], bOne[0])
	var want string
	for _, workers := range []string{"", "2"} {
		args := []string{"run", "scan " + dir + " --stats | count-by l_returnflag | to-csv"}
		if workers != "" {
			args = append([]string{"run", "--workers", workers}, args[1:]...)
		}
		r := sluice(t, nil, args...)
		if r.code != 0 {
			t.Fatalf("%q: %+v", args, r)
		}
		b := statsBytes.FindStringSubmatch(r.stderr)
		if b == nil {
			t.Fatalf("%q: no statistics: %s", args, r.stderr)
		}
		if b[1] != bOne[1] || b[2] != bOne[2] {
			t.Errorf("%q: %s; scan --columns l_returnflag: %s", args, b[0], bOne[0])
		}
		if want == "" {
			want = r.stdout
		} else if r.stdout != want {
			t.Errorf("%q gives %q, fused %q", args, r.stdout, want)
		}
	}
	if strings.Count(want, "\n") != 4 {
		t.Errorf("count-by l_returnflag: %q", want)
	}
}

// TestRunScanTakesScanFlags: run's scan takes sluice scan's flags, and
// sluice scan takes --dict; the same mistake exits the same way from both.
func TestRunScanTakesScanFlags(t *testing.T) {
	dir := lineitemDir(t)
	r := sluice(t, nil, "run", "scan "+dir+" --filter \"l_shipdate <= '1998-09-02' and l_quantity < 10\" --order arrival --sim ttfb=1ms,stream=900MiB/s --dict l_returnflag --columns l_returnflag,l_quantity | count-by l_returnflag | to-csv")
	s := sluice(t, nil, "scan", dir, "--filter", "l_shipdate <= '1998-09-02' and l_quantity < 10", "--dict", "l_returnflag", "--columns", "l_returnflag,l_quantity", "--sim", "ttfb=1ms,stream=900MiB/s")
	if r.code != 0 || s.code != 0 {
		t.Fatalf("run: %+v\nscan: %+v", r, s)
	}
	var n int64
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
		var flag string
		var c int64
		if _, err := fmt.Sscanf(line, "%1s,%d", &flag, &c); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		n += c
	}
	if n == 0 || strings.TrimSpace(s.stdout) != fmt.Sprintf("%d rows", n) {
		t.Fatalf("run counted %d rows, scan %q", n, s.stdout)
	}
	for _, c := range []struct {
		args    []string
		mention string
	}{
		{[]string{"--filter", "nope = 1"}, `no column "nope"`},
		{[]string{"--columns", "nope"}, `no column "nope"`},
		{[]string{"--filter", "l_shipdate < 'soon'"}, "is not a date"},
		{[]string{"--dict", "l_quantity"}, "cannot be read as a dictionary"},
		{[]string{"--order", "sideways"}, "--order"},
		{[]string{"--sim", "warp=9"}, "warp"},
	} {
		assertCleanFailure(t, sluice(t, nil, append([]string{"scan", dir}, c.args...)...), exitUsage, c.mention)
		assertCleanFailure(t, sluice(t, nil, "run", "scan "+dir+" "+shellQuoteArgs(c.args)+" | head 1"), exitUsage, c.mention)
	}
	assertCleanFailure(t, sluice(t, nil, "run", "scan "+dir+" -o x.arrow | head 1"), exitUsage, "end it with write")

	// A file without a column the first file has is bad data, not a
	// mistake in the command: exit 1 from both.
	mixed := filepath.Join(t.TempDir(), "mixed")
	if r := sluice(t, nil, "gen", "taxi", "--rows", "100", "--files", "1", "--out", filepath.Join(mixed, "z"), "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	first, err := os.ReadFile(filepath.Join(dir, "part-00000.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mixed, "a.parquet"), first, 0o644); err != nil {
		t.Fatal(err)
	}
	assertCleanFailure(t, sluice(t, nil, "scan", mixed, "--columns", "l_orderkey"), exitError, "no column l_orderkey, which")
	assertCleanFailure(t, sluice(t, nil, "run", "scan "+mixed+" --columns l_orderkey | head 1"), exitError, "no column l_orderkey, which")
}

func shellQuoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// TestReadsRemote: a scan of S3 or through a modelled link gets a spare
// processor; a local one does not.
func TestReadsRemote(t *testing.T) {
	s3, err := sim.Parse("s3")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		urls []string
		p    sim.Profile
		want bool
	}{
		{[]string{"./data/lineitem"}, sim.Profile{}, false},
		{[]string{"file:///data/x.parquet", "mem://b/x"}, sim.Profile{}, false},
		{[]string{"./data", "s3://bucket/lineitem/"}, sim.Profile{}, true},
		{[]string{"./data/lineitem"}, s3, true},
	} {
		if got := readsRemote(c.urls, c.p); got != c.want {
			t.Errorf("%q, sim %v: %v, want %v", c.urls, c.p, got, c.want)
		}
	}
}
