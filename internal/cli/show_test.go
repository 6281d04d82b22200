package cli

import (
	"encoding/csv"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// showCells parses show's table back into its cells: the rule line under
// the header gives each column's extent.
func showCells(t *testing.T, table string) (header []string, rows [][]string) {
	t.Helper()
	lines := strings.Split(table, "\n")
	if len(lines) < 4 {
		t.Fatalf("not a table: %q", table)
	}
	var spans [][2]int
	for _, m := range regexp.MustCompile(`-+`).FindAllStringIndex(lines[2], -1) {
		spans = append(spans, [2]int{utf8.RuneCountInString(lines[2][:m[0]]), utf8.RuneCountInString(lines[2][:m[1]])})
	}
	cut := func(line string) []string {
		r := []rune(line)
		cells := make([]string, len(spans))
		for i, s := range spans {
			end := s[1]
			if i == len(spans)-1 || end > len(r) {
				end = len(r)
			}
			if s[0] < len(r) {
				cells[i] = strings.TrimSpace(string(r[s[0]:end]))
			}
		}
		return cells
	}
	header = cut(lines[0])
	for _, l := range lines[3:] {
		if strings.HasPrefix(l, "(") {
			break
		}
		rows = append(rows, cut(l))
	}
	return header, rows
}

// TestShowPrintsWhatToCSVPrints: show keeps the cells it prints past the
// batches they came from, which a stream reader reuses; run as its own
// process, from a file, piped in every SLUICE_PIPE mode and fused, it
// prints the values to-csv prints, over many batches.
func TestShowPrintsWhatToCSVPrints(t *testing.T) {
	dir := pipeData(t)
	for _, scan := range []string{
		"scan " + filepath.Join(dir, "taxi"),
		"scan " + filepath.Join(dir, "taxi") + " --dict payment_type",
		"scan " + filepath.Join(dir, "lineitem") + " --columns l_orderkey,l_quantity,l_extendedprice,l_returnflag,l_shipdate,l_shipinstruct,l_shipmode,l_comment",
	} {
		t.Run(scan[strings.LastIndex(scan, "/")+1:], func(t *testing.T) {
			r := sluice(t, nil, "run", scan+" | to-csv")
			if r.code != 0 {
				t.Fatalf("to-csv: %s", r.stderr)
			}
			want, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
			if err != nil || len(want) < 40001 {
				t.Fatalf("to-csv: %d records, %v", len(want), err)
			}
			stream, file := filepath.Join(t.TempDir(), "q.arrows"), filepath.Join(t.TempDir(), "q.arrow")
			for _, out := range []string{stream, file} {
				if r := sluice(t, nil, "run", scan+" | write "+out); r.code != 0 {
					t.Fatalf("write %s: %s", out, r.stderr)
				}
			}
			forms := map[string]func() ([]byte, string, int){
				"fused": func() ([]byte, string, int) {
					r := sluice(t, nil, "run", scan+" | show --rows 0")
					return []byte(r.stdout), r.stderr, r.code
				},
				"stream on stdin": func() ([]byte, string, int) { return bash(t, "sluice show --rows 0 < "+stream) },
				"file on stdin":   func() ([]byte, string, int) { return bash(t, "sluice show --rows 0 < "+file) },
			}
			for _, mode := range []string{"", "plain"} {
				forms["piped "+mode] = func() ([]byte, string, int) {
					return bashEnv(t, []string{"SLUICE_PIPE=" + mode}, "sluice "+scan+" -o - | sluice show --rows 0")
				}
			}
			for name, run := range forms {
				out, stderr, code := run()
				if code != 0 {
					t.Fatalf("%s: exit %d: %s", name, code, stderr)
				}
				header, rows := showCells(t, string(out))
				if strings.Join(header, ",") != strings.Join(want[0], ",") || len(rows) != len(want)-1 {
					t.Fatalf("%s: %d rows of %v, want %d of %v", name, len(rows), header, len(want)-1, want[0])
				}
				bad := 0
				for i, row := range rows {
					for c, v := range row {
						// show leaves out the zone of a UTC timestamp, and
						// a cell's edge spaces are the table's padding.
						w := strings.TrimSpace(strings.TrimSuffix(want[i+1][c], "Z"))
						if short, ok := strings.CutSuffix(v, "…"); ok {
							// A number show shortened: to-csv's, to 12 digits.
							x, errx := strconv.ParseFloat(short, 64)
							y, erry := strconv.ParseFloat(w, 64)
							if errx == nil && erry == nil && math.Abs(x-y) <= 1e-11*math.Abs(y) && short != w {
								continue
							}
						}
						if v != w {
							if bad++; bad <= 5 {
								t.Errorf("%s: row %d %s: show %q, to-csv %q", name, i, header[c], v, w)
							}
						}
					}
				}
				if bad > 0 {
					t.Errorf("%s: %d cells differ", name, bad)
				}
			}
		})
	}
}

// TestShowFloatsExactOrMarked: show prints a float exactly when that
// takes at most 15 digits, else rounded and marked with "…", never a
// rounded number that looks exact (12345678901234 was 12345678901200).
func TestShowFloatsExactOrMarked(t *testing.T) {
	out, stderr, code := bash(t, `printf 'y\n12345678901234\n0.30000000000000004\n1.5\n-7846.3599999999915\n' | sluice from-csv --types y=float64 | sluice show`)
	if code != 0 {
		t.Fatal(stderr)
	}
	cells := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		cells[strings.TrimSpace(l)] = true
	}
	for _, want := range []string{"12345678901234", "0.3…", "1.5", "-7846.36…"} {
		if !cells[want] {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}
