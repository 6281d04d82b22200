//go:build duckdb_arrow

package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// aggTable has 20000 rows in row groups of 1000 (so run --workers has
// pieces to fan out): g five groups and null; n, x, s, d, ts values with
// about a tenth null each; s about 3000 distinct strings per group, past
// approx_count_distinct's exact range.
const aggTable = `COPY (
  SELECT i::BIGINT AS id,
    CASE WHEN i %% 13 = 0 THEN NULL ELSE 'g' || (i %% 5) END AS g,
    CASE WHEN i %% 11 = 0 THEN NULL ELSE (i * 7919) %% 997 - 300 END::BIGINT AS n,
    CASE WHEN i %% 9 = 0 THEN NULL ELSE ((i * 104729) %% 100003) / 7.0 + 1e6 END::DOUBLE AS x,
    CASE WHEN i %% 7 = 0 THEN NULL ELSE 'v' || ((i * 31) %% 15013) END AS s,
    CASE WHEN i %% 17 = 0 THEN NULL ELSE DATE '1990-01-01' + ((i * 37) %% 9000)::INTEGER END AS d,
    CASE WHEN i %% 19 = 0 THEN NULL ELSE TIMESTAMP '2020-01-01' + ((i * 53) %% 100000) * INTERVAL 1 MINUTE END AS ts,
    (i * 3) %% 4 AS k
  FROM range(20000) t(i) ORDER BY i
) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE 1000)`

// TestAggregatesAgainstDuckDB: every aggregate of agg-by beyond the
// first five, and the distinct stage, give DuckDB's answers over data
// with nulls, fused and with run --workers 2. median and quantile are
// DuckDB's quantile_cont; any_value is the first non-null value in
// dataset order; approx_count_distinct is within 5% of the exact count
// (its sketch is not DuckDB's).
func TestAggregatesAgainstDuckDB(t *testing.T) {
	db := openDB(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "aggs.parquet")
	if _, err := db.Exec(fmt.Sprintf(aggTable, file)); err != nil {
		t.Fatal(err)
	}
	from := fmt.Sprintf("read_parquet('%s')", file)
	forms := map[string]func(pipeline string) [][]string{
		"fused": func(p string) [][]string { return sluiceCSV(t, p) },
		"piped": func(p string) [][]string { return pipedCSV(t, p) },
		"--workers 2": func(p string) [][]string {
			return csvRows(t, sluice(t, "run", "--workers", "2", "--piece-size", "64KiB", "--store", filepath.Join(dir, "jobs")+"/", p+" | to-csv"))
		},
	}
	cases := []struct{ name, pipeline, sql string }{
		{"count distinct, quantiles, variances",
			`scan ` + file + ` | agg-by g "count(distinct n) as cdn, count(distinct s) as cds, count(DISTINCT x) as cdx, count(distinct d) as cdd, ` +
				`median(x) as mx, median(n) as mn, quantile(x, 0.9) as qx, quantile(n, 0.25) as qn, quantile(x, 0) as q0, quantile(x, 1) as q1, ` +
				`stddev(x) as sx, stddev_samp(n) as sn, stddev_pop(x) as spx, stddev_pop(n) as spn, ` +
				`variance(x) as vx, var_samp(n) as vn, var_pop(x) as vpx, var_pop(n) as vpn"`,
			`SELECT g, count(DISTINCT n), count(DISTINCT s), count(DISTINCT x), count(DISTINCT d),
			   median(x), median(n), quantile_cont(x, 0.9), quantile_cont(n, 0.25), quantile_cont(x, 0), quantile_cont(x, 1),
			   stddev(x), stddev_samp(n), stddev_pop(x), stddev_pop(n), variance(x), var_samp(n), var_pop(x), var_pop(n)
			 FROM ` + from + ` GROUP BY g ORDER BY g NULLS LAST`},
		{"quantile_disc",
			`scan ` + file + ` | agg-by g "quantile_disc(x, 0.9) as a, quantile_disc(n, 0.25) as b, quantile_disc(x, 0) as c, quantile_disc(n, 1) as d, quantile_disc(n, 0.5) as e"`,
			`SELECT g, quantile_disc(x, 0.9), quantile_disc(n, 0.25), quantile_disc(x, 0), quantile_disc(n, 1), quantile_disc(n, 0.5)
			 FROM ` + from + ` GROUP BY g ORDER BY g NULLS LAST`},
		{"min, max, any_value",
			`scan ` + file + ` | agg-by g "min(s), max(s), min(d), max(d), min(ts) as mints, max(ts) as maxts, any_value(s), any_value(n), any_value(x), any_value(d)"`,
			`SELECT g, min(s), max(s), min(d), max(d), strftime(min(ts), '%Y-%m-%d %H:%M:%S'), strftime(max(ts), '%Y-%m-%d %H:%M:%S'),
			   first(s ORDER BY id) FILTER (WHERE s IS NOT NULL), first(n ORDER BY id) FILTER (WHERE n IS NOT NULL),
			   first(x ORDER BY id) FILTER (WHERE x IS NOT NULL), first(d ORDER BY id) FILTER (WHERE d IS NOT NULL)
			 FROM ` + from + ` GROUP BY g ORDER BY g NULLS LAST`},
		{"small groups: one value, no values",
			`scan ` + file + ` | filter "id < 40" | agg-by id "median(x) as m, stddev(x) as s, var_pop(x) as vp, count(distinct x) as c, any_value(x) as a"`,
			`SELECT id, median(x), stddev(x), var_pop(x), count(DISTINCT x), first(x ORDER BY id) FILTER (WHERE x IS NOT NULL)
			 FROM ` + from + ` WHERE id < 40 GROUP BY id ORDER BY id`},
		{"distinct",
			`scan ` + file + ` | select g,k | distinct`,
			`SELECT DISTINCT g, k FROM ` + from + ` ORDER BY g NULLS LAST, k NULLS LAST`},
		{"distinct --on",
			`scan ` + file + ` | distinct --on g,k | select id,g,k,n,s`,
			`SELECT DISTINCT ON (g, k) id, g, k, n, s FROM ` + from + ` ORDER BY g NULLS LAST, k NULLS LAST, id`},
		{"distinct --on a column with nulls",
			`scan ` + file + ` | distinct --on n | select n,id,s`,
			`SELECT DISTINCT ON (n) n, id, s FROM ` + from + ` ORDER BY n NULLS LAST, id`},
	}
	for _, c := range cases {
		want := duck(t, db, c.sql)
		if len(want) < 4 {
			t.Fatalf("%s: DuckDB gave %d rows: the data does not exercise it", c.name, len(want))
		}
		for form, run := range forms {
			compare(t, c.name+" ("+form+")", run(c.pipeline), want)
		}
	}

	// approx_count_distinct against the exact count.
	want := duck(t, db, `SELECT g, count(DISTINCT s), count(DISTINCT n), count(DISTINCT x) FROM `+from+` GROUP BY g ORDER BY g NULLS LAST`)
	for form, run := range forms {
		got := run(`scan ` + file + ` | agg-by g "approx_count_distinct(s) as a, approx_count_distinct(n) as b, approx_count_distinct(x) as c"`)
		if len(got) != len(want) {
			t.Fatalf("approx_count_distinct (%s): %d groups, want %d", form, len(got), len(want))
		}
		for i := range got {
			for j := 1; j < 4; j++ {
				est, _ := strconv.ParseFloat(got[i][j], 64)
				exact, _ := strconv.ParseFloat(want[i][j], 64)
				if exact <= 512 && est != exact || exact > 512 && (est < 0.95*exact || est > 1.05*exact) {
					t.Errorf("approx_count_distinct (%s): group %s column %d: %v, exactly %v", form, got[i][0], j, est, exact)
				}
			}
		}
	}

	// approx_quantile (a DDSketch, not DuckDB's t-digest) within 1% of
	// the value at rank q*(n-1), which is what the sketch estimates.
	fracs := []float64{0.01, 0.5, 0.9, 0.99}
	var items, exact []string
	for i, q := range fracs {
		items = append(items, fmt.Sprintf("approx_quantile(x, %v) as x%d, approx_quantile(n, %v) as n%d", q, i, q, i))
		for _, c := range []string{"x", "n"} {
			exact = append(exact, fmt.Sprintf("list_sort(list(%[1]s) FILTER (WHERE %[1]s IS NOT NULL))[floor(%[2]v * (count(%[1]s) - 1))::BIGINT + 1]", c, q))
		}
	}
	want = duck(t, db, `SELECT g, `+strings.Join(exact, ", ")+` FROM `+from+` GROUP BY g ORDER BY g NULLS LAST`)
	for form, run := range forms {
		got := run(`scan ` + file + ` | agg-by g "` + strings.Join(items, ", ") + `"`)
		if len(got) != len(want) || len(want) < 4 {
			t.Fatalf("approx_quantile (%s): %d groups, want %d", form, len(got), len(want))
		}
		for i := range got {
			for j := 1; j < len(got[i]); j++ {
				est, err1 := strconv.ParseFloat(got[i][j], 64)
				exact, err2 := strconv.ParseFloat(want[i][j], 64)
				if err1 != nil || err2 != nil || math.Abs(est-exact) > 0.01*math.Abs(exact) {
					t.Errorf("approx_quantile (%s): group %s column %d: %q, exactly %q", form, got[i][0], j, got[i][j], want[i][j])
				}
			}
		}
	}
}
