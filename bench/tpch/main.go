// Command tpch runs the 22 TPC-H queries of bench/tpch/queries three
// ways over the tables of `sluice gen tpch`: sluice's pipeline in one
// process (fused), the same with run --workers, and DuckDB with the
// specification's SQL (the bench/pipeline/duckdb helper; its time is its
// whole process, as in bench/pipeline). It checks that the three give the
// same rows in the same order, and prints each query's median wall, CPU
// and peak RSS of each, the ratios to DuckDB, and the geometric mean of
// fused/DuckDB wall. Run it from the repository root:
//
//	go run ./bench/tpch -sf 1 -runs 3
//
// -forms chooses which forms run (DuckDB always, as the reference) and
// -memory gives both sluice forms a run --memory budget, which at larger
// scale factors decides whether joins and aggregations spill:
//
//	go run ./bench/tpch -sf 10 -runs 1 -memory 1GiB -forms w,duckdb
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-data/sluice/internal/measure"
)

func main() {
	sf := flag.String("sf", "1", "TPC-H scale factor of the tables (generated if missing)")
	dir := flag.String("dir", "", "where the tables are (default: $TMPDIR/sluice-tpch-sf<SF>)")
	runs := flag.Int("runs", 3, "timed runs of each form; medians are reported")
	workers := flag.Int("workers", 4, "run --workers for the fanned-out form (0: leave it out)")
	only := flag.String("q", "", "comma-separated query numbers (default: all 22)")
	sluiceBin := flag.String("sluice", "", "the sluice binary (default: built from ./cmd/sluice)")
	memory := flag.String("memory", "", "run --memory for both sluice forms, such as 1GiB: the fused process's, each worker's with -workers (default: sluice's)")
	formList := flag.String("forms", "fused,w,duckdb", "comma-separated forms to run: fused, w (run --workers), duckdb (always: the reference)")
	flag.Parse()
	if *dir == "" {
		*dir = filepath.Join(os.TempDir(), "sluice-tpch-sf"+*sf)
	}
	if err := run(*sf, *dir, *runs, *workers, *only, *sluiceBin, *memory, *formList); err != nil {
		fmt.Fprintln(os.Stderr, "tpch:", err)
		os.Exit(1)
	}
}

// form is one way of running a query.
type form struct {
	name string
	cmd  func() *exec.Cmd
	// rows reads the form's output as rows of text.
	rows    func(out string) ([][]string, error)
	samples []measure.Sample
	out     string
}

func run(sf, dir string, runs, workers int, only, sluiceBin, memory, formList string) error {
	chosen := map[string]bool{}
	for _, f := range strings.Split(formList, ",") {
		f = strings.TrimSpace(f)
		if f != "fused" && f != "w" && f != "duckdb" {
			return fmt.Errorf("-forms %q: fused, w or duckdb", formList)
		}
		chosen[f] = true
	}
	if !chosen["duckdb"] {
		return fmt.Errorf("-forms %q: duckdb is needed to check the results against", formList)
	}
	runArgs := []string{"run"}
	if memory != "" {
		runArgs = append(runArgs, "--memory", memory)
	}
	sluice := func(args ...string) *exec.Cmd { return exec.Command(sluiceBin, slices.Concat(runArgs, args)...) }
	tmp, err := os.MkdirTemp("", "sluice-tpch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if sluiceBin == "" {
		sluiceBin = filepath.Join(tmp, "sluice")
		// As the README installs it: without cgo, whose runtime costs
		// every process's start.
		build := exec.Command("go", "build", "-o", sluiceBin, "./cmd/sluice")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build sluice (run from the repository root): %v\n%s", err, out)
		}
	}
	duckBin := filepath.Join(tmp, "duckdb")
	build := exec.Command("go", "build", "-tags", "duckdb_arrow", "-o", duckBin, ".")
	build.Dir = filepath.Join("bench", "pipeline", "duckdb")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the DuckDB helper: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "lineitem")); err != nil {
		fmt.Printf("generating TPC-H sf %s in %s\n", sf, dir)
		if out, err := exec.Command(sluiceBin, "gen", "tpch", "--sf", sf, "--out", dir).CombinedOutput(); err != nil {
			return fmt.Errorf("gen tpch: %v\n%s", err, out)
		}
	}
	queries := filepath.Join("bench", "tpch", "queries")
	var nums []int
	if only == "" {
		for i := 1; i <= 22; i++ {
			nums = append(nums, i)
		}
	} else {
		for _, f := range strings.Split(only, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > 22 {
				return fmt.Errorf("-q %q: query numbers 1 to 22", only)
			}
			nums = append(nums, n)
		}
	}
	mem := ""
	if memory != "" {
		mem = ", run --memory " + memory
	}
	fmt.Printf("TPC-H sf %s, %s%s; medians of %d runs, forms interleaved\n", sf, dir, mem, runs)
	fmt.Printf("%-4s %-8s %8s %8s %7s %10s %10s   %s\n", "q", "form", "wall s", "cpu s", "rss", "wall/duck", "cpu/duck", "result")
	var logSum float64
	var first string
	for _, n := range nums {
		pipe, err := os.ReadFile(filepath.Join(queries, fmt.Sprintf("q%02d.pipe", n)))
		if err != nil {
			return err
		}
		params := strings.NewReplacer("{dir}", dir, "{fraction}", fraction(sf))
		p := strings.TrimSpace(params.Replace(string(pipe))) + " | to-csv"
		query, err := os.ReadFile(filepath.Join(queries, fmt.Sprintf("q%02d.sql", n)))
		if err != nil {
			return err
		}
		sqlPath := filepath.Join(tmp, fmt.Sprintf("q%02d.sql", n))
		if err := os.WriteFile(sqlPath, []byte(params.Replace(string(query))), 0o644); err != nil {
			return err
		}
		var forms []*form
		if chosen["fused"] {
			forms = append(forms, &form{name: "fused", cmd: func() *exec.Cmd { return sluice(p) }, rows: csvRows})
		}
		if chosen["w"] && workers > 0 {
			forms = append(forms, &form{name: fmt.Sprintf("w%d", workers), cmd: func() *exec.Cmd {
				return sluice("--workers", strconv.Itoa(workers), p)
			}, rows: csvRows})
		}
		duck := &form{name: "duckdb", cmd: func() *exec.Cmd { return exec.Command(duckBin, "-sql", sqlPath, "-tables", dir) }, rows: tsvRows}
		forms = append(forms, duck)
		for r := range runs {
			for k := range forms {
				f := forms[(r+k)%len(forms)]
				s, out, err := measure.Run(f.cmd())
				if err != nil {
					return fmt.Errorf("q%02d %s: %w", n, f.name, err)
				}
				f.samples = append(f.samples, s)
				f.out = out
			}
		}
		want, err := duck.rows(duck.out)
		if err != nil {
			return fmt.Errorf("q%02d duckdb: %w", n, err)
		}
		d := measure.Median(duck.samples)
		for _, f := range forms {
			m := measure.Median(f.samples)
			verdict := "-"
			if f != duck {
				got, err := f.rows(f.out)
				if err != nil {
					return fmt.Errorf("q%02d %s: %w", n, f.name, err)
				}
				verdict = same(got, want)
			}
			fmt.Printf("q%02d  %-8s %8.3f %8.3f %6.0fM %10.2f %10.2f   %s\n", n, f.name, m.Wall, m.CPU, m.RSS/(1<<20), m.Wall/d.Wall, m.CPU/d.CPU, verdict)
		}
		logSum += math.Log(measure.Median(forms[0].samples).Wall / d.Wall)
		first = forms[0].name
	}
	// The first form's: fused, unless -forms leaves it out.
	if first != "duckdb" {
		fmt.Printf("geometric mean of %s/DuckDB wall over %d queries: %.2f\n", first, len(nums), math.Exp(logSum/float64(len(nums))))
	}
	return nil
}

func csvRows(out string) ([][]string, error) {
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) == 0 {
		return nil, fmt.Errorf("not CSV with a header: %v", err)
	}
	return rows[1:], nil
}

// tsvRows reads the DuckDB helper's rows, before its "elapsed" line.
func tsvRows(out string) ([][]string, error) {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.HasPrefix(line, "elapsed ") {
			return rows, nil
		}
		rows = append(rows, strings.Split(line, "\t"))
	}
	return nil, fmt.Errorf("no elapsed line")
}

// same says whether sluice's rows are DuckDB's: the same count and order,
// each value equal as text, null as DuckDB's <nil>, numbers within 1e-9
// relative (the engines add in different orders).
func same(got, want [][]string) string {
	if len(got) != len(want) {
		return fmt.Sprintf("DIFFERENT: %d rows, DuckDB %d", len(got), len(want))
	}
	for i := range got {
		if len(got[i]) != len(want[i]) {
			return fmt.Sprintf("DIFFERENT: row %d has %d values, DuckDB's %d", i+1, len(got[i]), len(want[i]))
		}
		for j, g := range got[i] {
			w := want[i][j]
			if g == w || g == "" && w == "<nil>" {
				continue
			}
			x, err1 := strconv.ParseFloat(g, 64)
			y, err2 := strconv.ParseFloat(w, 64)
			if err1 == nil && err2 == nil && math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y)) {
				continue
			}
			return fmt.Sprintf("DIFFERENT: row %d column %d: %q, DuckDB %q", i+1, j+1, g, w)
		}
	}
	return fmt.Sprintf("same %d rows", len(got))
}

// fraction is Q11's FRACTION for scale factor sf: 0.0001 / SF, as the
// specification says, so that the query keeps about as many parts at
// every scale (with SF 1's value, SF 10 keeps none).
func fraction(sf string) string {
	f, err := strconv.ParseFloat(sf, 64)
	if err != nil || f <= 0 {
		return "0.0001"
	}
	return strconv.FormatFloat(0.0001/f, 'g', -1, 64)
}
