package scanbench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/gen"
)

// TestMeasure: RSS alone measures only the child, at a quarter of the
// dataset; with Only it makes the runs too; the document prints and
// encodes what was measured and nothing else.
func TestMeasure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SCANBENCH_TEST_ALLOC_MIB", "32") // the child: see TestMain
	p := mustParse(t, "ttfb=1ms,stream=400MiB/s")
	st, local := dataset(t, p, gen.Options{Rows: 40_000, Files: 2})
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log bytes.Buffer
	cfg := Config{Store: st, Local: local, Pattern: "li/", Runs: 1, NoWarmup: true, Mem: mem, Log: &log, Sim: p.String(),
		RSS: &RSSChild{Name: self, Args: func(budget int64) []string { return []string{"scan", "--memory", strconv.FormatInt(budget, 10)} }}}

	b, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := b.Measure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := RSSBudget(b.Dataset().Bytes)
	if doc.Report != nil || doc.RSS == nil || doc.RSS.Budget != want || doc.RSS.Limit != want+RSSSlack || doc.RSS.PeakRSS < 32<<20 {
		t.Fatalf("RSS alone: report %v, rss %+v", doc.Report != nil, doc.RSS)
	}
	if line := "peak RSS: " + filepath.Base(self) + " scan --memory " + strconv.FormatInt(want, 10) + "\n"; !strings.Contains(log.String(), line) ||
		!strings.HasPrefix(log.String(), "dataset "+b.Dataset().URL+": 2 files") {
		t.Errorf("log:\n%s", log.String())
	}

	cfg.Only, cfg.Memory = []string{Scan}, 3<<20
	if b, err = New(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if doc, err = b.Measure(ctx); err != nil {
		t.Fatal(err)
	}
	if doc.Report == nil || len(doc.Report.Runs) != 1 || doc.Report.Runs[0].Scan == nil || doc.RSS == nil || doc.RSS.Budget != 3<<20 {
		t.Fatalf("with --only: %+v", doc)
	}
	var text, js bytes.Buffer
	doc.Print(&text)
	for _, w := range []string{"link: " + p.String() + "\n", "scan, all columns", "peak RSS of sluice scan --memory 3MiB over"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, text.String())
		}
	}
	if strings.Contains(text.String(), "faulty link") {
		t.Errorf("text has a faulty link:\n%s", text.String())
	}
	if err := doc.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(js.Bytes(), &keys); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || keys["sim"] == nil || keys["report"] == nil || keys["rss"] == nil {
		t.Errorf("json keys %v", keys)
	}
}
