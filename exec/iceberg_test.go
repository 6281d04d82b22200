package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/internal/icebergtest"
	"github.com/sluice-data/sluice/scan"
)

// TestIcebergTable reads every snapshot of the fixture, whole and
// filtered, by metadata file, by the table's location and by time, and
// checks each against iceberg-go's own reading: deletes of both kinds
// applied, columns by field id through a rename, a promotion, an added
// column and a reused name.
func TestIcebergTable(t *testing.T) {
	dir := t.TempDir()
	steps := icebergtest.Fixture(t, dir)
	location := filepath.Join(dir, "db", "t")
	ctx := context.Background()
	read := func(t *testing.T, url string, opts ScanOptions) []string {
		t.Helper()
		mem := checkedMem(t)
		var rows []string
		err := Run(ctx, Pipeline{Source: Scan([]string{url}, opts), Stages: []Stage{Collect(nil, func(rec arrow.RecordBatch) error {
			rows = append(rows, icebergtest.NamedRows(rec)...)
			return nil
		})}}, Options{Open: testOpen, Mem: mem, Workers: 2})
		if err != nil {
			t.Fatalf("scan %s: %v", url, err)
		}
		slices.Sort(rows)
		return rows
	}
	for i, st := range steps {
		t.Run(fmt.Sprintf("%d %s", i, st.What), func(t *testing.T) {
			if len(st.Rows) == 0 {
				t.Fatal("iceberg-go read no rows: the fixture is wrong")
			}
			// The small batches cut files into several, so that deleted
			// positions fall past the first batch of a row group.
			got := read(t, st.Metadata, ScanOptions{BatchRows: 16})
			if !slices.Equal(got, st.Current) {
				t.Errorf("snapshot %d by its metadata file: %d rows, iceberg-go %d\n%s", st.ID, len(got), len(st.Current), diffRows(got, st.Current))
			}
			if got := read(t, location, ScanOptions{Snapshot: st.ID}); !slices.Equal(got, st.Rows) {
				t.Errorf("snapshot %d by --snapshot: %d rows, iceberg-go %d", st.ID, len(got), len(st.Rows))
			}
			if got := read(t, location, ScanOptions{AsOf: st.At}); !slices.Equal(got, st.Rows) {
				t.Errorf("snapshot %d by --as-of %s: %d rows, iceberg-go %d", st.ID, st.At, len(got), len(st.Rows))
			}
			for text, want := range st.Filtered {
				if got := read(t, location, ScanOptions{Snapshot: st.ID, Filter: text}); !slices.Equal(got, want) {
					t.Errorf("snapshot %d filtered %q: %d rows, iceberg-go %d\n%s", st.ID, text, len(got), len(want), diffRows(got, want))
				}
			}
		})
	}
	// The manifests' bounds rule out files: another region's, and those
	// of the second append for ids below 40; their rows are still right.
	for _, c := range []struct {
		step   int
		filter string
	}{{1, "id < 40"}, {5, "region = 'eu'"}, {5, "n >= 1200"}} {
		var st scan.Stats
		reported := 0
		st2 := steps[c.step]
		got := read(t, st2.Metadata, ScanOptions{Filter: c.filter, Stats: func(_ string, s scan.Stats) { st, reported = s, reported+1 }})
		if reported != 1 || st.FilesPruned == 0 || st.Files <= st.FilesPruned {
			t.Errorf("snapshot %d filtered %q: %d reports, %d of %d files pruned", st2.ID, c.filter, reported, st.FilesPruned, st.Files)
		}
		if want := st2.Filtered[c.filter]; !slices.Equal(got, want) || st.Rows != int64(len(want)) {
			t.Errorf("snapshot %d filtered %q, pruned: %d rows (stats say %d), iceberg-go %d", st2.ID, c.filter, len(got), st.Rows, len(want))
		}
	}
	last := steps[len(steps)-1]
	if got := read(t, location, ScanOptions{}); !slices.Equal(got, last.Current) {
		t.Errorf("the table's location reads %d rows, its current state %d\n%s", len(got), len(last.Current), diffRows(got, last.Current))
	}
	// The last change dropped label, which an equality delete compares:
	// the current reading has no label, and the delete still holds.
	if slices.ContainsFunc(last.Current, func(r string) bool { return strings.Contains(r, "label=") }) ||
		slices.ContainsFunc(last.Current, func(r string) bool { return strings.Contains(r, "id=3 ") }) {
		t.Fatal("the fixture's last state shows label, or the row whose name an equality delete deleted")
	}
	// What the bare-Parquet reading showed: deleted rows.
	deleted := 0
	for _, r := range steps[1].Rows {
		if !slices.Contains(last.Rows, r) && strings.Contains(r, "id=7 ") {
			deleted++
		}
	}
	if deleted == 0 && !slices.ContainsFunc(steps[1].Rows, func(r string) bool { return strings.Contains(r, "id=7 ") }) {
		t.Fatal("the fixture's delete of id 7 is not there to see")
	}
	if slices.ContainsFunc(last.Rows, func(r string) bool { return strings.Contains(r, "id=7 ") }) {
		t.Fatal("iceberg-go still reads id 7 after its delete")
	}
}

// diffRows is the first rows two sorted lists differ by.
func diffRows(got, want []string) string {
	var b strings.Builder
	extra, missing := 0, 0
	for _, r := range got {
		if !slices.Contains(want, r) && extra < 5 {
			fmt.Fprintf(&b, "  extra:   %s\n", r)
			extra++
		}
	}
	for _, r := range want {
		if !slices.Contains(got, r) && missing < 5 {
			fmt.Fprintf(&b, "  missing: %s\n", r)
			missing++
		}
	}
	return b.String()
}

// TestIcebergMigratedFiles reads a table whose first files were added as
// they were (no region column: the table's identity partition, whose
// values are in the manifest) and a column added since with an initial
// default: a migrated file's region is its partition's value (null in the
// null partition), and score its initial default, in every row of the
// files that predate them, whole, projected, filtered on either, and
// fanned out's way (a task as a job spec carries it, through JSON).
func TestIcebergMigratedFiles(t *testing.T) {
	m := icebergtest.MigratedTable(t, t.TempDir())
	ctx := context.Background()
	read := func(t *testing.T, opts ScanOptions) []string {
		t.Helper()
		mem := checkedMem(t)
		var rows []string
		err := Run(ctx, Pipeline{Source: Scan([]string{m.Location}, opts), Stages: []Stage{Collect(nil, func(rec arrow.RecordBatch) error {
			rows = append(rows, icebergtest.NamedRows(rec)...)
			return nil
		})}}, Options{Open: testOpen, Mem: mem})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(rows)
		return rows
	}
	project := func(rows []string, keep func(string) bool, cols ...string) []string {
		var out []string
		for _, r := range rows {
			if !keep(r) {
				continue
			}
			var cells []string
			for _, c := range strings.Fields(r) {
				name, _, _ := strings.Cut(c, "=")
				if cols == nil || slices.Contains(cols, name) {
					cells = append(cells, c)
				}
			}
			out = append(out, strings.Join(cells, " "))
		}
		slices.Sort(out)
		return out
	}
	all := func(string) bool { return true }
	// iceberg-go fills the default and leaves the partition values out:
	// sluice's reading differs from it in those rows alone.
	if got := read(t, ScanOptions{}); !slices.Equal(got, m.Want) {
		t.Errorf("the table: %d rows\n%s", len(got), diffRows(got, m.Want))
	}
	noRegion := func(r string) bool { return !strings.Contains(r, "name=m") }
	if want := project(m.Want, noRegion); !slices.Equal(project(m.IcebergGo, noRegion), want) ||
		!slices.Equal(project(m.IcebergGo, all, "id", "name", "score"), project(m.Want, all, "id", "name", "score")) {
		t.Errorf("iceberg-go reads otherwise than the fixture says, beyond the migrated files' regions:\n%s", diffRows(m.IcebergGo, m.Want))
	}
	for _, c := range []struct {
		opts ScanOptions
		want []string
	}{
		{ScanOptions{Columns: []string{"region", "score"}}, project(m.Want, all, "region", "score")},
		{ScanOptions{Filter: "region = 'us'"}, project(m.Want, func(r string) bool { return strings.Contains(r, "region=us") })},
		{ScanOptions{Columns: []string{"id"}, Filter: "score = 7 and region is null"},
			project(m.Want, func(r string) bool { return strings.Contains(r, "score=7") && strings.Contains(r, "region=(null)") }, "id")},
	} {
		if len(c.want) == 0 {
			t.Fatalf("%+v: no rows to want", c.opts)
		}
		if got := read(t, c.opts); !slices.Equal(got, c.want) {
			t.Errorf("columns %q, filter %q: %d rows\n%s", c.opts.Columns, c.opts.Filter, len(got), diffRows(got, c.want))
		}
	}
	// A fanned-out task carries the values planned, through JSON.
	p, err := PlanTable(ctx, testOpen, m.Location, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, task := range p.Tasks {
		b, err := json.Marshal(task)
		if err != nil {
			t.Fatal(err)
		}
		var back iceberg.Task
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		back.File.Partition = nil // as a job spec carries it
		got = append(got, read(t, ScanOptions{Tasks: []iceberg.Task{back}})...)
	}
	slices.Sort(got)
	if !slices.Equal(got, m.Want) {
		t.Errorf("task by task, through JSON: %d rows\n%s", len(got), diffRows(got, m.Want))
	}
}

// TestIcebergDeletesMemory: the delete files a scan holds whole count
// against its memory: past half of it the scan fails, in one line that
// says so, with nothing left allocated; within it the rows are right.
func TestIcebergDeletesMemory(t *testing.T) {
	steps := icebergtest.Fixture(t, t.TempDir())
	st := steps[3] // position and equality deletes
	ctx := context.Background()
	read := func(memory int64) ([]string, error) {
		mem := checkedMem(t)
		var rows []string
		err := Run(ctx, Pipeline{Source: Scan([]string{st.Metadata}, ScanOptions{Memory: memory}), Stages: []Stage{Collect(nil, func(rec arrow.RecordBatch) error {
			rows = append(rows, icebergtest.NamedRows(rec)...)
			return nil
		})}}, Options{Open: testOpen, Mem: mem})
		slices.Sort(rows)
		return rows, err
	}
	_, err := read(1 << 10)
	if err == nil || !strings.Contains(err.Error(), "past half the scan's memory budget (1KiB)") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("deletes past a 1KiB budget: %v", err)
	}
	t.Log(err)
	rows, err := read(64 << 10)
	if err != nil || !slices.Equal(rows, st.Current) {
		t.Fatalf("within 64KiB: %d rows, iceberg-go %d; %v", len(rows), len(st.Current), err)
	}
}
