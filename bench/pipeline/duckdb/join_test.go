package main

import (
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeJoinSide writes rows of CSV text as a Parquet file of several row
// groups, through sluice, and returns its path.
func writeJoinSide(t *testing.T, dir, name, header, types string, rows []string) string {
	t.Helper()
	csvPath := filepath.Join(dir, name+".csv")
	if err := os.WriteFile(csvPath, []byte(header+"\n"+strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name+".parquet")
	sluice(t, "run", fmt.Sprintf("from-csv --types %s %s | write --row-group-rows 4000 %s", types, csvPath, out))
	return out
}

// TestJoins: every kind of join, with and without a condition besides the
// keys, gives DuckDB's rows over sides with duplicate keys, null keys and
// no rows; fused, piped and with --workers 4 (the right side broadcast,
// or both sides shuffled) give the same rows in the same order.
func TestJoins(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(29, 1))
	key := func(lo, n int) string {
		if rng.IntN(20) == 0 {
			return "" // null
		}
		return fmt.Sprint(lo + rng.IntN(n))
	}
	var lrows, rrows []string
	for i := range 20000 {
		lrows = append(lrows, fmt.Sprintf("%s,L%d,%d", key(0, 3000), i, i))
	}
	for i := range 3000 {
		rrows = append(rrows, fmt.Sprintf("%s,R%d,%d", key(1500, 3000), i, rng.IntN(100)))
	}
	l := writeJoinSide(t, dir, "l", "k,s,v", "k=int64,s=string,v=int64", lrows)
	r := writeJoinSide(t, dir, "r", "k2,b,w", "k2=int64,b=string,w=int64", rrows)
	db := openDB(t)
	sides := []struct{ name, left, right, lsql, rsql string }{
		{"both", "scan " + l, "scan " + r, fmt.Sprintf("read_parquet('%s')", l), fmt.Sprintf("read_parquet('%s')", r)},
		{"empty right", "scan " + l, "scan " + r + " --filter 'w < 0'", fmt.Sprintf("read_parquet('%s')", l), fmt.Sprintf("(select * from read_parquet('%s') where w < 0)", r)},
		{"empty left", "scan " + l + " --filter 'v < 0'", "scan " + r, fmt.Sprintf("(select * from read_parquet('%s') where v < 0)", l), fmt.Sprintf("read_parquet('%s')", r)},
	}
	for _, side := range sides {
		for _, how := range []string{"inner", "left", "right", "full", "semi", "anti"} {
			for _, where := range []string{"", "v % 3 <> 0 or w > 50"} {
				t.Run(fmt.Sprintf("%s/%s/%q", side.name, how, where), func(t *testing.T) {
					stage := fmt.Sprintf("join (%s) --on k=k2 --how %s", side.right, how)
					on := "l.k = r.k2"
					if where != "" {
						stage += fmt.Sprintf(" --where '%s'", where)
						on += " and (" + where + ")"
					}
					cols := "l.k, l.s, l.v, r.k2, r.b, r.w"
					if how == "semi" || how == "anti" {
						cols = "l.*"
					}
					q := fmt.Sprintf("select %s from %s l %s join %s r on %s", cols, side.lsql, how, side.rsql, on)
					want := duck(t, db, q)
					fusedRows := sluiceCSV(t, side.left+" | "+stage)
					compareCSV(t, "fused", fusedRows, want)
					if len(want) == 0 && how == "inner" && side.name == "both" {
						t.Fatal("no rows: the data has no matches")
					}
					// A right side many times the join's memory spills, and
					// gives the same rows in the same order. 32 KiB holds a
					// part with its table (part 0 takes the null keys too),
					// not the side: some 300 KB with its table.
					if spilled := sluiceCSV(t, side.left+" | "+stage+" --memory 32KiB"); !slices.EqualFunc(spilled, fusedRows, slices.Equal) {
						t.Errorf("join --memory 32KiB gave %d rows, in memory %d, or another order", len(spilled), len(fusedRows))
					}
					// The right side broadcast by the driver (right and full
					// joins then run in the driver), or both sides shuffled
					// and joined by reducers, in memory and spilled.
					for _, form := range [][]string{{"--join", "broadcast"}, {"--join", "partitioned"}, {"--join", "partitioned", "spilled"}} {
						text := side.left + " | " + stage
						if form[len(form)-1] == "spilled" {
							form, text = form[:2], text+" --memory 32KiB"
						}
						args := append([]string{"run", "--workers", "4", "--piece-size", "16KiB"}, form...)
						workers := csvRows(t, sluice(t, append(args, text+" | to-csv")...))
						if !slices.EqualFunc(workers, fusedRows, slices.Equal) {
							t.Errorf("--workers 4 %s gave %d rows, fused %d, or another order", strings.Join(form, " "), len(workers), len(fusedRows))
						}
					}
					// Piped: the join as a command of its own, its right side
					// given as pipeline text.
					sh := fmt.Sprintf("%s run %q | %s join %q --on k=k2 --how %s", sluiceBin, side.left, sluiceBin, side.right, how)
					if where != "" {
						sh += fmt.Sprintf(" --where %q", where)
					}
					sh += " | " + sluiceBin + " to-csv"
					out, err := exec.Command("sh", "-c", sh).CombinedOutput()
					if err != nil {
						t.Fatalf("%s: %v\n%s", sh, err, out)
					}
					if piped := csvRows(t, string(out)); !slices.EqualFunc(piped, fusedRows, slices.Equal) {
						t.Errorf("piped gave %d rows, fused %d, or another order", len(piped), len(fusedRows))
					}
				})
			}
		}
	}
	// A key both sides name alike is in the output once; in a full join
	// it takes the value of whichever side the row has.
	got := sluiceCSV(t, fmt.Sprintf("scan %s | join (scan %s | rename k2=k) --on k --how full", l, r))
	want := duck(t, db, fmt.Sprintf("select coalesce(l.k, r.k2), l.s, l.v, r.b, r.w from read_parquet('%s') l full join read_parquet('%s') r on l.k = r.k2", l, r))
	compareCSV(t, "full join on a shared name", got, want)
}

func csvRows(t *testing.T, out string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("not CSV with a header: %v", err)
	}
	return rows[1:]
}
