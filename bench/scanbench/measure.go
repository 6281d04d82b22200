package scanbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// RSSChild is the command whose peak resident memory Measure takes: a
// scan of the dataset under a memory budget (sluice scan --memory), in a
// child process so that the benchmark's own heap stays out of the figure.
type RSSChild struct {
	// Name is the program; Args are its arguments for a budget.
	Name string
	Args func(budget int64) []string
	// Output gets what the child writes (nil: discarded).
	Output io.Writer
}

// Document is a whole benchmark as sluice bench-scan prints it: the links
// it was measured through, the report of the runs and the peak RSS of a
// scan in a child, each absent when not measured.
type Document struct {
	Sim    string  `json:"sim"`
	Faults string  `json:"faults,omitempty"`
	Report *Report `json:"report,omitempty"`
	RSS    *RSS    `json:"rss,omitempty"`
	// Dataset is what was measured (Report has it too, when there is one).
	Dataset Dataset `json:"-"`
}

// Measure makes what the configuration asks for: every run (Run), and
// with Config.RSS the peak RSS of its child at Config.Memory (default
// RSSBudget of the dataset). RSS alone, without Only, Projection or
// Faulty, measures nothing else.
func (b *Bench) Measure(ctx context.Context) (*Document, error) {
	d := b.ds
	doc := &Document{Sim: b.cfg.Sim, Faults: b.cfg.Faults, Dataset: d}
	b.logf("dataset %s: %d files, %.1f MiB, %d rows; link %s", d.URL, d.Files, float64(d.Bytes)/(1<<20), d.Rows, b.cfg.Sim)
	if b.cfg.Faults != "" {
		b.logf("faulty link %s", b.cfg.Faults)
	}
	rss := b.cfg.RSS
	if rss == nil || b.onlyGiven || len(b.cfg.Projection) > 0 || b.cfg.Faulty != nil {
		rep, err := b.Run(ctx)
		if err != nil {
			return nil, err
		}
		doc.Report = rep
	}
	if rss != nil {
		budget := b.cfg.Memory
		if budget == 0 {
			budget = RSSBudget(d.Bytes)
		}
		args := rss.Args(budget)
		b.logf("peak RSS: %s %s", filepath.Base(rss.Name), strings.Join(args, " "))
		out := rss.Output
		if out == nil {
			out = io.Discard
		}
		r, err := MeasureRSS(ctx, out, budget, rss.Name, args...)
		if err != nil {
			return nil, err
		}
		doc.RSS = r
	}
	return doc, nil
}

// Print writes the document as text: the links, the report's tables and
// the peak RSS against its limit.
func (doc *Document) Print(w io.Writer) {
	fmt.Fprintf(w, "link: %s\n", doc.Sim)
	if doc.Faults != "" {
		fmt.Fprintf(w, "faulty link: %s\n", doc.Faults)
	}
	if doc.Report != nil {
		doc.Report.Print(w)
	}
	if doc.RSS != nil {
		doc.RSS.Print(w, doc.Dataset.Bytes)
	}
}

// WriteJSON writes the document as one indented JSON object.
func (doc *Document) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
