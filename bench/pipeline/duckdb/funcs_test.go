package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// funcCases are sluice expressions and the same in DuckDB's SQL, over
// formsTable's columns (x and s have nulls).
var funcCases = []struct{ sluice, duckdb string }{
	// conditionals and casts
	{"case when x > 5 then 'hi' when x is null then 'none' else s end", ""},
	{"case id % 3 when 0 then 'zero' when 1 then 'one' end", ""},
	{"case when flag then x else id end", ""},
	{"case when x > 5 then null when flag then d else null end", ""},
	{"cast(x as integer)", ""},
	{"cast(x * 5 as integer)", ""},
	{"cast(x * 10 as bigint) + 1", ""},
	{"cast(id as varchar) || s", ""},
	{"cast(x as varchar)", ""},
	{"cast(d as varchar)", ""},
	{"cast(ts as varchar)", ""},
	{"cast(s as integer)", "try_cast(s as integer)"},
	{"cast(cast(id as varchar) as double) / 4", ""},
	{"cast(ts as date)", ""},
	{"cast(d as timestamp) < ts", ""},
	{"cast(flag as integer) + cast(cast(id % 2 as boolean) as integer)", ""},
	{"coalesce(x, id * 1.0)", ""},
	{"coalesce(s, 'none')", ""},
	{"nullif(id % 4, 0)", ""},
	{"nullif(s, 'bb')", ""},
	{"cast('  12 ' as integer) + cast(' 1.5 ' as double)", ""},
	{"cast(cast('2020-01-03 23:59:59.25' as timestamp) as varchar)", ""},
	{"cast(cast('1998-09-02' as date) as varchar) || cast(cast('T' as boolean) as varchar)", ""},
	{"'v' || (x * 1e16) || ' ' || (x * 1e15) || ' ' || (x / 7)", ""},
	// strings
	{"ltrim(s, 'b') || '|' || rtrim(s, 'c') || '|' || trim(s, 'ad')", ""},
	{"length('größe') + strpos('größe', 'e') + length(upper('straße'))", ""},
	{"lower('ÄB') || upper('äb')", ""},
	{"upper(s)", ""},
	{"lower(upper(s))", ""},
	{"length(s)", ""},
	{"substring(s, 2)", ""},
	{"substring(s, 2, 1)", ""},
	{"substring(s, -2, 1)", ""},
	{"substring(s, 0, 2)", ""},
	{"substring(s, -4, 3)", ""},
	{"substring(s, 3, -2)", ""},
	{"substring(s, id % 5 - 2, id % 3)", ""},
	{"trim(concat('  ', s, '  '))", ""},
	{"concat(s, '-', id)", ""},
	{"concat('v', x / 3, flag, d)", ""},
	{"'v' || (x * 1e-5)", ""},
	{"s || '-' || id", ""},
	{"replace(s, 'b', 'xy')", ""},
	{"strpos(s, 'c')", ""},
	{"regexp_matches(s, 'b+')", ""},
	{"regexp_matches(s, '^C', 'i')", ""},
	// dates and timestamps
	{"extract(year from d)", ""},
	{"extract(month from ts)", ""},
	{"extract(day from d)", ""},
	{"extract(hour from ts)", ""},
	{"extract(minute from ts)", ""},
	{"extract(second from ts)", ""},
	{"extract(dow from ts)", ""},
	{"extract(doy from d)", ""},
	{"extract(quarter from ts)", ""},
	{"extract(week from ts)", ""},
	{"year(ts) * 100 + month(d)", ""},
	{"date_trunc('month', d)", ""},
	{"date_trunc('week', d)", ""},
	{"cast(date_trunc('quarter', ts) as varchar)", ""},
	{"date_diff('week', date '1998-08-22', d)", ""},
	{"date_diff('week', ts, timestamp '2020-01-13 05:00:00')", ""},
	{"date_diff('quarter', date '1997-11-20', ts)", ""},
	{"extract(isodow from d) + extract(epoch from ts)", ""},
	{"extract(epoch from cast('2020-01-03 23:59:59.25' as timestamp))", ""},
	{"cast(date_trunc('hour', ts) as varchar)", ""},
	{"date_diff('day', d, date '1998-12-25')", ""},
	{"date_diff('month', d, ts)", ""},
	{"date_diff('hour', ts, timestamp '2020-01-05 12:30:00')", ""},
	{"date_diff('year', d, ts)", ""},
	{"(date '1998-01-21' + id) + interval '1' month", "(date '1998-01-21' + cast(id as integer)) + interval 1 month"},
	{"(date '1996-02-20' + id) - interval '1' year", "(date '1996-02-20' + cast(id as integer)) - interval 1 year"},
	{"cast(ts + interval '2' month as varchar)", "cast(ts + interval 2 month as varchar)"},
	// numbers
	{"round(x)", ""},
	{"round(x * 1.2345, 2)", ""},
	{"round(id, -1)", ""},
	{"floor(x - 4.95)", ""},
	{"ceil(x - 4.95)", ""},
	{"sqrt(x)", ""},
	{"ln(x + 1)", ""},
	{"power(x, 2)", ""},
	{"mod(id, 7)", ""},
	{"mod(x, 3)", ""},
	{"abs(x - 5)", ""},
	{"(id + 1) / (id % 3) - (id + 1) / -(id % 3)", ""},
	{"cast(x * 10 as integer) % (id % 2)", ""},
}

// TestFunctions: every function of sluice's expressions gives DuckDB's
// values and nulls, computed by extend in one process (sluice run, also
// with --workers 2 and --threads 2), by extend as its own command between
// pipes, and by select.
func TestFunctions(t *testing.T) {
	db := openDB(t)
	file := filepath.Join(t.TempDir(), "forms.parquet")
	if _, err := db.Exec(fmt.Sprintf(formsTable, file)); err != nil {
		t.Fatal(err)
	}
	var items, names, sqls []string
	for i, c := range funcCases {
		q := c.duckdb
		if q == "" {
			q = c.sluice
		}
		name := fmt.Sprintf("c%d", i)
		items = append(items, c.sluice+" as "+name)
		names = append(names, name)
		sqls = append(sqls, q+" AS "+name)
	}
	want := duck(t, db, fmt.Sprintf("SELECT id, %s FROM read_parquet('%s') ORDER BY id", strings.Join(sqls, ", "), file))
	list, cols := strings.Join(items, ", "), "id,"+strings.Join(names, ",")

	check := func(form string, got [][]string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, DuckDB %d", form, len(got), len(want))
		}
		for j := 1; j < len(want[0]); j++ {
			for i := range want {
				if len(got[i]) != len(want[i]) {
					t.Fatalf("%s: row %d has %d columns, DuckDB's %d", form, i, len(got[i]), len(want[i]))
				}
				if !same(got[i][j], want[i][j]) {
					t.Errorf("%s: %s: row %d (id %s): sluice %q, DuckDB %q", form, funcCases[j-1].sluice, i, want[i][0], got[i][j], want[i][j])
					break
				}
			}
		}
	}
	check("fused extend", sluiceCSV(t, fmt.Sprintf(`scan %s | extend "%s" | select %s`, file, list, cols)))
	check("fused select", sluiceCSV(t, fmt.Sprintf(`scan %s | select "id, %s"`, file, list)))
	for _, opt := range []string{"--workers", "--threads"} {
		rows, err := csv.NewReader(strings.NewReader(sluice(t, "run", opt, "2", fmt.Sprintf(`scan %s | extend "%s" | select %s | to-csv`, file, list, cols)))).ReadAll()
		if err != nil || len(rows) == 0 {
			t.Fatalf("run %s 2: %d lines, %v", opt, len(rows), err)
		}
		check("fused extend, "+opt+" 2", rows[1:])
	}
	check("piped extend", pipeCSV(t, []string{"scan", file, "-o", "-"}, []string{"extend", list}, []string{"select", cols}, []string{"to-csv"}))
}

// pipeCSV runs sluice commands each reading the one before's output, the
// last writing CSV, and returns its rows without the header.
func pipeCSV(t *testing.T, cmds ...[]string) [][]string {
	t.Helper()
	var procs []*exec.Cmd
	var errs []*bytes.Buffer
	var out bytes.Buffer
	for i, args := range cmds {
		c := exec.Command(sluiceBin, args...)
		e := new(bytes.Buffer)
		c.Stderr = e
		if i > 0 {
			r, err := procs[i-1].StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			c.Stdin = r
		}
		procs, errs = append(procs, c), append(errs, e)
	}
	procs[len(procs)-1].Stdout = &out
	for _, c := range procs {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].Wait(); err != nil {
			t.Fatalf("sluice %q: %v: %s", cmds[i], err, errs[i])
		}
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("%v: %d lines, %v", cmds, len(rows), err)
	}
	return rows[1:]
}
