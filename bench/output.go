package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-data/sluice/internal/atomicfile"
	"github.com/sluice-data/sluice/store"
)

// Output says where RunReport and RunWorkersReport put what a run
// measured, as sluice bench does: a report, or one JSON document, on W,
// and every record and a plot saved to files.
type Output struct {
	// W gets the report, or with JSON the run's Document (a fanned-out
	// run's WorkersDocument).
	W    io.Writer
	JSON bool
	// Columns chooses the sweep table's columns (the JSON has every figure).
	Columns Columns
	// Records, when set, names the file every record is saved to, JSON
	// lines or CSV as its extension says (RecordFormat); Plot, the PNG
	// Charts draws them to (Requests; a fanned-out run's last round by
	// Timeline). Both are saved also when the run fails part way, each
	// under a temporary name beside it and renamed into place once
	// complete, so that a failed write never leaves half a file.
	Records, Plot string
	Charts        Charts
	// Sim is the spec of the link model the store is seen through
	// (sim.Profile's String), for the report.
	Sim string
	// Executor names what started a fanned-out run's workers (local,
	// slurm, kubernetes), for the report.
	Executor string
}

// Charts draws what a run measured; package bench/chart's Charts does. It
// is passed in rather than linked here because the plotting library costs
// every process that links it milliseconds to start: sluice's stage
// processes do not.
type Charts interface {
	// Requests draws a run's requests (Run).
	Requests(w io.Writer, recs []Record) error
	// Timeline draws a fanned-out run's round, worker by worker.
	Timeline(w io.Writer, recs []Record) error
}

// Document is a run (Run) as one JSON document: where its objects were,
// the link model, and what was measured. Times in Phases are seconds
// from Start.
type Document struct {
	URL            string       `json:"url"`
	Sim            string       `json:"sim"`
	Start          time.Time    `json:"start"`
	Kept           bool         `json:"kept"`
	GeneratorMiBps float64      `json:"generator_mib_s"`
	Auto           []AutoResult `json:"auto"`
	Phases         []Summary    `json:"phases"`
}

// WorkersDocument is a fanned-out sweep (RunWorkers) as one JSON
// document.
type WorkersDocument struct {
	URL     string       `json:"url"`
	Sim     string       `json:"sim"`
	Start   time.Time    `json:"start"`
	Kept    bool         `json:"kept"`
	Runs    []WorkersRun `json:"runs"`
	Scaling []Scaling    `json:"scaling"`
}

// MarshalJSON writes the run's fields and its StartSkew in seconds
// (start_skew_s).
func (r WorkersRun) MarshalJSON() ([]byte, error) {
	type fields WorkersRun // without this method
	return json.Marshal(struct {
		fields
		StartSkew float64 `json:"start_skew_s"`
	}{fields(r), r.StartSkew.Seconds()})
}

// RunReport runs Run and writes what it measured as out says: the
// report (WriteReport) under a line saying where and through which link,
// or the Document. When ctx ends part way (Ctrl-C) the report is the
// table of the phases measured so far, the last one cut short. It fails
// when Run does, and when requests failed after their retries.
func RunReport(ctx context.Context, st *store.Store, prefix string, cfg Config, out Output) error {
	res, runErr := Run(ctx, st, prefix, cfg)
	if len(res.Records) > 0 {
		if err := out.save(res.Records, func(w io.Writer) error { return out.Charts.Requests(w, res.Records) }); err != nil {
			return errors.Join(runErr, err)
		}
	}
	where := st.URL(res.Prefix)
	if runErr != nil {
		if ctx.Err() != nil && len(res.Summaries) > 0 && !out.JSON {
			// What was measured is worth having.
			fmt.Fprintf(out.W, "sluice bench %s (link model: %s), interrupted: the phases measured so far, the last one cut short\n", where, out.Sim)
			if err := WriteTable(out.W, res.Summaries, out.Columns); err != nil {
				return errors.Join(runErr, err)
			}
		}
		return runErr
	}
	if out.JSON {
		if err := writeJSON(out.W, Document{URL: where, Sim: out.Sim, Start: res.Start, Kept: res.Kept,
			GeneratorMiBps: res.GeneratorMiBps, Auto: res.Auto, Phases: res.Summaries}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out.W, "sluice bench %s (link model: %s)\n", where, out.Sim)
		if err := WriteReport(out.W, res, out.Columns); err != nil {
			return err
		}
		if res.Kept {
			fmt.Fprintf(out.W, "kept the objects under %s\n", where)
		}
	}
	var failed int
	for _, s := range res.Summaries {
		failed += s.Errors
	}
	return failedErr(failed)
}

// RunWorkersReport runs RunWorkers and writes what it measured as out
// says: the report (WriteWorkersReport) under a line saying where, what
// each worker did (cfg.Worker) and through which link, or the
// WorkersDocument. It fails when RunWorkers does, and when requests
// failed after their retries.
func RunWorkersReport(ctx context.Context, st *store.Store, prefix string, cfg WorkersConfig, launch Launcher, out Output) error {
	res, runErr := RunWorkers(ctx, st, prefix, cfg, launch)
	if len(res.Records) > 0 {
		if err := out.save(res.Records, func(w io.Writer) error { return out.Charts.Timeline(w, res.LastRound()) }); err != nil {
			return errors.Join(runErr, err)
		}
	}
	if runErr != nil {
		return runErr
	}
	where := st.URL(res.Prefix)
	if out.JSON {
		if err := writeJSON(out.W, WorkersDocument{URL: where, Sim: out.Sim, Start: res.Start, Kept: res.Kept,
			Runs: res.Runs, Scaling: res.Scaling}); err != nil {
			return err
		}
	} else {
		counts := make([]string, len(cfg.Workers))
		for i, n := range cfg.Workers {
			counts[i] = strconv.Itoa(n)
		}
		fmt.Fprintf(out.W, "sluice bench %s --workers %s (executor %s): %s, each worker behind its own link (%s)\n",
			where, strings.Join(counts, ","), out.Executor, cfg.Worker.perWorker(), out.Sim)
		if err := WriteWorkersReport(out.W, res); err != nil {
			return err
		}
		if res.Kept {
			fmt.Fprintf(out.W, "kept the objects under %s\n", where)
		}
	}
	var failed int
	for _, r := range res.Runs {
		failed += r.Put.Errors + r.Get.Errors
	}
	return failedErr(failed)
}

// perWorker says what a worker of a fanned-out run does.
func (c Config) perWorker() string {
	if len(c.Sizes) != 1 || len(c.Concurrency) != 1 {
		return "workers of their own configuration"
	}
	return fmt.Sprintf("%d object(s) of %s a worker, concurrency %d", c.objectsAt(c.Concurrency[0]), FormatSize(c.Sizes[0]), c.Concurrency[0])
}

// failedErr fails a run in which requests failed after their retries.
func failedErr(failed int) error {
	if failed <= 0 {
		return nil
	}
	return fmt.Errorf("bench: %d requests failed after retries (see the errors column and --out)", failed)
}

// save writes every record to out.Records and what draw draws of them to
// out.Plot, each when named.
func (out Output) save(recs []Record, draw func(io.Writer) error) error {
	if out.Records != "" {
		format, err := RecordFormat(out.Records)
		if err != nil {
			return err
		}
		if err := atomicfile.Write(out.Records, func(w io.Writer) error { return WriteRecords(w, format, recs) }); err != nil {
			return err
		}
	}
	if out.Plot != "" {
		return atomicfile.Write(out.Plot, draw)
	}
	return nil
}

// writeJSON writes v as indented JSON, as every sluice --json does.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Check refuses, before anything is measured, a Records or Plot name of a
// kind Output does not write, or in a directory that does not exist: a
// run's figures are lost when they cannot be saved after it.
func (out Output) Check() error {
	if out.Records != "" {
		if _, err := RecordFormat(out.Records); err != nil {
			return err
		}
	}
	if out.Plot != "" && !strings.EqualFold(filepath.Ext(out.Plot), ".png") {
		return fmt.Errorf("plot %q: want a .png name", out.Plot)
	}
	if out.Plot != "" && out.Charts == nil {
		return fmt.Errorf("plot %q: no Charts to draw it", out.Plot)
	}
	for _, name := range []string{out.Records, out.Plot} {
		if name == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Dir(name)); err != nil || !fi.IsDir() {
			return fmt.Errorf("%q: directory %s does not exist", name, filepath.Dir(name))
		}
	}
	return nil
}
