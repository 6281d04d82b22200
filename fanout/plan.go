package fanout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// cut is a pipeline cut at its exchanges: the phases the workers run
// and what the driver runs over their committed outputs.
type cut struct {
	phases []Phase
	// final is how the driver's part starts: the stages from finalFrom
	// on, after the aggregation's final side when finalAgg >= 0 (over
	// partial outputs) or a merge by mergeBy (over reducers' files).
	finalFrom int
	finalAgg  int
	mergeBy   []exec.SortKey
	// dropPosition drops PositionColumn after the merge.
	dropPosition bool
	// rebatch cuts the merged rows into one process's batches first
	// (joinRowBits).
	rebatch bool
}

// mapPhase is the index of the phase whose tasks scan the stream's
// pieces: the first, or the second after a join's other side.
func (c *cut) mapPhase() int {
	if c.phases[0].Other != 0 {
		return 1
	}
	return 0
}

// PositionColumn is the column map tasks add before a shuffle that a
// sort follows: each row's place in the dataset (the map task's index
// << 40 | the row's number in the task), by which the driver puts ties
// in dataset order.
const PositionColumn = "_sluice_pos_"

// makePlan cuts p into phases:
//
//   - map: a task per piece of the scan's datasets (a file, or a range of
//     row groups of a large one: scan.Pieces) runs the leading
//     per-batch stages and programs (exec, an instance a task); when an aggregation follows them, its partial
//     side too (exec.CompileAgg), and the driver folds the summaries in
//     dataset order, so the result has the bits of one process's;
//   - with a shuffle right after the per-batch stages, the map tasks
//     write one object each with a part per reducer, and a reduce task
//     per part runs the stages after the shuffle up to and including an
//     aggregation; the driver merges the reducers' groups by key (each
//     key is in one part only) and runs the rest.
//
// Whatever follows runs at the driver, in one process, in order; a head
// or top right after the per-batch stages runs in the map tasks too.
func makePlan(ctx context.Context, p *plan.Plan, compiled exec.Pipeline, opts Options) (*cut, error) {
	sc, ok := p.Stages[0].(*plan.Scan)
	if !ok {
		return nil, fmt.Errorf("%w: fan-out reads datasets with scan; this pipeline starts with %s", exec.ErrInvalid, p.Stages[0].Name())
	}
	pieces, schema, _, err := scanPieces(ctx, sc, opts)
	if err != nil {
		return nil, err
	}
	// The stages after the source; phases name them by index.
	stages := p.Stages[1:]
	n := len(stages)
	if err := exec.Validate(schema, compiled.Stages[:n], exec.Options{Open: opts.Open, Mem: opts.Mem}); err != nil {
		return nil, err
	}
	if k, j, side, err := joinToPartition(ctx, stages, opts); err != nil {
		return nil, err
	} else if j != nil {
		return joinPhases(stages, k, j, pieces, side, schema, opts)
	}
	isShuffle := func(i int) bool { _, ok := stages[i].(*plan.Shuffle); return ok }
	i := 0
	for i < n && plan.PerPiece(stages[i]) {
		i++
	}
	mp := Phase{Kind: PhaseMap, From: 0, To: i, Agg: -1, Tasks: len(pieces), Pieces: pieces, Output: OutStream}
	pl := &cut{finalFrom: i, finalAgg: -1}
	switch {
	case i < n && isShuffle(i):
		sh := stages[i].(*plan.Shuffle)
		keys, parts := sh.Keys, sh.Parts
		j := i + 1
		for j < n && plan.PerPiece(stages[j]) {
			j++
		}
		var sortKeys []exec.SortKey
		agg := false
		if j < n {
			if s, ok := stages[j].(*plan.Sort); ok {
				for _, k := range s.Keys {
					sortKeys = append(sortKeys, exec.SortKey{Column: k.Column, Desc: k.Desc})
				}
			}
			agg = isAgg(stages[j])
		}
		if _, ok := at(stages, j).(*plan.Agg); ok {
			return nil, fmt.Errorf("%w: shuffle | agg: agg folds the whole input into one row, which reducers would each make of their part: leave out the shuffle (map tasks send agg's summaries to the driver)", exec.ErrInvalid)
		}
		isSort := sortKeys != nil
		if j >= n || (!agg && !isSort) {
			return nil, fmt.Errorf("%w: shuffle: the stages after it must come to an aggregation (sum-by, count-by, agg-by) or a sort, which the reducers run", exec.ErrInvalid)
		}
		mp.Output, mp.ShuffleBy, mp.Parts = OutShuffle, keys, parts
		// Reducers write IPC streams the driver merges as it reads them,
		// or, at a destination, Arrow files any reader opens.
		out := OutStream
		if opts.Out != "" {
			out = OutFile
		}
		rp := Phase{Kind: PhaseReduce, From: i + 1, To: j, Agg: j, Tasks: parts, Output: out}
		pl.finalFrom = j + 1
		if isSort {
			// Each reducer sorts its part, whose rows come in dataset
			// order, so ties stay in it; the map tasks number every row
			// (PositionColumn) and the driver merges the reducers'
			// outputs by the sort's keys and that number, which puts
			// ties across reducers in dataset order too: one process's
			// stable sort. The number is dropped after the merge.
			if schema.FieldIndices(PositionColumn) != nil {
				return nil, fmt.Errorf("%w: shuffle | sort: the input has a column named %s, which the fan-out uses", exec.ErrInvalid, PositionColumn)
			}
			for _, st := range stages[i+1 : j] {
				switch st.Name() {
				case "select", "drop", "rename", "exec":
					return nil, fmt.Errorf("%w: shuffle | %s | sort: put %s before the shuffle (the reducers' rows keep every column until the sort)", exec.ErrInvalid, st.Name(), st.Name())
				}
			}
			mp.Position = true
			rp.To, rp.Agg = j+1, -1
			if h, ok := at(stages, j+1).(*plan.Head); ok && h.N <= maxTopN {
				// sort | head N: each reducer keeps its first N rows
				// (the global first N are among them), holding N rows
				// instead of its part; the driver's merge and head
				// take the first N of them all.
				rp.TopN = max(h.N, 1)
			}
			pl.mergeBy = append(sortKeys, exec.SortKey{Column: PositionColumn})
			pl.dropPosition = true
			if opts.Out != "" {
				return nil, fmt.Errorf("%w: shuffle | sort with a destination: each reducer's part is sorted, not the whole; leave out --out and write at the end of the pipeline", exec.ErrInvalid)
			}
		} else {
			aggKeys, _ := plan.GroupKeys(stages[j])
			pl.mergeBy = make([]exec.SortKey, len(aggKeys))
			for k, c := range aggKeys {
				pl.mergeBy[k] = exec.SortKey{Column: c}
			}
		}
		if agg && j == i+1 && combinable(stages[j], keys) {
			mp.Agg, mp.Combine, rp.Combine = j, true, true
		}
		pl.phases = []Phase{mp, rp}
	case i < n && isAgg(stages[i]):
		mp.Agg, mp.Output = i, OutPartial
		pl.phases = []Phase{mp}
		pl.finalFrom, pl.finalAgg = i+1, i
	default:
		if i < n && plan.Distributive(stages[i]) {
			// head or top: each map task keeps only what the driver's can
			// keep, and the driver runs it again over them in order.
			mp.To = i + 1
		}
		pl.phases = []Phase{mp}
	}
	for k := range pl.phases {
		ph := &pl.phases[k]
		ph.SideEffects = slices.ContainsFunc(stages[ph.From:ph.To], plan.SideEffects)
	}
	return pl, nil
}

// icebergPieces cuts the Iceberg table of the scan's URL number u into
// its data files, a piece each (read whole, with their deletes). The
// scan is pinned to the snapshot read here, by its metadata file, so that
// every task reads that one whatever is committed to the table meanwhile.
func icebergPieces(ctx context.Context, sc *plan.Scan, u int, opts Options) ([]Piece, *arrow.Schema, int64, error) {
	url := sc.URLs[u]
	var asOf time.Time
	if sc.AsOf != "" {
		t, err := sc.AsOfTime()
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%w: scan --as-of %q: %v", exec.ErrInvalid, sc.AsOf, err)
		}
		asOf = t
	}
	t, err := iceberg.Load(ctx, opts.open, sc.Catalog, url, iceberg.Options{SnapshotID: sc.Snapshot, AsOf: asOf})
	if errors.Is(err, iceberg.ErrInvalid) {
		return nil, nil, 0, fmt.Errorf("%w: %v", exec.ErrInvalid, err)
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("scan: %w", err)
	}
	// Pinned by its metadata file: the snapshot chosen from it (the
	// current one, --snapshot's or --as-of's) is the same for every task.
	if iceberg.IsMetadataURL(t.URL) {
		sc.URLs[u] = t.URL
	}
	fields, missing := t.Schema.Select(sc.Columns)
	if missing != "" {
		return nil, nil, 0, fmt.Errorf("%w: scan %s: no column %q (columns: %s)", exec.ErrInvalid, url, missing, strings.Join(t.Schema.Names(), ", "))
	}
	schema, err := iceberg.ArrowSchema(fields)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%w: %v", exec.ErrInvalid, err)
	}
	tasks, err := t.Plan(ctx, opts.open, nil)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("scan: %w", err)
	}
	if len(tasks) == 0 {
		return []Piece{{URL: u, Whole: true}}, schema, 0, nil
	}
	var pieces []Piece
	var bytes int64
	for _, task := range tasks {
		// Partition values served the planning; the task needs none.
		task.File.Partition = nil
		pieces = append(pieces, Piece{URL: u, Table: &task})
		bytes += task.File.Size
	}
	return pieces, schema, bytes, nil
}

// scanPieces cuts the datasets sc reads into map tasks' pieces: a file,
// or a range of row groups of a large one (scan.Pieces). bytes is what
// they hold of the columns sc reads, from the footers.
func scanPieces(ctx context.Context, sc *plan.Scan, opts Options) (pieces []Piece, schema *arrow.Schema, bytes int64, err error) {
	urls := sc.URLs
	table := func(u int) error {
		ps, sch, b, err := icebergPieces(ctx, sc, u, opts)
		if err != nil {
			return err
		}
		pieces, bytes = append(pieces, ps...), bytes+b
		if schema == nil {
			schema = sch
		}
		return nil
	}
	if sc.Catalog != "" {
		// A catalog's tables, each pinned by its metadata file; when all
		// are, the workers read those files and need no catalog.
		for u := range urls {
			if err := table(u); err != nil {
				return nil, nil, 0, err
			}
		}
		if !slices.ContainsFunc(urls, func(u string) bool { return !iceberg.IsMetadataURL(u) }) {
			sc.Catalog = ""
		}
		return pieces, schema, bytes, nil
	}
	for u, url := range urls {
		if iceberg.IsMetadataURL(url) {
			if err := table(u); err != nil {
				return nil, nil, 0, err
			}
			continue
		}
		base, rest := store.SplitGlob(url)
		st, key, err := opts.open(ctx, base)
		if err != nil {
			return nil, nil, 0, err
		}
		ds, err := scan.Open(ctx, st, key+rest, scan.Options{Columns: sc.Columns, ReadDict: sc.Dict, BatchRows: sc.BatchRows, Memory: 16 << 20})
		if err != nil {
			closeStore(opts.Open, st)
			var it *scan.IcebergTableError
			if errors.As(err, &it) {
				if err := table(u); err != nil {
					return nil, nil, 0, err
				}
				continue
			}
			return nil, nil, 0, fmt.Errorf("scan: %w", err)
		}
		if schema == nil {
			schema = ds.Schema()
		}
		files := ds.Files()
		groups := ds.Plan()
		for _, g := range groups {
			bytes += g.Bytes
		}
		all := 0
		for _, f := range files {
			if !f.Pruned {
				all += f.RowGroups
			}
		}
		if all != len(groups) {
			// Empty row groups: exec reads such a dataset with its plain
			// reader, whose batches a piece's scan would not reproduce.
			pieces = append(pieces, Piece{URL: u, Whole: true})
			closeStore(opts.Open, st)
			continue
		}
		for _, pc := range scan.Pieces(groups, opts.PieceBytes) {
			p := Piece{URL: u, Key: files[pc.File].Key, Lo: pc.Lo, Hi: pc.Hi}
			if pat, err := scan.PiecePattern("", key+rest, p.Key); err == nil {
				p.Scan = st.URL(pat)
			}
			pieces = append(pieces, p)
		}
		closeStore(opts.Open, st)
	}
	if len(pieces) == 0 {
		return nil, nil, 0, fmt.Errorf("scan: no row groups to read in %s", strings.Join(urls, " "))
	}
	return pieces, schema, bytes, nil
}

// Options.Join's values.
const (
	JoinAuto        = "auto"
	JoinBroadcast   = "broadcast"
	JoinPartitioned = "partitioned"
)

// OtherPositionColumn is PositionColumn of the other side of a
// partitioned join: each of its rows' place in that side.
const OtherPositionColumn = "_sluice_opos_"

// joinRowBits: the map tasks of a partitioned join number each row by
// its task, its batch in the task and its row in the batch, task <<
// 2*joinRowBits | batch << joinRowBits | row, below joinTail; the other
// side's unmatched rows get joinTail plus their number there. The join
// makes a batch of each stream batch, and of every exec.JoinTailRows
// unmatched right rows: the driver cuts the merged rows so again
// (exec.Rebatch), for float sums after the join to be one process's.
const (
	joinRowBits       = 21
	joinTail    int64 = 1 << 62
)

// joinToPartition finds the join whose two sides go through a shuffle:
// the first join the map tasks would reach (past per-batch stages) that
// Options.Join or its other side's size calls for (partitionJoin), with
// the pieces of that side.
func joinToPartition(ctx context.Context, stages []plan.Stage, opts Options) (int, *plan.Join, []Piece, error) {
	for i, st := range stages {
		if j, ok := st.(*plan.Join); ok {
			side, err := partitionJoin(ctx, j, opts)
			if err != nil || side != nil {
				return i, j, side, err
			}
		}
		if !plan.PerPiece(st) {
			break
		}
	}
	return -1, nil, nil, nil
}

// partitionJoin says whether j is joined partitioned, and then cuts its
// other side into pieces. Forced by Options.Join, or else when that side
// is a scan and per-batch stages and either its unmatched rows are kept
// (right and full: a broadcast would send them from every task) or the
// bytes its footers give for the columns it reads pass Options.Broadcast
// (negative: always).
func partitionJoin(ctx context.Context, j *plan.Join, opts Options) ([]Piece, error) {
	sc, ok := j.Other.Stages[0].(*plan.Scan)
	for _, st := range j.Other.Stages[1:] {
		ok = ok && plan.PerPiece(st)
	}
	switch {
	case opts.Join == JoinBroadcast:
		return nil, nil
	case opts.Join == JoinPartitioned && !ok:
		return nil, fmt.Errorf("%w: --join partitioned: the other side of a join must be a scan and per-batch stages (filter, select, ...) for its map tasks to shuffle; this one is %s", exec.ErrInvalid, j.Other)
	case !ok:
		return nil, nil
	}
	pieces, _, bytes, err := scanPieces(ctx, sc, opts)
	if err != nil {
		return nil, fmt.Errorf("join (other side): %w", err)
	}
	if opts.Join == JoinPartitioned || j.How == "right" || j.How == "full" || opts.Broadcast < 0 || bytes > opts.Broadcast {
		return pieces, nil
	}
	return nil, nil
}

// joinPhases cuts a pipeline whose stage k is a join of two shuffled
// sides: a map task per piece of the other side runs its stages and
// writes its rows by the right keys (numbered in OtherPositionColumn); a
// map task per piece of the stream runs the stages before the join and
// writes its rows by the left keys (numbered in PositionColumn); a
// reducer per part joins the two, its rows in dataset order; and the
// driver merges the reducers' rows by their numbers (the other side's
// unmatched rows after the stream's, in that side's order), which is
// one process's order, and runs the rest.
func joinPhases(stages []plan.Stage, k int, j *plan.Join, pieces, side []Piece, schema *arrow.Schema, opts Options) (*cut, error) {
	if opts.Out != "" {
		return nil, fmt.Errorf("%w: a partitioned join with a destination: its reducers' rows are put in order by this process; leave out --out and write at the end of the pipeline", exec.ErrInvalid)
	}
	if schema.FieldIndices(PositionColumn) != nil {
		return nil, fmt.Errorf("%w: join: the input has a column named %s, which the fan-out uses", exec.ErrInvalid, PositionColumn)
	}
	parts := min(4*opts.Workers, maxParts)
	sp := Phase{Kind: PhaseMap, Other: 1 + k, From: 0, To: len(j.Other.Stages) - 1, Agg: -1, Tasks: len(side), Pieces: side,
		Output: OutShuffle, ShuffleBy: j.Right, Parts: parts, Position: true,
		SideEffects: slices.ContainsFunc(j.Other.Stages[1:], plan.SideEffects)}
	mp := Phase{Kind: PhaseMap, From: 0, To: k, Agg: -1, Tasks: len(pieces), Pieces: pieces,
		Output: OutShuffle, ShuffleBy: j.Left, Parts: parts, Position: true,
		SideEffects: slices.ContainsFunc(stages[:k], plan.SideEffects)}
	rp := Phase{Kind: PhaseReduce, From: k, To: k + 1, Agg: -1, Tasks: parts, Output: OutStream, Build: 1}
	return &cut{phases: []Phase{sp, mp, rp}, finalFrom: k + 1, finalAgg: -1,
		mergeBy: []exec.SortKey{{Column: PositionColumn}}, dropPosition: true, rebatch: true}, nil
}

// maxTopN is the largest head after a shuffle's sort that reducers run as
// a top-N (exec.Top keeps its rows in memory and re-sorts them with
// each batch: for a larger N a sort that spills is the better choice).
const maxTopN = 100_000

// combinable says the aggregation st right after a shuffle by keys can
// run its partial side in the map tasks: it splits (exec.CompileAgg),
// and its summaries keep the shuffle's keys, being among its groups'.
func combinable(st plan.Stage, keys []string) bool {
	groups, _ := plan.GroupKeys(st)
	for _, k := range keys {
		if !slices.Contains(groups, k) {
			return false
		}
	}
	_, _, err := exec.CompileAgg(st)
	return err == nil
}

// isAgg says st is an aggregation, which a map task runs the partial
// side of.
func isAgg(st plan.Stage) bool { _, ok := plan.GroupKeys(st); return ok }

// describe says what a phase's tasks run, as stage names.
func (ph Phase) describe(p *plan.Plan) string {
	after := p.Stages[1:]
	names := []string{"scan a piece"}
	switch {
	case ph.Other != 0:
		names[0] = "scan a piece of the join's other side"
		if j, ok := at(p.Stages, ph.Other).(*plan.Join); ok {
			after = j.Other.Stages[1:]
		}
	case ph.Build != 0:
		names = []string{"read a part of every map object of both sides"}
	case ph.Kind == PhaseReduce:
		names = []string{"read a part of every map object"}
	}
	for _, st := range after[ph.From:ph.To] {
		names = append(names, st.Name())
	}
	if ph.Agg >= 0 {
		name := after[ph.Agg].Name()
		switch {
		case ph.Output == OutPartial || ph.Combine && ph.Kind == PhaseMap:
			name += " (partial)"
		case ph.Combine:
			name += " (final)"
		}
		names = append(names, name)
	}
	names = append(names, "write "+ph.Output)
	if ph.Output == OutShuffle {
		names[len(names)-1] = fmt.Sprintf("write %d parts by %s", ph.Parts, strings.Join(ph.ShuffleBy, ","))
	}
	return strings.Join(names, " | ")
}

// at is stages[i], or nil past the end.
func at(stages []plan.Stage, i int) plan.Stage {
	if i < len(stages) {
		return stages[i]
	}
	return nil
}
