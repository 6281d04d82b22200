package exec

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/scan"
)

// TestUsedColumns: what a scan must read for the stages after it.
func TestUsedColumns(t *testing.T) {
	mustFilter := func(text string) Stage {
		s, err := Filter(text)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	mustAgg := func(keys []string, aggs string) Stage {
		s, err := AggBy(keys, aggs)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var out bytes.Buffer
	all := "(all)"
	for _, c := range []struct {
		name   string
		stages []Stage
		want   string
	}{
		{"a sink reads all", []Stage{WriteIPC(&out)}, all},
		{"count-by", []Stage{CountBy([]string{"k"}), WriteIPC(&out)}, "k"},
		{"filter before an aggregation", []Stage{mustFilter("d < '2000-01-01' and x > 1"), SumBy([]string{"k"}, []string{"v"}), ToCSV(&out)}, "k,v,d,x"},
		{"agg-by expressions", []Stage{mustAgg([]string{"k"}, "sum(a * (1 - b)) as r, count()"), ToCSV(&out)}, "k,a,b"},
		{"select", []Stage{Select("b", "a"), Head(3), WriteIPC(&out)}, "b,a"},
		{"drop reads the rest", []Stage{Drop("a"), WriteIPC(&out)}, all},
		{"drop then select", []Stage{Drop("a"), Select("b"), WriteIPC(&out)}, "b"},
		{"rename maps back", []Stage{Rename([2]string{"a", "b"}, [2]string{"b", "a"}), Select("a", "c"), WriteIPC(&out)}, "b,c"},
		{"sort and top add their keys", []Stage{Sort([]SortKey{{Column: "s"}}), Top(3, []SortKey{{Column: "t", Desc: true}}), Select("v"), WriteIPC(&out)}, "v,t,s"},
		{"shuffle adds its keys", []Stage{Shuffle([]string{"h"}, 4), CountBy([]string{"k"}), WriteIPC(&out)}, "k,h"},
		{"a stage that cannot say reads all", []Stage{Collect(nil, nil), CountBy([]string{"k"})}, all},
		// A join whose side is not read yet (inside another join's side):
		// the columns its side's select or renames name are the side's,
		// not the left's (TPC-H Q5's orders read all 9 columns for 3).
		{"a join's side ending in select", []Stage{
			Join(Pipeline{Stages: []Stage{Select("c_custkey", "c_nationkey")}}, JoinOptions{How: "inner", Left: []string{"o_custkey"}, Right: []string{"c_custkey"}}),
			Select("o_orderkey", "c_nationkey"), WriteIPC(&out)}, "o_orderkey,o_custkey"},
		{"a join's side ending in select and rename", []Stage{
			Join(Pipeline{Stages: []Stage{Select("n_nationkey", "n_name"), Rename([2]string{"n_name", "nation"})}}, JoinOptions{How: "inner", Left: []string{"k"}, Right: []string{"n_nationkey"}}),
			Select("v", "nation"), WriteIPC(&out)}, "v,k"},
		{"a join's side that cannot say", []Stage{
			Join(Pipeline{Stages: []Stage{Extend(Computed{Name: "y", Expr: "c + 1"})}}, JoinOptions{How: "inner", Left: []string{"k"}, Right: []string{"c"}}),
			Select("v", "y"), WriteIPC(&out)}, "v,y,k"},
		// An aggregation's output is its keys and its named aggregates,
		// which a filter or sort after it keeps.
		{"a join's side ending in an aggregation", []Stage{
			Join(Pipeline{Stages: []Stage{CountBy([]string{"c"}), mustStage(t)(Filter("count > 1"))}}, JoinOptions{How: "inner", Left: []string{"k"}, Right: []string{"c"}}),
			Select("v", "count"), WriteIPC(&out)}, "v,k"},
	} {
		got := usedColumns(c.stages)
		s := all
		if got != nil {
			s = strings.Join(got, ",")
		}
		if s != c.want {
			t.Errorf("%s: %q, want %q", c.name, s, c.want)
		}
	}
}

// TestScanReadsWhatStagesUse: a scan followed by stages that read a few
// columns decodes only those (fewer bytes needed), and the result is the
// one of stages fed every column.
func TestScanReadsWhatStagesUse(t *testing.T) {
	_, lineitem := testData(t)
	mem := checkedMem(t)
	st := mustStage(t)
	needed := func(stages ...Stage) (int64, []byte) {
		var n int64
		src := Scan([]string{lineitem}, ScanOptions{Stats: func(_ string, s scan.Stats) { n += s.BytesNeeded }})
		return n, fused(t, mem, 2, src, stages...)
	}
	all, _ := needed()
	for _, stages := range [][]Stage{
		{st(AggBy([]string{"l_returnflag"}, "sum(l_extendedprice * (1 - l_discount)) as r"))},
		{st(Filter("l_shipdate <= '1998-09-02'")), CountBy([]string{"l_linestatus"})},
		{Rename([2]string{"l_tax", "tax"}), Top(5, []SortKey{{Column: "tax", Desc: true}}), Select("l_orderkey", "tax")},
	} {
		n, got := needed(stages...)
		want := piped(t, mem, Scan([]string{lineitem}, ScanOptions{}), stages...)
		if !slices.Equal(table(t, got), table(t, want)) {
			t.Errorf("%s: %q, fed every column %q", Pipeline{Stages: stages}, table(t, got), table(t, want))
		}
		if n*2 > all {
			t.Errorf("%s: %d bytes needed of every column's %d", Pipeline{Stages: stages}, n, all)
		}
	}
}

// TestUnknownSide: a join side's pipeline whose own join adds columns
// that cannot be known before it is read (its side neither read nor
// ending in a select) finds its scan's columns itself; a semi join, or a
// side ending in a select, does not make it so.
func TestUnknownSide(t *testing.T) {
	scanOnly := Pipeline{}
	selected := Pipeline{Stages: []Stage{Select("n_nationkey", "n_name")}}
	for _, c := range []struct {
		name   string
		stages []Stage
		want   bool
	}{
		{"no join", []Stage{Select("a")}, false},
		{"a join whose side ends in select", []Stage{Join(selected, JoinOptions{How: "inner", Left: []string{"k"}, Right: []string{"n_nationkey"}})}, false},
		{"a join whose side does not say", []Stage{Join(scanOnly, JoinOptions{How: "inner", Left: []string{"k"}, Right: []string{"n_nationkey"}})}, true},
		{"a semi join adds nothing", []Stage{Join(scanOnly, JoinOptions{How: "semi", Left: []string{"k"}, Right: []string{"n_nationkey"}})}, false},
		{"a semi join with --where reads the side", []Stage{Join(scanOnly, JoinOptions{How: "semi", Left: []string{"k"}, Right: []string{"n_nationkey"}, Where: "n_name = a"})}, true},
	} {
		if got := unknownSide(c.stages); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
