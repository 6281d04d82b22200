package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/icebergtest"
)

// TestIcebergScan reads an Iceberg table as a user would: scan, run and
// show of its location or its metadata file, a snapshot by id or by time,
// its rows written out and read back; and refuses what does not fit, in
// one line each.
func TestIcebergScan(t *testing.T) {
	dir := t.TempDir()
	steps := icebergtest.Fixture(t, dir)
	loc := filepath.Join(dir, "db", "t")
	last := steps[len(steps)-1]
	rows := func(n int) string { return strconv.Itoa(n) + " rows\n" }

	if r := sluice(t, nil, "scan", loc); r.code != 0 || r.stdout != rows(len(last.Rows)) {
		t.Fatalf("scan of the table's location: exit %d, %q (want %q); %s", r.code, r.stdout, rows(len(last.Rows)), r.stderr)
	}
	for _, st := range steps {
		for _, args := range [][]string{
			{"scan", st.Metadata},
			{"scan", loc, "--snapshot", strconv.FormatInt(st.ID, 10)},
			{"scan", loc + "/", "--as-of", st.At.UTC().Format(time.RFC3339Nano)},
		} {
			if r := sluice(t, nil, args...); r.code != 0 || r.stdout != rows(len(st.Rows)) {
				t.Errorf("%s (%s): exit %d, %q, want %q; %s", strings.Join(args, " "), st.What, r.code, r.stdout, rows(len(st.Rows)), r.stderr)
			}
		}
	}

	// A fused pipeline, and the same through a pipe, give the same rows.
	q := "scan " + loc + " --columns region,id --filter 'id >= 20' | count-by region | sort --by region | to-csv"
	fused := sluice(t, nil, "run", q)
	if fused.code != 0 {
		t.Fatalf("run %s: %s", q, fused.stderr)
	}
	want := regionsFrom20(last.Rows)
	var wantCSV strings.Builder
	wantCSV.WriteString("region,count\n")
	regions := make([]string, 0, len(want))
	for k := range want {
		regions = append(regions, k)
	}
	slices.Sort(regions)
	for _, k := range regions {
		wantCSV.WriteString(k + "," + strconv.Itoa(want[k]) + "\n")
	}
	if fused.stdout != wantCSV.String() {
		t.Errorf("run %s:\n%s\nwant (from iceberg-go's rows):\n%s", q, fused.stdout, wantCSV.String())
	}
	piped, stderr, code := runCmd(t, "", nil, "bash", "-c", "set -o pipefail; "+sluiceBin+" scan "+loc+" --columns region,id --filter 'id >= 20' -o - | "+
		sluiceBin+" count-by region | "+sluiceBin+" sort --by region | "+sluiceBin+" to-csv")
	if code != 0 || string(piped) != fused.stdout {
		t.Errorf("piped (exit %d, %s):\n%s\nfused:\n%s", code, stderr, piped, fused.stdout)
	}

	// Fanned out, a data file a task, with its deletes: one process's rows,
	// for the table's location, a snapshot of it and the catalog's table.
	fanned := sluice(t, nil, "run", "--workers", "2", q)
	if fanned.code != 0 || fanned.stdout != fused.stdout {
		t.Errorf("run --workers 2: exit %d\n%s\nwant\n%s%s", fanned.code, fanned.stdout, fused.stdout, fanned.stderr)
	}
	old := steps[2]
	q2 := "scan " + loc + " --snapshot " + strconv.FormatInt(old.ID, 10) + " --filter 'n < 900' | count-by region | sort --by region | to-csv"
	one, two := sluice(t, nil, "run", q2), sluice(t, nil, "run", "--workers", "3", q2)
	if one.code != 0 || two.code != 0 || one.stdout != two.stdout || !strings.HasPrefix(one.stdout, "region,count\n") {
		t.Errorf("snapshot %d fused (exit %d):\n%s\nfanned out (exit %d):\n%s%s%s", old.ID, one.code, one.stdout, two.code, two.stdout, one.stderr, two.stderr)
	}

	// Written out as Parquet, the rows read back as a plain dataset.
	out := filepath.Join(t.TempDir(), "t.parquet")
	if r := sluice(t, nil, "scan", loc, "-o", out); r.code != 0 {
		t.Fatalf("scan -o: %s", r.stderr)
	}
	if r := sluice(t, nil, "scan", out); r.stdout != rows(len(last.Rows)) {
		t.Errorf("the table written to Parquet reads %q, want %q", r.stdout, rows(len(last.Rows)))
	}
	// The current schema: extra added, label dropped.
	if r := sluice(t, nil, "show", loc, "--rows", "3"); r.code != 0 || strings.Contains(r.stdout, "label") || !strings.Contains(r.stdout, "extra") {
		t.Errorf("show of the table: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Through a REST catalog, with a token from client credentials.
	cat := icebergtest.RESTCatalog(t, map[string]string{"db.t": last.Metadata}, "sluice", "s3cret")
	creds := []string{"SLUICE_ICEBERG_CREDENTIAL=sluice:s3cret"}
	if r := sluice(t, creds, "scan", "--catalog", cat.URL+"?warehouse=main", "db.t"); r.code != 0 || r.stdout != rows(len(last.Rows)) {
		t.Errorf("scan --catalog: exit %d, %q, want %q; %s", r.code, r.stdout, rows(len(last.Rows)), r.stderr)
	}
	for _, w := range []string{"0", "2"} {
		viaCatalog := sluice(t, creds, "run", "--workers", w, strings.Replace(q, "scan "+loc, "scan db.t --catalog "+cat.URL, 1))
		if viaCatalog.code != 0 || viaCatalog.stdout != fused.stdout {
			t.Errorf("run --workers %s through the catalog: exit %d\n%s\nwant\n%s%s", w, viaCatalog.code, viaCatalog.stdout, fused.stdout, viaCatalog.stderr)
		}
	}
	assertBadInputs(t, []string{"SLUICE_ICEBERG_CREDENTIAL=sluice:wrong"}, t.TempDir(), []badInput{
		{"a wrong catalog secret", []string{"scan", "--catalog", cat.URL, "db.t"}, exitPermission, "invalid client credentials"},
	})
	assertBadInputs(t, creds, t.TempDir(), []badInput{
		{"a table the catalog lacks", []string{"scan", "--catalog", cat.URL, "db.nope"}, exitNotFound, "Table does not exist: db.nope"},
		{"a table without its namespace", []string{"scan", "--catalog", cat.URL, "t"}, exitUsage, "NAMESPACE.TABLE"},
	})

	// A table whose metadata is not JSON, and one whose manifest list is
	// gone.
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "v1.metadata.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	noList := filepath.Join(t.TempDir(), "v9.metadata.json")
	md, err := os.ReadFile(last.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(noList, []byte(strings.ReplaceAll(string(md), "/snap-", "/gone-snap-")), 0o644); err != nil {
		t.Fatal(err)
	}
	assertBadInputs(t, nil, t.TempDir(), []badInput{
		{"no such snapshot", []string{"scan", loc, "--snapshot", "12"}, exitUsage, "no snapshot 12"},
		{"before the first snapshot", []string{"scan", loc, "--as-of", "2001-01-01"}, exitUsage, "no snapshot was current at 2001-01-01T00:00:00Z"},
		{"a time that is not one", []string{"scan", loc, "--as-of", "yesterday"}, exitUsage, "--as-of"},
		{"both", []string{"scan", loc, "--as-of", "2001-01-01", "--snapshot", "3"}, exitUsage, "give one"},
		{"a snapshot of bare Parquet", []string{"run", "scan " + out + " --snapshot 3 | head 1"}, exitUsage, "not one"},
		{"an unknown column", []string{"scan", loc, "--columns", "nope"}, exitUsage, "nope"},
		{"metadata that is not JSON", []string{"scan", filepath.Join(bad, "v1.metadata.json")}, exitError, "not table metadata"},
		{"a manifest list gone", []string{"scan", noList}, exitNotFound, "gone-snap-"},
		{"a prefix that is not a table", []string{"scan", bad + "/", "--snapshot", "3"}, exitUsage, "this is not one"},
	})

	// Last, as it breaks the table: a manifest cut short, and a column of a
	// type this sluice does not read.
	manifests, _ := filepath.Glob(filepath.Join(loc, "metadata", "*-m*.avro"))
	if len(manifests) == 0 {
		t.Fatal("no manifests in the fixture")
	}
	for _, m := range manifests {
		if err := os.Truncate(m, 300); err != nil {
			t.Fatal(err)
		}
	}
	variant := filepath.Join(t.TempDir(), "v1.metadata.json")
	if err := os.WriteFile(variant, []byte(strings.Replace(string(md), `"type":"long","id":1,"name":"id"`, `"type":"variant","id":1,"name":"id"`, -1)), 0o644); err != nil {
		t.Fatal(err)
	}
	assertBadInputs(t, nil, t.TempDir(), []badInput{
		{"a manifest cut short", []string{"scan", loc}, exitError, "unexpected EOF"},
		{"a type not read", []string{"scan", variant}, exitError, "type variant is not read"},
	})
}

// TestIcebergServeFlight serves a warehouse holding an Iceberg table and
// fetches the table with sluice get, whole and projected and filtered:
// the rows are iceberg-go's current reading of it (deletes applied, the
// current schema). The table through a REST catalog is the same; a table
// that is not there is one line, and get's not-found exit.
func TestIcebergServeFlight(t *testing.T) {
	dir := t.TempDir()
	steps := icebergtest.Fixture(t, dir)
	last := steps[len(steps)-1]
	t.Setenv("SLUICE_ICEBERG_CREDENTIAL", "sluice:s3cret")
	cat := icebergtest.RESTCatalog(t, map[string]string{"db.t": last.Metadata}, "sluice", "s3cret")
	addr := startServe(t, dir, "--catalog", cat.URL)
	out := t.TempDir()

	whole := filepath.Join(out, "whole.parquet")
	if r := sluice(t, nil, "get", addr, "db/t", "-o", whole, "-q"); r.code != 0 {
		t.Fatalf("get of the table: exit %d; %s", r.code, r.stderr)
	}
	if r := sluice(t, nil, "scan", whole); r.stdout != strconv.Itoa(len(last.Current))+" rows\n" {
		t.Errorf("the table fetched holds %q, iceberg-go reads %d rows", r.stdout, len(last.Current))
	}
	if r := sluice(t, nil, "show", whole, "--rows", "1"); strings.Contains(r.stdout, "label") || !strings.Contains(r.stdout, "extra") {
		t.Errorf("the table fetched is not in its current schema:\n%s", r.stdout)
	}

	want := regionsFrom20(last.Current)
	wantCSV := "region,count\n"
	for _, k := range []string{"ap", "eu", "us"} {
		wantCSV += k + "," + strconv.Itoa(want[k]) + "\n"
	}
	for _, ds := range []string{"db/t/", "db.t"} {
		part := filepath.Join(out, strings.ReplaceAll(ds, "/", "-")+".arrow")
		if r := sluice(t, nil, "get", addr, ds, "--columns", "region,id", "--filter", "id >= 20", "-o", part, "-q"); r.code != 0 {
			t.Fatalf("get %s, projected and filtered: exit %d; %s", ds, r.code, r.stderr)
		}
		r := sluice(t, nil, "run", "scan "+part+" | count-by region | sort --by region | to-csv")
		if r.code != 0 || r.stdout != wantCSV {
			t.Errorf("get %s --filter 'id >= 20', counted by region (exit %d):\n%s\nwant (from iceberg-go's rows):\n%s%s", ds, r.code, r.stdout, wantCSV, r.stderr)
		}
	}
	bad := t.TempDir()
	assertBadInputs(t, nil, bad, []badInput{
		{"a table not there", []string{"get", addr, "db/nope/metadata/v1.metadata.json", "-o", filepath.Join(bad, "x.parquet")}, exitNotFound, "v1.metadata.json"},
		{"a table the catalog lacks", []string{"get", addr, "db.nope", "-o", filepath.Join(bad, "x.parquet")}, exitNotFound, "Table does not exist: db.nope"},
	})
}

// regionsFrom20 counts, by region, the rows of id 20 or more among
// iceberg-go's readings (cells "name=value").
func regionsFrom20(rows []string) map[string]int {
	want := map[string]int{}
	for _, r := range rows {
		v := map[string]string{}
		for _, cell := range strings.Fields(r) {
			k, val, _ := strings.Cut(cell, "=")
			v[k] = val
		}
		if id, _ := strconv.Atoi(v["id"]); id >= 20 {
			want[v["region"]]++
		}
	}
	return want
}
