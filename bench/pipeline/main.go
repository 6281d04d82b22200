// Command pipeline is the pipeline benchmark: query A (sum of trip
// distance by pickup date over taxi, top 9) and query B (TPC-H Q1's
// shape over lineitem), each run fused in one sluice process, piped
// through separate sluice processes connected by OS pipes as a shell
// connects them (each process runs its own stage and passes batches
// through shared memory), piped with SLUICE_PIPE=plain (the Arrow IPC
// stream itself through the pipes), and both in
// DuckDB over the same files when its helper (./duckdb, a module of its
// own) builds. It prints the median of several runs of each and the
// ratios, measured in the same run; for DuckDB also the time of the query
// alone (inside its process, after start-up), its system time and page
// faults beside fused sluice's, and whether the two printed the same rows.
//
//	go run ./bench/pipeline -runs 7
//	go run ./bench/pipeline -dir /data/bench -taxi-rows 20000000 -lineitem-rows 20000000
//
// Data is generated with sluice gen into -dir unless it is there already.
// Taxi has 48M rows by default (792 MiB of Parquet): at 6M rows query A
// takes about 0.1 s fused, so the start of four processes and their
// footer reads would weigh as much as the pipes; bsv's example ran over
// far more. Lineitem is TPC-H scale factor 1 (6M rows), which query B
// takes long enough over.
//
// Before timing, each form runs once (warm page cache), and every form's
// result is checked: fused and piped must print the same table (and
// DuckDB's rows are compared with it, numbers to the digits sluice show
// prints; a difference is reported, not fatal). The
// piped forms' processes are connected by pipes from here, with one
// standard error as in a shell, so the CPU time of each process is known;
// beside it is what moving the same bytes through plain pipes costs with
// no work at all, the floor of the plain form's extra cost.
//
// -exec measures only what the exec stage costs (exec.go): each query
// with a select after its scan, sluice's own against exec -- sluice select.
//
//	go run ./bench/pipeline -exec -taxi-rows 6000000 -lineitem-rows 3000000
//
// Then the Parquet write comparison (write.go): -write-rows rows of
// lineitem, all columns, written with snappy by sluice and by DuckDB
// from the same Arrow data in memory; -queries=false runs only that.
//
//	go run ./bench/pipeline -queries=false -runs 5
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-data/sluice/internal/measure"
)

// The queries, as stage texts: the fused form joins them with | in sluice
// run; the piped form runs the first with sluice run (scan is not a
// stage command of its own) and each other as sluice STAGE.
//
// Each stage is its words, as a shell would pass them. Query B's scan
// reads the two flag columns as dictionaries (--dict), in both forms.
// DuckDB runs the same query in SQL over the same files, told nothing
// about how to read them.
var queries = []query{
	{name: "A", dataset: "taxi", duckdb: "a", stages: [][]string{
		{"scan", "{taxi}", "--columns", "pickup_date,trip_distance"},
		{"sum-by", "pickup_date", "trip_distance"},
		{"top", "9", "--by", "trip_distance", "--desc"},
		{"show"},
	}},
	{name: "B", dataset: "lineitem", duckdb: "b", stages: [][]string{
		{"scan", "{lineitem}", "--dict", "l_returnflag,l_linestatus", "--columns", "l_returnflag,l_linestatus,l_quantity,l_extendedprice,l_discount,l_tax,l_shipdate"},
		{"filter", "l_shipdate <= date '1998-09-02'"},
		{"agg-by", "l_returnflag,l_linestatus", "sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price, " +
			"sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, " +
			"mean(l_quantity) as avg_qty, mean(l_extendedprice) as avg_price, mean(l_discount) as avg_disc, count() as count_order"},
		{"show"},
	}},
}

type query struct {
	name, dataset, duckdb string
	stages                [][]string
}

// text is a stage as sluice run reads it.
func text(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shellQuote(w)
	}
	return strings.Join(q, " ")
}

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "sluice-pipeline-bench"), "where the datasets are (generated if missing)")
	taxiRows := flag.Int64("taxi-rows", 48_000_000, "rows of taxi to generate")
	lineitemRows := flag.Int64("lineitem-rows", 6_000_000, "rows of lineitem to generate (6M is TPC-H scale factor 1)")
	files := flag.Int("files", 8, "files per dataset")
	runs := flag.Int("runs", 5, "timed runs of each form; medians are reported")
	sluiceBin := flag.String("sluice", "", "the sluice binary (default: built from ./cmd/sluice)")
	duck := flag.Bool("duckdb", true, "compare queries A and B with DuckDB (builds ./bench/pipeline/duckdb)")
	queries := flag.Bool("queries", true, "run queries A and B (-queries=false: only the write comparison)")
	writeRows := flag.Int64("write-rows", 2_000_000, "rows of lineitem for the Parquet write comparison with DuckDB (0: none)")
	execOnly := flag.Bool("exec", false, "measure only what the exec stage costs: queries A and B with a select after the scan, sluice's own against exec -- sluice select")
	flag.Parse()
	if err := run(*dir, *taxiRows, *lineitemRows, *files, *runs, *sluiceBin, *duck && !*execOnly, *queries, *writeRows, *execOnly); err != nil {
		fmt.Fprintln(os.Stderr, "pipeline:", err)
		os.Exit(1)
	}
}

func run(dir string, taxiRows, lineitemRows int64, files, runs int, sluiceBin string, duck, doQueries bool, writeRows int64, execOnly bool) error {
	tmp, err := os.MkdirTemp("", "sluice-pipeline-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if sluiceBin == "" {
		sluiceBin = filepath.Join(tmp, "sluice")
		// As the README installs it: without cgo, whose runtime costs
		// every piped stage's start.
		build := exec.Command("go", "build", "-o", sluiceBin, "./cmd/sluice")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build sluice (run from the repository root): %v\n%s", err, out)
		}
	}
	duckBin, duckWhy := "", "not asked for (-duckdb=false)"
	if duck {
		duckBin = filepath.Join(tmp, "duckdb")
		// duckdb_arrow: DuckDB's Arrow interface, for the write comparison.
		cmd := exec.Command("go", "build", "-tags", "duckdb_arrow", "-o", duckBin, ".")
		cmd.Dir = filepath.Join("bench", "pipeline", "duckdb")
		if out, err := cmd.CombinedOutput(); err != nil {
			duckBin, duckWhy = "", "its helper did not build: "+firstLine(string(out))
		}
	}
	// A dataset of each size has a directory of its own, so a run with
	// other sizes never reads data of the wrong size.
	paths := map[string]string{}
	for _, ds := range []struct {
		name string
		rows int64
	}{{"taxi", taxiRows}, {"lineitem", lineitemRows}} {
		out := filepath.Join(dir, fmt.Sprintf("%s-%d-rows-%d-files", ds.name, ds.rows, files))
		paths[ds.name] = out
		if _, err := os.Stat(out); err == nil || (!doQueries && ds.name == "taxi") {
			continue
		}
		fmt.Fprintf(os.Stderr, "generating %s (%d rows, %d files) in %s\n", ds.name, ds.rows, files, out)
		gen := exec.Command(sluiceBin, "gen", ds.name, "--rows", fmt.Sprint(ds.rows), "--files", fmt.Sprint(files), "--out", out, "-q")
		gen.Stderr = os.Stderr
		if err := gen.Run(); err != nil {
			return fmt.Errorf("gen %s: %w", ds.name, err)
		}
	}

	if execOnly {
		return execOverhead(sluiceBin, paths, runs)
	}
	if !doQueries {
		if writeRows <= 0 {
			return nil
		}
		return writeComparison(sluiceBin, duckBin, duckWhy, paths["lineitem"], tmp, writeRows, runs)
	}
	perByte := pipeCost()
	fmt.Printf("pipeline benchmark: %d runs each, medians; %d cores (GOMAXPROCS %d); taxi %d rows, lineitem %d rows, %d files each, in %s\n",
		runs, runtime.NumCPU(), runtime.GOMAXPROCS(0), taxiRows, lineitemRows, files, dir)
	fmt.Printf("%-6s %-8s %10s %10s %9s %9s %12s %12s\n", "query", "form", "wall s", "cpu s", "max RSS", "pipe MiB", "wall/fused", "cpu/fused")
	for _, q := range queries {
		stages := make([][]string, len(q.stages))
		texts := make([]string, len(q.stages))
		for i, s := range q.stages {
			for _, w := range s {
				stages[i] = append(stages[i], strings.NewReplacer("{taxi}", paths["taxi"], "{lineitem}", paths["lineitem"]).Replace(w))
			}
			texts[i] = text(stages[i])
		}
		fusedArgs := []string{"run", strings.Join(texts, " | ")}
		// The piped form: sluice run SCAN | sluice STAGE | ...
		pipedArgs := append([][]string{{"run", texts[0]}}, stages[1:]...)
		fused := func() (sample, string, error) { return measure.Run(exec.Command(sluiceBin, fusedArgs...)) }
		pipe := func(env ...string) (sample, string, error) {
			s, _, out, err := measurePipeline(sluiceBin, pipedArgs, env...)
			return s, out, err
		}

		// Warm up, and check the two forms agree.
		_, fout, err := fused()
		if err != nil {
			return fmt.Errorf("query %s fused: %w", q.name, err)
		}
		_, pout, err := pipe()
		if err != nil {
			return fmt.Errorf("query %s piped: %w", q.name, err)
		}
		if fout != pout {
			return fmt.Errorf("query %s: fused and piped results differ:\n%s\n%s", q.name, fout, pout)
		}
		_, lout, err := pipe(plainEnv)
		if err != nil {
			return fmt.Errorf("query %s piped, %s: %w", q.name, plainEnv, err)
		}
		if fout != lout {
			return fmt.Errorf("query %s: fused and piped (%s) results differ:\n%s\n%s", q.name, plainEnv, fout, lout)
		}
		pipeBytes := streamBytes(sluiceBin, texts)

		// DuckDB, when it runs this query, takes its turn in the same
		// rounds, so all three forms see the same load on a shared
		// machine; the order rotates from round to round.
		var duckRun func() (sample, string, error)
		agree := ""
		if q.duckdb != "" && duckBin != "" {
			glob := filepath.Join(paths[q.dataset], "*.parquet")
			duckRun = func() (sample, string, error) {
				return measure.Run(exec.Command(duckBin, "-query", q.duckdb, "-files", glob))
			}
			_, dout, err := duckRun()
			if err != nil {
				return fmt.Errorf("query %s in DuckDB: %w", q.name, err)
			}
			agree = sameAsDuckDB(fout, dout)
		}
		var fs, ps, ls, ds []sample
		var inner []float64
		byStage := make([][]sample, len(stages))
		byStagePlain := make([][]sample, len(stages))
		forms := []func() error{
			func() error {
				s, _, err := fused()
				fs = append(fs, s)
				return err
			},
			func() error {
				s, each, _, err := measurePipeline(sluiceBin, pipedArgs)
				ps = append(ps, s)
				for i, e := range each {
					byStage[i] = append(byStage[i], e)
				}
				return err
			},
			func() error {
				s, each, _, err := measurePipeline(sluiceBin, pipedArgs, plainEnv)
				ls = append(ls, s)
				for i, e := range each {
					byStagePlain[i] = append(byStagePlain[i], e)
				}
				return err
			},
		}
		if duckRun != nil {
			forms = append(forms, func() error {
				s, out, err := duckRun()
				ds = append(ds, s)
				var secs float64
				if i := strings.LastIndex(out, "elapsed "); i >= 0 {
					fmt.Sscanf(out[i:], "elapsed %f", &secs)
				}
				inner = append(inner, secs)
				return err
			})
		}
		for r := range runs {
			for k := range forms {
				if err := forms[(r+k)%len(forms)](); err != nil {
					return err
				}
			}
		}
		f, p, l := median(fs), median(ps), median(ls)
		fmt.Printf("%-6s %-8s %10.3f %10.3f %8.0fM %9s %12s %12s\n", q.name, "fused", f.Wall, f.CPU, f.RSS/(1<<20), "-", "1.00", "1.00")
		fmt.Printf("%-6s %-8s %10.3f %10.3f %8.0fM %9.1f %12.2f %12.2f   (round by round: wall %.2f; each process its own stage, batches through shared memory)\n", q.name, "piped", p.Wall, p.CPU, p.RSS/(1<<20),
			float64(pipeBytes)/(1<<20), p.Wall/f.Wall, p.CPU/f.CPU, pairedRatio(ps, fs))
		fmt.Printf("%-6s %-8s %10.3f %10.3f %8.0fM %9.1f %12.2f %12.2f   (round by round: wall %.2f; %s: the Arrow IPC stream through the pipes)\n", q.name, "plain", l.Wall, l.CPU, l.RSS/(1<<20),
			float64(pipeBytes)/(1<<20), l.Wall/f.Wall, l.CPU/f.CPU, pairedRatio(ls, fs), plainEnv)
		for _, form := range []struct {
			name string
			st   [][]sample
		}{{"piped", byStage}, {"plain", byStagePlain}} {
			var parts, where []string
			for i, st := range form.st {
				m := median(st)
				name := stages[i][0]
				if i == 0 {
					name = "run " + name
				}
				parts = append(parts, fmt.Sprintf("%s %.3f (sys %.3f)", name, m.CPU, m.Sys))
				where = append(where, fmt.Sprintf("%s %.0fk faults %.0fk switches", name, m.Faults/1e3, m.Switches/1e3))
			}
			fmt.Printf("%-6s %-8s cpu s by process: %s\n", q.name, form.name, strings.Join(parts, ", "))
			fmt.Printf("%-6s %-8s by process: %s; fused: sys %.3f, %.0fk faults %.0fk switches\n", q.name, form.name, strings.Join(where, ", "),
				f.Sys, f.Faults/1e3, f.Switches/1e3)
		}
		floor := perByte * float64(pipeBytes)
		fmt.Printf("%-6s %-8s moving %.0f MiB through plain pipes alone costs %.3f cpu s: plain pipes >= fused + that = %.2fx fused cpu\n",
			q.name, "floor", float64(pipeBytes)/(1<<20), floor, (f.CPU+floor)/f.CPU)
		if q.duckdb == "" {
			continue
		}
		if duckRun == nil {
			fmt.Printf("%-6s %-8s DuckDB not measured: %s\n", q.name, "duckdb", duckWhy)
			continue
		}
		d := median(ds)
		slices.Sort(inner)
		fmt.Printf("%-6s %-8s %10.3f %10.3f %8.0fM %9s %12.2f %12.2f   (fused/DuckDB wall %.2f, round by round %.2f, cpu %.2f, max RSS %.2f; DuckDB's query alone %.3f s)\n",
			q.name, "duckdb", d.Wall, d.CPU, d.RSS/(1<<20), "-", d.Wall/f.Wall, d.CPU/f.CPU, f.Wall/d.Wall, pairedRatio(fs, ds), f.CPU/d.CPU, f.RSS/d.RSS, inner[len(inner)/2])
		fmt.Printf("%-6s %-8s sys %.3f (%.0f %% of cpu), %.0fk faults; fused: sys %.3f (%.0f %% of cpu), %.0fk faults; results: %s\n",
			q.name, "duckdb", d.Sys, 100*d.Sys/d.CPU, d.Faults/1e3, f.Sys, 100*f.Sys/f.CPU, f.Faults/1e3, agree)
	}
	if writeRows > 0 {
		return writeComparison(sluiceBin, duckBin, duckWhy, paths["lineitem"], tmp, writeRows, runs)
	}
	return nil
}

// sameAsDuckDB compares sluice show's table with DuckDB's rows (tab
// separated): the same rows, each value equal, numbers to 11
// significant digits (show prints 12 of a number it shortens).
func sameAsDuckDB(show, duck string) string {
	lines := strings.Split(strings.TrimSpace(show), "\n")
	if len(lines) < 4 {
		return "sluice printed no table"
	}
	rows := lines[3 : len(lines)-1] // header, types, rule; "(N rows)" last
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(duck), "\n") {
		if !strings.HasPrefix(l, "elapsed ") {
			want = append(want, l)
		}
	}
	if len(rows) != len(want) {
		return fmt.Sprintf("DIFFER: %d rows, DuckDB %d", len(rows), len(want))
	}
	for i := range rows {
		a, b := strings.Fields(rows[i]), strings.Split(want[i], "\t")
		if len(a) != len(b) {
			return fmt.Sprintf("DIFFER: row %d has %d values, DuckDB's %d", i+1, len(a), len(b))
		}
		for j := range a {
			// show marks a number it shortened with "…".
			x, errx := strconv.ParseFloat(strings.TrimSuffix(a[j], "…"), 64)
			y, erry := strconv.ParseFloat(b[j], 64)
			switch {
			case errx == nil && erry == nil:
				if math.Abs(x-y) > 1e-11*max(math.Abs(x), math.Abs(y)) {
					return fmt.Sprintf("DIFFER: row %d: %s, DuckDB %s", i+1, a[j], b[j])
				}
			case a[j] != b[j]:
				return fmt.Sprintf("DIFFER: row %d: %s, DuckDB %s", i+1, a[j], b[j])
			}
		}
	}
	return fmt.Sprintf("the same %d rows as DuckDB's", len(rows))
}

// pairedRatio is the median over rounds of a's wall time over b's in the
// same round: steadier than a ratio of medians when the machine's load
// drifts.
func pairedRatio(a, b []sample) float64 {
	r := make([]float64, min(len(a), len(b)))
	for i := range r {
		r[i] = a[i].Wall / b[i].Wall
	}
	slices.Sort(r)
	return r[len(r)/2]
}

// sample is one run of a command: wall seconds, CPU seconds (user and
// system, of the command and every process it waited for; sys is the
// system part), the largest resident set among them, and the page faults
// and context switches they took (on these VMs a fault on fresh memory
// and a wakeup each cost microseconds: they are where much of the system
// time goes).
type sample = measure.Sample

// plainEnv makes piped stages pass the Arrow IPC stream itself through
// the pipes instead of handing batches off through shared memory.
const plainEnv = "SLUICE_PIPE=plain"

// measurePipeline runs bin with each of stages as its arguments, each
// process's stdout piped to the next one's stdin, as a shell pipeline
// does, with env added to the environment. The total is the wall time of the whole, the sum of the CPU
// times and the largest resident set; each is every process's own.
func measurePipeline(bin string, stages [][]string, env ...string) (total sample, each []sample, out string, err error) {
	var stdout, errb bytes.Buffer
	cmds := make([]*exec.Cmd, len(stages))
	var closers []*os.File
	defer func() {
		for _, f := range closers {
			f.Close()
		}
	}()
	// One standard error for all, as a shell's pipeline has.
	er, ew, err := os.Pipe()
	if err != nil {
		return total, nil, "", err
	}
	errDone := make(chan struct{})
	go func() {
		io.Copy(&errb, er)
		er.Close()
		close(errDone)
	}()
	closers = append(closers, ew)
	var prev *os.File
	for i, args := range stages {
		c := exec.Command(bin, args...)
		c.Env = append(os.Environ(), env...)
		c.Stderr = ew
		if prev != nil {
			c.Stdin = prev
		}
		if i == len(stages)-1 {
			c.Stdout = &stdout
		} else {
			r, w, err := os.Pipe()
			if err != nil {
				return total, nil, "", err
			}
			closers = append(closers, r, w)
			c.Stdout = w
			prev = r
		}
		cmds[i] = c
	}
	start := time.Now()
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			return total, nil, "", err
		}
	}
	// Only the children hold the pipes now, so each sees its input end.
	for _, f := range closers {
		f.Close()
	}
	closers = nil
	var firstErr, waitErr error
	var failed *exec.Cmd
	for _, c := range cmds {
		if err := c.Wait(); err != nil && waitErr == nil {
			waitErr, failed = err, c
		}
	}
	total.Wall = time.Since(start).Seconds()
	<-errDone
	if waitErr != nil {
		firstErr = fmt.Errorf("%s: %v: %s", strings.Join(failed.Args, " "), waitErr, firstLine(errb.String()))
	}
	if firstErr != nil {
		return total, nil, "", firstErr
	}
	for _, c := range cmds {
		s := measure.Usage(c.ProcessState)
		each = append(each, s)
		total.CPU += s.CPU
		total.Sys += s.Sys
		total.RSS = max(total.RSS, s.RSS)
		total.Faults += s.Faults
		total.Switches += s.Switches
	}
	return total, each, stdout.String(), nil
}

// pipeCost is the CPU seconds per byte of moving bytes through a pipe
// on this machine with nothing else to do: written in 512 KiB pieces
// (about a column of a batch) into a 1 MiB pipe (sluice grows its pipes
// to that) and read out, both sides counted. The best of a few tries.
func pipeCost() float64 {
	const total = 256 << 20
	best := 0.0
	for range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			return 0
		}
		growPipe(w)
		var before, after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, 1<<20)
			for {
				if _, err := r.Read(buf); err != nil {
					return
				}
			}
		}()
		buf := make([]byte, 512<<10)
		for i := range buf {
			buf[i] = byte(i)
		}
		for n := 0; n < total; n += len(buf) {
			w.Write(buf)
		}
		w.Close()
		<-done
		r.Close()
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		cpu := time.Duration(after.Utime.Nano() - before.Utime.Nano() + after.Stime.Nano() - before.Stime.Nano()).Seconds()
		if best == 0 || cpu < best {
			best = cpu
		}
	}
	return best / total
}

func median(s []sample) sample { return measure.Median(s) }

// streamBytes is what the piped form sends through its pipes: the IPC
// stream after each stage but the last.
func streamBytes(bin string, stages []string) int64 {
	var total int64
	for i := 1; i < len(stages); i++ {
		cmd := exec.CommandContext(context.Background(), bin, "run", strings.Join(stages[:i], " | "))
		n := &counter{}
		cmd.Stdout = n
		if err := cmd.Run(); err != nil && !errors.Is(err, os.ErrClosed) {
			return -1
		}
		total += n.n
	}
	return total
}

type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func firstLine(s string) string { return measure.FirstLine(s) }

// growPipe asks for a 1 MiB pipe buffer, as sluice does for its pipes
// (F_SETPIPE_SZ; where there is none, the pipe stays as it is).
func growPipe(f *os.File) {
	const fSetPipeSize = 1031
	_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), fSetPipeSize, 1<<20)
}
