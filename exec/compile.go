package exec

import (
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// Opener is store.Opener, under the name the Env fields have used.
type Opener = store.Opener

// Env is what a compiled plan reads and writes besides its URLs.
type Env struct {
	// Stdin is what from-csv reads without URLs, and, with Input, the
	// Arrow IPC stream the plan runs over.
	Stdin io.Reader
	// Input says the plan has no source: it runs over the Arrow IPC
	// stream on Stdin (a stage run as its own command).
	Input bool
	// Stdout is where to-csv and show write.
	Stdout io.Writer
	// Width is the width of the terminal show writes to (0: not one).
	Width int
	// Output, when set, ends a plan that ends in no sink (an Arrow IPC
	// stream on stdout, say). Without it such a plan's stream goes
	// nowhere until the caller adds a sink.
	Output Stage
	// ScanStats, when set, is how a scan with Stats reports its figures.
	ScanStats func(s *plan.Scan) func(url string, st scan.Stats)
	// Link, when set, opens the URLs of a scan with Sim through that
	// link model.
	Link func(s *plan.Scan) (Opener, error)
	// Stderr gets the standard error of the programs exec stages run
	// (nil: os.Stderr).
	Stderr io.Writer
	// ProgramEnv is added to their environment (a fan-out task's index
	// and piece).
	ProgramEnv []string
	// share is what the sub-pipelines of the plan being compiled share
	// (see share.go); set by the outermost Compile.
	share *sharing
}

// Compile makes a plan into the pipeline that runs it: a stage of exec
// for each stage of the plan, in order (and a scan before a show of
// files), then env.Output when the plan ends in no sink. Sub-pipelines
// that compute the same thing in several places (see share.go) run once
// in a run, their result read by each.
func Compile(p *plan.Plan, env Env) (Pipeline, error) {
	if err := p.Check(env.Input); err != nil {
		return Pipeline{}, err
	}
	// The plan itself is never a shared part's reader: its stages stay
	// one for one with the plan's. Its sub-pipelines, compiled with
	// env.share set, may be.
	limit := len(p.Stages)
	if env.share == nil {
		env.share = newSharing(p)
		limit = 0
	}
	return compile(p, env, limit)
}

// compile is Compile with the first stages of p, at most limit of them,
// read from a shared part when they are one.
func compile(p *plan.Plan, env Env, limit int) (Pipeline, error) {
	var out Pipeline
	stages := p.Stages
	if en, n := env.share.longest(stages, limit); en != nil && !env.Input {
		if en.pipe.Source == nil {
			sub := env
			sub.Input, sub.Output = false, nil
			pipe, err := compile(en.plan, sub, n-1)
			if err != nil {
				return Pipeline{}, err
			}
			en.pipe = pipe
		}
		out.Source = &sharedSource{entry: en}
		stages = stages[n:]
	} else if env.Input {
		out.Source = ReadIPC(env.Stdin)
	} else {
		src, extra, err := compileSource(stages[0], env)
		if err != nil {
			return Pipeline{}, err
		}
		out.Source = src
		if extra != nil {
			out.Stages = append(out.Stages, extra)
		}
		stages = stages[1:]
	}
	for _, st := range stages {
		s, err := CompileStage(st, env)
		if err != nil {
			return Pipeline{}, err
		}
		out.Stages = append(out.Stages, s)
	}
	if n := len(out.Stages); env.Output != nil && (n == 0 || !IsSink(out.Stages[n-1])) {
		out.Stages = append(out.Stages, env.Output)
	}
	return out, nil
}

// compileSource makes a plan's first stage, and the stage after it when
// the one node is both (show FILE).
func compileSource(st plan.Stage, env Env) (SourceStage, Stage, error) {
	switch s := st.(type) {
	case *plan.Scan:
		opts, err := scanOptionsOf(s, env)
		if err != nil {
			return nil, nil, err
		}
		return Scan(s.URLs, opts), nil, nil
	case *plan.FromCSV:
		return FromCSV(s.URLs, env.Stdin, CSVOptions{Types: s.Types}), nil, nil
	case *plan.Merge:
		return Merge(sortKeys(s.Keys), s.URLs), nil, nil
	case *plan.Show:
		if len(s.URLs) > 0 {
			show, err := CompileStage(s, env)
			return Scan(s.URLs, ScanOptions{}), show, err
		}
	}
	return nil, nil, invalidf("the first stage must be a source (scan, from-csv or merge), not %s", st.Name())
}

// scanOptionsOf are the options a scan node compiles to.
func scanOptionsOf(s *plan.Scan, env Env) (ScanOptions, error) {
	opts := ScanOptions{
		Columns:     s.Columns,
		Filter:      s.Filter,
		BatchRows:   s.BatchRows,
		Memory:      s.Memory,
		Concurrency: s.Concurrency,
		Dict:        s.Dict,
		Arrival:     s.Arrival,
		Int96Unit:   s.Int96Unit,
		Snapshot:    s.Snapshot,
		Catalog:     s.Catalog,
	}
	if s.AsOf != "" {
		t, err := s.AsOfTime()
		if err != nil {
			return opts, invalidf("scan --as-of %q: %v", s.AsOf, err)
		}
		opts.AsOf = t
	}
	if s.Sim != "" && env.Link != nil {
		open, err := env.Link(s)
		if err != nil {
			return opts, err
		}
		opts.Open = open
	}
	if s.Stats && env.ScanStats != nil {
		opts.Stats = env.ScanStats(s)
	}
	return opts, nil
}

func sortKeys(keys []plan.SortKey) []SortKey {
	out := make([]SortKey, len(keys))
	for i, k := range keys {
		out[i] = SortKey{Column: k.Column, Desc: k.Desc}
	}
	return out
}

// CompileStage makes one node that is not a source into its stage.
func CompileStage(st plan.Stage, env Env) (Stage, error) {
	switch s := st.(type) {
	case *plan.Select:
		if s.Exprs != nil {
			return selectExprs(computed(s.Columns, s.Exprs)...), nil
		}
		return Select(s.Columns...), nil
	case *plan.Extend:
		return Extend(computed(s.Columns, s.Exprs)...), nil
	case *plan.Drop:
		return Drop(s.Columns...), nil
	case *plan.RenameColumns:
		pairs := make([][2]string, len(s.Pairs))
		for i, p := range s.Pairs {
			pairs[i] = [2]string{p.Old, p.New}
		}
		return Rename(pairs...), nil
	case *plan.Filter:
		return Filter(s.Expr)
	case *plan.SumBy:
		return SumBy(s.Keys, s.Values), nil
	case *plan.AggBy:
		return AggBy(s.Keys, s.Aggs)
	case *plan.Agg:
		return aggAll(s.Aggs)
	case *plan.CountBy:
		return CountBy(s.Keys), nil
	case *plan.Sort:
		return SortWith(sortKeys(s.Keys), SortOptions{Memory: s.Memory, TempDir: s.TempDir}), nil
	case *plan.Top:
		return Top(s.N, sortKeys(s.Keys)), nil
	case *plan.Head:
		return Head(s.N), nil
	case *plan.Distinct:
		return Distinct(s.On), nil
	case *plan.Merge:
		return Merge(sortKeys(s.Keys), s.URLs), nil
	case *plan.Shuffle:
		return Shuffle(s.Keys, s.Parts), nil
	case *plan.Partition:
		return Partition(s.N, s.Keys, s.Out, s.Format), nil
	case *plan.Write:
		f := format.Unknown
		if s.Format != "" {
			var err error
			if f, err = format.Parse(s.Format); err != nil {
				return nil, invalidf("write --format: %v", err)
			}
		}
		return WriteOptions(s.URL, f, format.Options{Compression: s.Compression, RowGroupRows: s.RowGroupRows}), nil
	case *plan.ToCSV:
		return ToCSV(env.Stdout), nil
	case *plan.Show:
		return ShowTable(env.Stdout, ShowOptions{MaxRows: s.Rows, Width: env.Width}), nil
	case *plan.Join:
		sub := env
		sub.Input, sub.Output = false, nil
		other, err := Compile(s.Other, sub)
		if err != nil {
			return nil, fmt.Errorf("join (right side): %w", err)
		}
		return JoinOf(s, other), nil
	case *plan.Let:
		sub := env
		sub.Input, sub.Output = false, nil
		other, err := Compile(s.Other, sub)
		if err != nil {
			return nil, fmt.Errorf("let %s: %w", s.Column, err)
		}
		return Let(s.Column, other), nil
	case *plan.Exec:
		return compileExec(s, env)
	case *plan.Scan, *plan.FromCSV:
		return nil, invalidf("%s reads data: it must be the first stage", st.Name())
	}
	return nil, fmt.Errorf("%w: exec cannot run stage %s", ErrInvalid, st.Name())
}

func computed(cols, exprs []string) []Computed {
	out := make([]Computed, len(cols))
	for i, c := range cols {
		out[i] = Computed{Name: c, Expr: exprs[i]}
	}
	return out
}

// CompileAgg makes an aggregation node (sum-by, count-by, agg-by) into its
// two sides (see splitAgg): the partial a fan-out's map tasks run and the
// final that folds their summaries.
func CompileAgg(st plan.Stage) (partial, final Stage, err error) {
	s, err := CompileStage(st, Env{})
	if err != nil {
		return nil, nil, err
	}
	partial, final, ok := splitAgg(s)
	if !ok {
		return nil, nil, invalidf("%s is not an aggregation", st.Name())
	}
	return partial, final, nil
}

// ScanPiece is the scan src (a compiled scan node) restricted to the
// dataset url and the row groups rowGroups keeps, its figures going to
// stats: a fan-out's map task reads one piece of a dataset this way.
func ScanPiece(src SourceStage, url string, rowGroups func(key string, rowGroup int) bool, stats func(url string, st scan.Stats)) (SourceStage, error) {
	sc, ok := src.(*scanStage)
	if !ok {
		return nil, invalidf("the source is %s, not scan", src.Name())
	}
	opts := sc.opts
	opts.RowGroups, opts.Stats = rowGroups, stats
	return Scan([]string{url}, opts), nil
}

// ScanTablePiece is src, a scan of the Iceberg table url, restricted to
// one data file planned elsewhere (task): a fanned-out scan's map task,
// which need not plan the table again.
func ScanTablePiece(src SourceStage, url string, task iceberg.Task, stats func(url string, st scan.Stats)) (SourceStage, error) {
	sc, ok := src.(*scanStage)
	if !ok {
		return nil, invalidf("the source is %s, not scan", src.Name())
	}
	opts := sc.opts
	opts.RowGroups, opts.Stats, opts.Tasks = nil, stats, []iceberg.Task{task}
	return Scan([]string{url}, opts), nil
}

// Validate binds each stage to the schema before it, as Run would: the
// errors are those Run gives for the same stages (ErrInvalid for
// mistakes in how the pipeline is written), found before any work.
func Validate(in *arrow.Schema, stages []Stage, opts Options) error {
	_, err := kinds(in, stages, opts)
	return err
}

func compileExec(s *plan.Exec, env Env) (Stage, error) {
	o := ProgramOptions{Argv: s.Argv, Timeout: s.Timeout, Env: env.ProgramEnv, Stderr: env.Stderr}
	for _, f := range []struct {
		name string
		to   *format.Format
	}{{s.In, &o.In}, {s.Out, &o.Out}} {
		if f.name == "" {
			*f.to = format.IPCStream
			continue
		}
		var err error
		if *f.to, err = format.Parse(f.name); err != nil {
			return nil, invalidf("exec: %v", err)
		}
	}
	if len(s.Schema) > 0 {
		names, types := make([]string, len(s.Schema)), make([]string, len(s.Schema))
		for i, c := range s.Schema {
			names[i], types[i] = c.Name, c.Type
		}
		var err error
		if o.Schema, err = ColumnsSchema(names, types); err != nil {
			return nil, err
		}
	}
	return Program(o), nil
}
