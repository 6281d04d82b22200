package exec

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/internal/arrowsize"
	"github.com/sluice-data/sluice/internal/freelist"
	"github.com/sluice-data/sluice/plan"
)

// Hash aggregation groups rows by key columns and computes aggregates per
// group. Groups come out ordered by their keys (ascending, nulls last, as
// sort orders them and as DuckDB does by default).
//
// The result does not depend on how the work is split: each batch is
// summarized on its own (sums added in row order), and the summaries are
// folded in stream order. A stage run as its own process over Arrow IPC
// sees the same batches, so it gives the same float sums to the bit.

type aggFn int

const (
	aggSum aggFn = iota
	aggCount
	aggMin
	aggMax
	aggMean
	aggCountDistinct
	aggApproxDistinct
	aggQuantile // median is quantile(x, 0.5)
	aggVarSamp
	aggVarPop
	aggStddevSamp
	aggStddevPop
	aggAnyValue
	aggApproxQuantile
)

var aggNames = map[string]aggFn{
	"sum": aggSum, "count": aggCount, "min": aggMin, "max": aggMax, "mean": aggMean, "avg": aggMean,
	"count_distinct": aggCountDistinct, "approx_count_distinct": aggApproxDistinct,
	"median": aggQuantile, "quantile": aggQuantile, "quantile_cont": aggQuantile, "quantile_disc": aggQuantile,
	"approx_quantile": aggApproxQuantile,
	"variance":        aggVarSamp, "var_samp": aggVarSamp, "var_pop": aggVarPop,
	"stddev": aggStddevSamp, "stddev_samp": aggStddevSamp, "stddev_pop": aggStddevPop,
	"any_value": aggAnyValue,
}

// aggFnNames are the aggregates' names in messages, by aggFn.
var aggFnNames = [...]string{"sum", "count", "min", "max", "mean", "count(distinct)", "approx_count_distinct",
	"quantile", "var_samp", "var_pop", "stddev_samp", "stddev_pop", "any_value", "approx_quantile"}

// binaryState says fn's partial state is one binary value per group
// (encodeState), not a running value of the argument's own type.
func binaryState(fn aggFn) bool {
	switch fn {
	case aggCountDistinct, aggApproxDistinct, aggQuantile, aggApproxQuantile, aggVarSamp, aggVarPop, aggStddevSamp, aggStddevPop:
		return true
	}
	return false
}

// aggSpec is one aggregate as written.
type aggSpec struct {
	fn   aggFn
	arg  expr.Node // nil for count()
	q    float64   // quantile's fraction
	disc bool      // quantile_disc: the value at q's rank, not interpolated
	name string
	call string // the aggregate as named, for messages
}

type aggStage struct {
	name  string // stage name: sum-by, count-by, agg-by
	keys  []string
	aggs  []aggSpec
	input string // the text the aggregates were parsed from, for errors
	// whole: agg, over the whole input, with no keys.
	whole bool
}

// SumBy sums value columns per group of key columns; each sum keeps its
// column's name.
func SumBy(keys, values []string) Stage {
	s := &aggStage{name: "sum-by", keys: keys, input: strings.Join(values, ",")}
	pos := 1
	for _, v := range values {
		s.aggs = append(s.aggs, aggSpec{fn: aggSum, arg: &expr.Column{Name: v, Pos: pos}, name: v})
		pos += len(v) + 1
	}
	return s
}

// CountBy counts the rows of each group of key columns, in a column named
// count.
func CountBy(keys []string) Stage {
	return &aggStage{name: "count-by", keys: keys, aggs: []aggSpec{{fn: aggCount, name: "count"}}}
}

// AggBy computes aggregates per group of key columns. aggs is a comma
// separated list of sum(x), count(), count(x), min(x), max(x), mean(x)
// (or avg), each optionally followed by "as NAME"; x is a column or an
// expression (sum(l_extendedprice * (1 - l_discount)) as revenue).
// Without a name, an aggregate of a column is called fn_column (sum_x),
// count() is count, and an aggregate of an expression is called as
// written.
func AggBy(keys []string, aggs string) (Stage, error) {
	specs, err := parseAggs(aggs)
	if err != nil {
		return nil, stageExprError("agg-by", err)
	}
	return &aggStage{name: "agg-by", keys: keys, aggs: specs, input: aggs}, nil
}

// aggAll is the agg stage: aggregates over the whole input, one row.
func aggAll(aggs string) (Stage, error) {
	specs, err := parseAggs(aggs)
	if err != nil {
		return nil, stageExprError("agg", err)
	}
	return &aggStage{name: "agg", aggs: specs, input: aggs, whole: true}, nil
}

// groupKeys encodes an aggregation's keys; agg's are none, so every row
// is in one group.
func (s *aggStage) groupKeys(in *arrow.Schema) (*keyEncoder, error) {
	if s.whole {
		return &keyEncoder{}, nil
	}
	return newKeyEncoder(s.name, in, s.keys)
}

func parseAggs(input string) ([]aggSpec, error) {
	items, err := expr.ParseList(plan.AggText(input))
	if err != nil {
		return nil, err
	}
	specs := make([]aggSpec, len(items))
	for i, it := range items {
		bad := func(format string, a ...any) error {
			return &expr.Error{Input: input, Pos: it.Pos, Msg: fmt.Sprintf(format, a...)}
		}
		call, ok := it.Node.(*expr.Call)
		if !ok {
			return nil, bad("expected an aggregate such as sum(x), count(), min(x), max(x) or mean(x)")
		}
		fn, ok := aggNames[call.Fn]
		if !ok {
			return nil, bad("unknown aggregate %s (there are %s)", call.Fn, aggList)
		}
		shown := call.Fn // as written, in messages
		if fn == aggCountDistinct {
			shown = "count(distinct)"
		}
		spec := aggSpec{fn: fn, name: it.As, call: shown}
		switch {
		case call.Fn == "quantile" || call.Fn == "quantile_cont" || call.Fn == "quantile_disc" || call.Fn == "approx_quantile":
			if len(call.Args) != 2 {
				return nil, bad("%s takes a value and a fraction: %s(x, 0.9)", call.Fn, call.Fn)
			}
			q, ok := quantileArg(call.Args[1])
			if !ok {
				return nil, bad("%s's fraction must be a number from 0 to 1, not %s", call.Fn, expr.String(call.Args[1]))
			}
			spec.arg, spec.q, spec.disc = call.Args[0], q, call.Fn == "quantile_disc"
		case call.Fn == "median" && len(call.Args) == 1:
			spec.arg, spec.q = call.Args[0], 0.5
		case len(call.Args) > 1:
			return nil, bad("%s takes one argument", shown)
		case len(call.Args) == 0 && fn != aggCount:
			return nil, bad("%s needs an argument", shown)
		case len(call.Args) == 1:
			spec.arg = call.Args[0]
		}
		if spec.name == "" {
			spec.name = defaultAggName(call, it.Text)
		}
		specs[i] = spec
	}
	return specs, nil
}

var countDistinctSpelled = regexp.MustCompile(`^count_distinct\(\s*`)

// aggList names the aggregates, for messages.
const aggList = "sum, count, count(distinct), approx_count_distinct, min, max, mean, avg, median, quantile, " +
	"quantile_disc, approx_quantile, " +
	"stddev, stddev_samp, stddev_pop, variance, var_samp, var_pop, any_value"

func defaultAggName(call *expr.Call, text string) string {
	if len(call.Args) == 0 {
		return "count"
	}
	if c, ok := call.Args[0].(*expr.Column); ok && len(call.Args) == 1 {
		fn := call.Fn
		if fn == "avg" {
			fn = "mean"
		}
		return fn + "_" + c.Name
	}
	if call.Fn == "count_distinct" {
		// text is as plan.AggText spelled it
		text = countDistinctSpelled.ReplaceAllString(text, "count(distinct ")
	}
	return strings.TrimSpace(text)
}

func (s *aggStage) Name() string { return s.name }

// boundAgg is an aggregate bound to the input schema.
type boundAgg struct {
	fn   aggFn
	arg  *expr.Expr // nil for count()
	k    kind       // the argument's kind
	dec  expr.Dec   // a decimal argument's precision and scale
	q    float64    // quantile's fraction
	disc bool       // quantile_disc
	name string
	out  arrow.DataType
}

func (s *aggStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	keys, err := s.groupKeys(in)
	if err != nil {
		return nil, err
	}
	var fields []arrow.Field
	seen := map[string]bool{}
	for _, c := range keys.cols {
		seen[c.name] = true
		fields = append(fields, arrow.Field{Name: c.name, Type: c.out, Nullable: in.Field(c.idx).Nullable})
	}
	var aggs []boundAgg
	for _, spec := range s.aggs {
		b := boundAgg{fn: spec.fn, name: spec.name, q: spec.q, disc: spec.disc}
		if spec.arg != nil {
			x, err := expr.Bind(s.input, spec.arg, in)
			if err != nil {
				return nil, stageExprError(s.name, err)
			}
			b.arg, b.k, b.dec = x, x.Kind, x.Dec()
		}
		out, nullable, ok := aggOut(spec.fn, b.k, b.dec)
		if !ok {
			return nil, s.typeErr(spec, b.k)
		}
		b.out = out
		if seen[b.name] {
			return nil, invalidf("%s: two output columns would be named %q (name one with as)", s.name, b.name)
		}
		seen[b.name] = true
		fields = append(fields, arrow.Field{Name: b.name, Type: b.out, Nullable: nullable})
		aggs = append(aggs, b)
	}
	out := arrow.NewSchema(fields, nil)
	return &bound{name: s.name, out: out, agg: newHashAgg(e, keys, aggs, out, s.name)}, nil
}

// newHashAgg is an aggregation into out of aggs, grouped by keys, that
// spills past the run's memory.
func newHashAgg(e *env, keys *keyEncoder, aggs []boundAgg, out *arrow.Schema, stage string) *hashAgg {
	h := &hashAgg{stage: stage, mem: e.mem, keys: keys, aggs: aggs, out: out,
		res: e.budget.reserve(0), tempDir: e.tempDir}
	h.freshState()
	return h
}

// aggOut is the type of an aggregate of an argument of kind k, whether it
// may be null, and false when the aggregate cannot take that kind.
func aggOut(fn aggFn, k kind, d expr.Dec) (arrow.DataType, bool, bool) {
	switch fn {
	case aggCount, aggCountDistinct, aggApproxDistinct:
		return arrow.PrimitiveTypes.Int64, false, true
	case aggQuantile:
		// DuckDB's quantiles of a decimal are decimals of its type.
		if k == kDecimal {
			return decType(d), true, true
		}
		fallthrough
	case aggMean, aggApproxQuantile, aggVarSamp, aggVarPop, aggStddevSamp, aggStddevPop:
		if !k.Numeric() {
			return nil, true, false
		}
		return arrow.PrimitiveTypes.Float64, true, true
	case aggSum:
		switch k {
		case kInt:
			return arrow.PrimitiveTypes.Int64, true, true
		case kFloat:
			return arrow.PrimitiveTypes.Float64, true, true
		case kDecimal:
			// As DuckDB: 38 digits, the argument's scale.
			return &arrow.Decimal128Type{Precision: 38, Scale: d.S}, true, true
		}
		return nil, true, false
	}
	switch k { // min, max, any_value
	case kDecimal:
		return decType(d), true, true
	case kBool:
		return arrow.FixedWidthTypes.Boolean, true, fn == aggAnyValue
	case kInt:
		return arrow.PrimitiveTypes.Int64, true, true
	case kFloat:
		return arrow.PrimitiveTypes.Float64, true, true
	case kDate:
		return arrow.FixedWidthTypes.Date32, true, true
	case kTime:
		return &arrow.TimestampType{Unit: arrow.Nanosecond}, true, true
	case kString:
		return arrow.BinaryTypes.String, true, true
	}
	return nil, true, false
}

func (s *aggStage) typeErr(spec aggSpec, k kind) error {
	fn := spec.call
	if fn == "" {
		fn = aggFnNames[spec.fn]
	}
	what := "its argument"
	if c, ok := spec.arg.(*expr.Column); ok {
		what = fmt.Sprintf("column %q", c.Name)
	}
	return invalidf("%s: cannot take the %s of %s: it is %s", s.name, fn, what, k.A())
}

// accum holds one aggregate's state for every group: the running value
// (i or f or s, by kind; f is the mean for the variances) and n, the
// values seen; and for the aggregates that need more, the distinct set,
// the sketch, the values, or the sum of squared deviations.
type accum struct {
	i    []int64
	d    []decimal128.Num
	f    []float64
	s    []string
	n    []int64
	set  []map[string]struct{}
	sk   []*hll
	vals [][]float64
	dd   []*ddsketch.DDSketch
	m2   []float64
	// m, when set, holds the arrays of plain values (i, d, f, n, m2):
	// a fold's, which grow to millions of groups (see growIn).
	m *tableMem
}

// grow makes room for groups groups in the parts of the state b keeps:
// the running value only of b's kind, so a group of sum(x) costs 16
// bytes, not 40.
func (a *accum) grow(b boundAgg, groups int) {
	if len(a.n) >= groups {
		return
	}
	a.n = growIn(a.m, a.n, groups)
	switch b.fn {
	case aggSum, aggMean, aggMin, aggMax, aggAnyValue:
		switch b.k {
		case kFloat:
			a.f = growIn(a.m, a.f, groups)
		case kDecimal:
			a.d = growIn(a.m, a.d, groups)
		case kString:
			a.s = growTo(a.s, groups)
		default:
			a.i = growIn(a.m, a.i, groups)
		}
	case aggCountDistinct:
		a.set = growTo(a.set, groups)
	case aggApproxDistinct:
		a.sk = growTo(a.sk, groups)
	case aggQuantile:
		a.vals = growTo(a.vals, groups)
	case aggApproxQuantile:
		a.dd = growTo(a.dd, groups)
	case aggVarSamp, aggVarPop, aggStddevSamp, aggStddevPop:
		a.f, a.m2 = growIn(a.m, a.f, groups), growIn(a.m, a.m2, groups)
	}
}

// growIn is growTo for an array kept in m's buffers (nil: the Go heap).
// A fold's arrays double as its groups come, each doubling a new array;
// from the run's pool these are pages it has (huge ones where the
// system gives them) and the old arrays go back to it, where on the Go
// heap each doubling faulted in fresh pages: TPC-H Q18's 1.5 M groups
// spent a third of their fold so.
func growIn[T tableValue](m *tableMem, s []T, n int) []T {
	if m == nil {
		return growTo(s, n)
	}
	old := len(s)
	if n > cap(s) {
		ns := tableSlice[T](m, max(n, 2*cap(s)))
		copy(ns, s)
		if cap(s) > 0 {
			tableFree(m, s)
		}
		return ns[:n]
	}
	s = s[:n]
	clear(s[old:])
	return s
}

// growTo is s with n elements, the new ones zero; its capacity at least
// doubles when it must grow, so a fold that adds groups one by one copies
// each slice a few times, not once per few groups.
func growTo[T any](s []T, n int) []T {
	old := len(s)
	if n > cap(s) {
		s = slices.Grow(s, max(n, 2*cap(s))-old)
	}
	s = s[:n]
	clear(s[old:])
	return s
}

type hashAgg struct {
	stage string
	mem   memory.Allocator
	keys  *keyEncoder
	aggs  []boundAgg
	out   *arrow.Schema
	rows  freelist.List[keyRows]
	// scratch is each worker's memory for one batch: its rows' groups
	// and its aggregates' evaluation.
	scratch freelist.List[aggScratch]

	// Folded state, touched only by fold and emit. The index's tables
	// and the accumulators' arrays are in arrays' buffers.
	index     *keyIndex
	groupKeys *keyList
	acc       []accum
	arrays    *tableMem
	// dests is fold's: each partial group's place in the fold.
	dests []int32

	// bytes is what the fold holds, counted in res before it is held
	// on past the batch that added it; spills go to tempDir. depth is
	// how many spills this fold is under (see aggspill.go).
	bytes   int64
	res     *reservation
	tempDir string
	depth   int
	spilled *aggSpill
}

// keyIndex finds a group (or a join's first row) by its encoded key.
// The key of one integer (a 1, then its 8 bytes: see key.go) or of two
// is looked up as those integers, in an open-addressing table: grouping
// lineitem by l_orderkey (TPC-H Q18, 1.5 M groups) spent a third of its
// time hashing keys into a Go map. Other keys of at most 16 bytes (short
// strings, a number and a flag) are kept as arrays, which hash faster
// than strings and hold no pointer for the collector to scan. The
// encoding is self-delimiting, so zero padding cannot make two keys
// equal, and the 8 bytes after a 1 are a different integer for each
// key, whatever its type.
type keyIndex struct {
	ints  *intTable  // made at the first key of one integer
	pairs *pairTable // made at the first key of two
	short map[[16]byte]int32
	long  map[string]int32
	hint  int       // the keys expected, when known
	mem   *tableMem // where the integer tables' arrays come from
	// touched is what touch read, kept so that its reads stay.
	touched int32
}

// newKeyIndex is an index for about hint keys (0: not known), its
// integer tables' arrays from mem (nil: the Go heap).
func newKeyIndex(mem *tableMem, hint int) *keyIndex {
	if mem == nil {
		mem = &tableMem{mem: memory.DefaultAllocator}
	}
	return &keyIndex{long: map[string]int32{}, hint: hint, mem: mem}
}

// le64 is the integer of k[at:at+8], little-endian as key.go writes it.
func le64(k string, at int) int64 {
	k = k[at : at+8] // one bounds check; the compiler makes the rest one load
	return int64(uint64(k[0]) | uint64(k[1])<<8 | uint64(k[2])<<16 | uint64(k[3])<<24 |
		uint64(k[4])<<32 | uint64(k[5])<<40 | uint64(k[6])<<48 | uint64(k[7])<<56)
}

// intsOf reads a key of one integer or two: n is how many (0 for any
// other key), a and b the integers.
func intsOf(k string) (n int, a, b int64) {
	switch {
	case len(k) == 9 && k[0] == 1:
		return 1, le64(k, 1), 0
	case len(k) == 18 && k[0] == 1 && k[9] == 1:
		return 2, le64(k, 1), le64(k, 10)
	}
	return 0, 0, 0
}

func (x *keyIndex) get(k string) (int32, bool) {
	switch n, a, b := intsOf(k); {
	case n == 1 && x.ints != nil:
		return x.ints.get(a)
	case n == 2 && x.pairs != nil:
		return x.pairs.get(a, b)
	case n > 0:
		return 0, false // no such key yet
	case len(k) <= 16:
		var a [16]byte
		copy(a[:], k)
		g, ok := x.short[a]
		return g, ok
	}
	g, ok := x.long[k]
	return g, ok
}

// touchAhead is how many keys of a fold touch looks up at once.
const touchAhead = 64

// touch reads the slots that the integer keys among keys start at, and
// does nothing else: the reads do not depend on one another, so the
// cache misses of a table far larger than the caches (TPC-H Q20's 900 k
// groups: four in five of the fold's cycles waited on one) overlap,
// where the lookups one at a time wait on each in turn.
func (x *keyIndex) touch(keys []string) {
	var sum int32
	for _, k := range keys {
		sum += x.slotRow(k)
	}
	x.touched += sum // kept, so that the reads are not left out
}

// getInts is get for a key of one or two integers, as they are.
func (x *keyIndex) getInts(k []int64) (int32, bool) {
	switch {
	case len(k) == 1 && x.ints != nil:
		return x.ints.get(k[0])
	case len(k) == 2 && x.pairs != nil:
		return x.pairs.get(k[0], k[1])
	}
	return 0, false
}

// touchInts is touch for keys of width integers each, in turn in ks.
func (x *keyIndex) touchInts(ks []int64, width int) {
	var sum int32
	switch t, p := x.ints, x.pairs; {
	case width == 1 && t != nil && !t.small():
		for _, k := range ks {
			sum += t.slots[t.slot(k)].row
		}
	case width == 2 && p != nil && len(p.slots) > 1<<14:
		for q := 0; q+1 < len(ks); q += 2 {
			sum += p.slots[p.slot(ks[q], ks[q+1])].row
		}
	}
	x.touched += sum
}

// slotRow is the row in the slot where k's lookup starts (0 for a key
// not of integers).
func (x *keyIndex) slotRow(k string) int32 {
	switch n, a, b := intsOf(k); {
	case n == 1 && x.ints != nil:
		return x.ints.slots[x.ints.slot(a)].row
	case n == 2 && x.pairs != nil:
		return x.pairs.slots[x.pairs.slot(a, b)].row
	}
	return 0
}

func (x *keyIndex) put(k string, g int32) {
	switch n, a, b := intsOf(k); {
	case n == 1:
		if x.ints == nil {
			x.ints = newIntTable(x.mem, max(x.hint, 1<<10))
		}
		x.ints.put(a, g)
	case n == 2:
		if x.pairs == nil {
			x.pairs = newPairTable(x.mem, max(x.hint, 1<<10))
		}
		x.pairs.put(a, b, g)
	case len(k) <= 16:
		var a [16]byte
		copy(a[:], k)
		if x.short == nil {
			x.short = make(map[[16]byte]int32, x.hint) // made at the first such key
		}
		x.short[a] = g
	default:
		x.long[k] = g
	}
}

type aggScratch struct {
	gids []int32
	runs []int32
	eval expr.Scratch
	ints intGroups
}

// minRun is the mean length of the runs of one group a batch's rows must
// come in (data sorted or clustered by its key) for its sums to be
// taken a run at a time.
const minRun = 16

// runsOf is where the runs of one group in gids start, and len(gids)
// last, when they are minRun rows long on average; nil otherwise. A run's
// values are summed in a register, in the same order as row by row, where
// adding each row into its group's slot waits for the last row's store.
func runsOf(gids []int32, buf *[]int32) []int32 {
	changes := 0
	for i := 1; i < len(gids); i++ {
		d := 0
		if gids[i] != gids[i-1] { // a conditional move, not a branch
			d = 1
		}
		changes += d
	}
	if len(gids) < minRun*(changes+1) {
		return nil
	}
	runs := (*buf)[:0]
	for i := range gids {
		if i == 0 || gids[i] != gids[i-1] {
			runs = append(runs, int32(i))
		}
	}
	runs = append(runs, int32(len(gids)))
	*buf = runs
	return runs
}

// aggPartial summarizes one batch: its groups' key bytes in first-seen
// order and their aggregate states. A batch grouped by one integer
// column's values (intGroupRows) has its keys as those integers in ints
// instead, keys nil until stringKeys: a string and its bytes a group
// were a tenth of a grouping by a key of 100 thousand values, and
// garbage for the collector.
type aggPartial struct {
	keys []string
	// ints are the keys of a batch grouped by one or two integer columns
	// (width), width integers a group.
	ints  []int64
	width int
	acc   []accum
}

// groups is how many groups p has.
func (p *aggPartial) groups() int {
	if p.width > 0 {
		return len(p.ints) / p.width
	}
	return len(p.keys)
}

// stringKeys sets keys from ints, for the consumers that read key bytes.
func (p *aggPartial) stringKeys() {
	if p.width > 0 {
		p.keys, p.ints, p.width = intKeyStrings(p.ints, p.width), nil, 0
	}
}

func (h *hashAgg) partial(ctx context.Context, rec arrow.RecordBatch, keep []bool) (any, error) {
	n := int(rec.NumRows())
	if n == 0 {
		return nil, nil
	}
	sc := h.scratch.Get()
	defer h.scratch.Put(sc)
	if cap(sc.gids) < n {
		sc.gids = make([]int32, n)
	}
	gids := sc.gids[:n] // every row's is written below
	p := &aggPartial{}
	switch {
	case intGroupRows(h.keys, rec, keep, gids, &p.ints, &sc.ints):
		p.width = 1
	case pairGroupRows(h.keys, rec, keep, gids, &p.ints, &sc.ints):
		p.width = 2
	case dictGroupRows(h.keys, rec, keep, gids, &p.keys):
	default:
		kr := h.rows.Get()
		defer h.rows.Put(kr)
		h.keys.encode(rec, kr)
		groupRows(kr, keep, gids, &p.keys)
	}
	groups := p.groups()
	runs := runsOf(gids, &sc.runs)
	p.acc = make([]accum, len(h.aggs))
	for j, a := range h.aggs {
		acc := &p.acc[j]
		acc.grow(a, groups)
		if a.arg == nil {
			if runs != nil {
				for r := range len(runs) - 1 {
					if g := gids[runs[r]]; g >= 0 {
						acc.n[g] += int64(runs[r+1] - runs[r])
					}
				}
				continue
			}
			for _, g := range gids {
				if g >= 0 {
					acc.n[g]++
				}
			}
			continue
		}
		v, err := a.arg.EvalScratch(rec, &sc.eval)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", h.stage, a.name, err)
		}
		if err := accumulate(a, acc, v, gids, runs); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", h.stage, a.name, err)
		}
	}
	return p, nil
}

// groupRows gives each row the index of its group in keys (first-seen
// order), or -1 for a row keep leaves out.
func groupRows(kr *keyRows, keep []bool, gids []int32, keys *[]string) {
	// Keys of at most 16 bytes (most: a few numbers or short strings) are
	// looked up as fixed-size arrays, which hash faster than strings. The
	// encoding is self-delimiting, so zero padding cannot make two keys
	// equal.
	short := true
	for i := range gids {
		if kr.offs[i+1]-kr.offs[i] > 16 {
			short = false
			break
		}
	}
	shortIndex, longIndex := map[[16]byte]int32{}, map[string]int32{}
	var arena keyArena
	var prev []byte
	prevG := int32(-1)
	for i := range gids {
		if keep != nil && !keep[i] {
			gids[i] = -1
			continue
		}
		k := kr.row(i)
		if prevG >= 0 && bytes.Equal(k, prev) {
			gids[i] = prevG
			continue
		}
		g := int32(len(*keys))
		if short {
			var a [16]byte
			copy(a[:], k)
			if old, ok := shortIndex[a]; ok {
				g = old
			} else {
				shortIndex[a] = g
				*keys = append(*keys, arena.str(k))
			}
		} else if old, ok := longIndex[string(k)]; ok {
			g = old
		} else {
			s := arena.str(k)
			longIndex[s] = g
			*keys = append(*keys, s)
		}
		gids[i], prev, prevG = g, k, g
	}
}

// accumulate folds the values of one batch into per-group states; rows
// whose group is -1 are left out.
func accumulate(a boundAgg, acc *accum, v vec, gids, runs []int32) error {
	if v.Const {
		// A constant argument: expand it (rare: sum(1)).
		n := len(gids)
		switch v.K {
		case kFloat:
			v.F = slices.Repeat(v.F[:1], n)
		case kDecimal:
			v.D = slices.Repeat(v.D[:1], n)
		case kBool:
			v.B = slices.Repeat(v.B[:1], n)
		case kString:
		default:
			v.I = slices.Repeat(v.I[:1], n)
		}
		if v.Valid != nil {
			v.Valid = slices.Repeat(v.Valid[:1], n)
		}
		if v.K == kString {
			s := v.S
			v.S = func(int) string { return s(0) }
		}
		v.Const = false
	}
	sumLike := a.fn == aggSum || a.fn == aggMean
	switch {
	case a.fn == aggCount:
		for i, g := range gids {
			if g >= 0 && v.IsValid(i) {
				acc.n[g]++
			}
		}
	case sumLike && a.k == kFloat && runs != nil:
		f, sum, cnt := v.F[:len(gids)], acc.f, acc.n
		for r := range len(runs) - 1 {
			lo, hi := runs[r], runs[r+1]
			g := gids[lo]
			if g < 0 {
				continue
			}
			s, c := sum[g], cnt[g]
			if v.Valid == nil {
				for _, x := range f[lo:hi] {
					s += x
				}
				c += int64(hi - lo)
			} else {
				valid := v.Valid[lo:hi]
				for i, x := range f[lo:hi] {
					if valid[i] {
						s += x
						c++
					}
				}
			}
			sum[g], cnt[g] = s, c
		}
	case sumLike && a.k == kFloat && v.Valid == nil:
		f, sum, cnt := v.F[:len(gids)], acc.f, acc.n
		for i, g := range gids {
			if g >= 0 {
				sum[g] += f[i]
				cnt[g]++
			}
		}
	case sumLike && a.k == kFloat:
		for i, g := range gids {
			if g >= 0 && v.Valid[i] {
				acc.f[g] += v.F[i]
				acc.n[g]++
			}
		}
	case sumLike && a.k == kDecimal:
		for i, g := range gids {
			if g < 0 || !v.IsValid(i) {
				continue
			}
			s, ok := expr.AddDec(acc.d[g], v.D[i])
			if !ok {
				return errDecimalSum
			}
			acc.d[g] = s
			acc.n[g]++
		}
	case sumLike:
		for i, g := range gids {
			if g < 0 || !v.IsValid(i) {
				continue
			}
			s, ok := addInt(acc.i[g], v.I[i])
			if !ok {
				return fmt.Errorf("sum overflows int64")
			}
			acc.i[g] = s
			acc.n[g]++
		}
	case a.fn == aggCountDistinct:
		var buf []byte
		for i, g := range gids {
			if g < 0 || !v.IsValid(i) {
				continue
			}
			if acc.set[g] == nil {
				acc.set[g] = map[string]struct{}{}
			}
			buf = distinctKey(v, i, buf)
			if _, ok := acc.set[g][string(buf)]; !ok {
				acc.set[g][string(buf)] = struct{}{}
			}
			acc.n[g]++
		}
	case a.fn == aggApproxDistinct:
		var buf []byte
		for i, g := range gids {
			if g < 0 || !v.IsValid(i) {
				continue
			}
			if acc.sk[g] == nil {
				acc.sk[g] = newHLL()
			}
			buf = distinctKey(v, i, buf)
			acc.sk[g].add(hash64(buf))
			acc.n[g]++
		}
	case a.fn == aggQuantile:
		for i, g := range gids {
			if g >= 0 && v.IsValid(i) {
				acc.vals[g] = append(acc.vals[g], floatOf(v, i))
				acc.n[g]++
			}
		}
	case a.fn == aggApproxQuantile:
		for i, g := range gids {
			if g < 0 || !v.IsValid(i) {
				continue
			}
			if acc.dd[g] == nil {
				acc.dd[g] = newQuantileSketch()
			}
			if err := acc.dd[g].Add(floatOf(v, i)); err != nil {
				return fmt.Errorf("approx_quantile cannot take %v", floatOf(v, i))
			}
			acc.n[g]++
		}
	case binaryState(a.fn): // the variances
		for i, g := range gids {
			if g >= 0 && v.IsValid(i) {
				acc.n[g]++
				acc.f[g], acc.m2[g] = welfordAdd(acc.n[g], acc.f[g], acc.m2[g], floatOf(v, i))
			}
		}
	case a.fn == aggAnyValue:
		for i, g := range gids {
			if g < 0 || !v.IsValid(i) {
				continue
			}
			if acc.n[g] == 0 {
				switch a.k {
				case kFloat:
					acc.f[g] = v.F[i]
				case kDecimal:
					acc.d[g] = v.D[i]
				case kString:
					acc.s[g] = strings.Clone(v.S(i))
				case kBool:
					acc.i[g] = 0
					if v.B[i] {
						acc.i[g] = 1
					}
				default:
					acc.i[g] = v.I[i]
				}
			}
			acc.n[g]++
		}
	default: // min, max
		isMin := a.fn == aggMin
		for i, g := range gids {
			if g < 0 || !v.IsValid(i) {
				continue
			}
			seen := acc.n[g] > 0
			acc.n[g]++
			switch a.k {
			case kFloat:
				if x := v.F[i]; !seen || (x < acc.f[g]) == isMin && x != acc.f[g] {
					acc.f[g] = x
				}
			case kDecimal:
				if x := v.D[i]; !seen || x.Less(acc.d[g]) == isMin && x != acc.d[g] {
					acc.d[g] = x
				}
			case kString:
				if x := v.S(i); !seen || (x < acc.s[g]) == isMin && x != acc.s[g] {
					acc.s[g] = strings.Clone(x)
				}
			default:
				if x := v.I[i]; !seen || (x < acc.i[g]) == isMin && x != acc.i[g] {
					acc.i[g] = x
				}
			}
		}
	}
	return nil
}

// errDecimalSum is a decimal sum past DECIMAL(38)'s 38 digits.
var errDecimalSum = fmt.Errorf("sum overflows DECIMAL(38): cast the argument to double")

// decType is the Arrow type of decimals of type d.
func decType(d expr.Dec) arrow.DataType {
	return &arrow.Decimal128Type{Precision: d.P, Scale: d.S}
}

func addInt(a, b int64) (int64, bool) {
	s := a + b
	return s, (a^s)&(b^s) >= 0
}

// merge folds state src[g] into dst[d].
func mergeAccum(a boundAgg, dst *accum, d int32, src *accum, g int) error {
	if src.n[g] == 0 {
		return nil
	}
	seen := dst.n[d] > 0
	n1 := dst.n[d]
	dst.n[d] += src.n[g]
	switch a.fn {
	case aggAnyValue:
		if !seen {
			switch a.k {
			case kFloat:
				dst.f[d] = src.f[g]
			case kDecimal:
				dst.d[d] = src.d[g]
			case kString:
				dst.s[d] = src.s[g]
			default:
				dst.i[d] = src.i[g]
			}
		}
	case aggCountDistinct:
		if dst.set[d] == nil {
			dst.set[d] = src.set[g]
			break
		}
		for k := range src.set[g] {
			dst.set[d][k] = struct{}{}
		}
	case aggApproxDistinct:
		if dst.sk[d] == nil {
			dst.sk[d] = newHLL()
		}
		dst.sk[d].merge(src.sk[g])
	case aggQuantile:
		dst.vals[d] = append(dst.vals[d], src.vals[g]...)
	case aggApproxQuantile:
		if dst.dd[d] == nil {
			dst.dd[d] = newQuantileSketch()
		}
		if err := dst.dd[d].MergeWith(src.dd[g]); err != nil {
			return err
		}
	case aggVarSamp, aggVarPop, aggStddevSamp, aggStddevPop:
		dst.f[d], dst.m2[d] = welfordMerge(n1, dst.f[d], dst.m2[d], src.n[g], src.f[g], src.m2[g])
	case aggSum, aggMean:
		if a.k == kFloat {
			dst.f[d] += src.f[g]
			return nil
		}
		if a.k == kDecimal {
			s, ok := expr.AddDec(dst.d[d], src.d[g])
			if !ok {
				return errDecimalSum
			}
			dst.d[d] = s
			return nil
		}
		s, ok := addInt(dst.i[d], src.i[g])
		if !ok {
			return fmt.Errorf("sum overflows int64")
		}
		dst.i[d] = s
	case aggMin, aggMax:
		isMin := a.fn == aggMin
		switch a.k {
		case kFloat:
			if x := src.f[g]; !seen || (x < dst.f[d]) == isMin && x != dst.f[d] {
				dst.f[d] = x
			}
		case kDecimal:
			if x := src.d[g]; !seen || x.Less(dst.d[d]) == isMin && x != dst.d[d] {
				dst.d[d] = x
			}
		case kString:
			if x := src.s[g]; !seen || (x < dst.s[d]) == isMin && x != dst.s[d] {
				dst.s[d] = x
			}
		default:
			if x := src.i[g]; !seen || (x < dst.i[d]) == isMin && x != dst.i[d] {
				dst.i[d] = x
			}
		}
	}
	return nil
}

func (h *hashAgg) fold(pa any) error {
	p := pa.(*aggPartial)
	if h.spilled != nil {
		return h.route(p)
	}
	// Each group's place first, then each aggregate merged over them
	// all: a loop of one kind of merge, where a switch on the aggregate
	// for every group of every batch took a tenth of a grouping by a key
	// of 100 thousand values (TPC-H Q13's orders by customer).
	ds := h.dests[:0]
	if p.width > 0 {
		ds = h.placeInts(p.ints, p.width, ds)
	}
	for g, k := range p.keys {
		if g%touchAhead == 0 {
			h.index.touch(p.keys[g:min(g+touchAhead, len(p.keys))])
		}
		d, ok := h.index.get(k)
		if !ok {
			d = int32(h.groupKeys.len())
			h.index.put(k, d)
			h.groupKeys.push(k)
			h.bytes += h.groupCost(k)
		}
		ds = append(ds, d)
	}
	h.dests = ds
	for j, a := range h.aggs {
		h.acc[j].grow(a, h.groupKeys.len())
		if err := h.mergeAll(a, &h.acc[j], &p.acc[j], ds); err != nil {
			return fmt.Errorf("%s: %s: %w", h.stage, a.name, err)
		}
	}
	return h.reserve()
}

// placeInts appends to ds the place of each integer key in the fold,
// new ones added: width integers a key, ints holding each key's in turn.
func (h *hashAgg) placeInts(ints []int64, width int, ds []int32) []int32 {
	x := h.index
	n := len(ints) / width
	var kb [18]byte
	for g := range n {
		if g%touchAhead == 0 {
			x.touchInts(ints[g*width:min(g+touchAhead, n)*width], width)
		}
		k := ints[g*width : (g+1)*width]
		d, ok := x.getInts(k)
		if !ok {
			d = int32(h.groupKeys.len())
			key := unsafeString(intKeyBytes(kb[:0], k...))
			x.put(key, d)
			h.groupKeys.push(key)
			h.bytes += h.groupCost(key)
		}
		ds = append(ds, d)
	}
	return ds
}

// mergeAll merges src's group g into dst's group ds[g], for each g: the
// common aggregates in loops of their own, the others by mergeAccum.
func (h *hashAgg) mergeAll(a boundAgg, dst, src *accum, ds []int32) error {
	switch {
	case a.fn == aggCount:
		for g, d := range ds {
			dst.n[d] += src.n[g]
		}
		return nil
	case (a.fn == aggSum || a.fn == aggMean) && a.k == kFloat:
		for g, d := range ds {
			if src.n[g] != 0 { // as mergeAccum: a -0 sum stays -0
				dst.n[d] += src.n[g]
				dst.f[d] += src.f[g]
			}
		}
		return nil
	case (a.fn == aggSum || a.fn == aggMean) && a.k == kDecimal:
		for g, d := range ds {
			if src.n[g] != 0 {
				s, ok := expr.AddDec(dst.d[d], src.d[g])
				if !ok {
					return errDecimalSum
				}
				dst.n[d] += src.n[g]
				dst.d[d] = s
			}
		}
		return nil
	}
	// What the merge adds, not what the summary holds: a group's min,
	// distinct values or sketch seen again cost nothing more.
	for g, d := range ds {
		held := heldBytes(a, dst, d)
		if a.fn == aggCountDistinct {
			h.bytes += newDistinct(dst, d, src, g)
		}
		if err := mergeAccum(a, dst, d, src, g); err != nil {
			return err
		}
		h.bytes += heldBytes(a, dst, d) - held
	}
	return nil
}

// freshState gives the fold an empty state, its arrays from the run's
// allocator. What held the last state's arrays is the caller's to
// release.
func (h *hashAgg) freshState() {
	h.arrays = &tableMem{mem: h.mem}
	h.index, h.groupKeys, h.acc = newKeyIndex(h.arrays, 0), newKeyList(h.arrays), make([]accum, len(h.aggs))
	for j := range h.acc {
		h.acc[j].m = h.arrays
	}
}

func (h *hashAgg) discard(any) {}
func (h *hashAgg) release() {
	h.releaseSpill()
	h.arrays.release()
	h.res.free()
}

// outBatchRows is the most rows in a batch that an aggregation or a sort
// sends on.
const outBatchRows = 64 << 10

func (h *hashAgg) emit(ctx context.Context, next operator) error {
	if h.spilled != nil {
		return h.emitSpilled(ctx, next)
	}
	rec, err := h.result()
	if err != nil {
		return err
	}
	defer rec.Release()
	// The groups are in rec now: what the fold held is given back, and
	// rec, held until its last rows are sent, is forced in its place,
	// past the budget if need be. So a sort after this does not get what
	// the fold gave back: until this returns it has what rec leaves of
	// the budget, within a share that counts this reservation as a
	// consumer, and when rec leaves it no room it still holds up to its
	// minRun within that share before it writes a run (sortOp.push).
	h.arrays.release()
	h.index, h.groupKeys, h.acc = newKeyIndex(nil, 0), newKeyList(h.arrays), nil
	h.res.free()
	h.res.force(arrowsize.Record(rec))
	defer h.res.free()
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	ob := h.keyOrder()
	kv := ob.keys(rec)
	return emitTaken(ctx, h.mem, rec, ob.perm(kv, n), next)
}

// keyOrder orders the output's rows by its key columns, which lead it.
func (h *hashAgg) keyOrder() *orderBy {
	ob := &orderBy{desc: make([]bool, len(h.keys.cols))}
	for i := range h.keys.cols {
		_, load := expr.Loader(h.out.Field(i).Type)
		ob.idx = append(ob.idx, i)
		ob.load = append(ob.load, load)
	}
	return ob
}

// emitTaken sends the rows of rec in the order perm gives, in batches of
// at most outBatchRows. They are gathered as a sort and a merge gather
// theirs, so an aggregation that spilled and merged its runs sends the
// very bytes it sends from memory.
func emitTaken(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, perm []int32, next operator) error {
	srcs := []arrow.RecordBatch{rec}
	refs := make([]rowRef, 0, min(len(perm), outBatchRows))
	for start := 0; start < len(perm); start += outBatchRows {
		refs = refs[:0]
		for _, i := range perm[start:min(start+outBatchRows, len(perm))] {
			refs = append(refs, rowRef{Row: i})
		}
		out, err := gatherRows(ctx, mem, rec.Schema(), srcs, refs)
		if err != nil {
			return err
		}
		err = next.push(ctx, out)
		out.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// result builds the groups in first-seen order.
func (h *hashAgg) result() (arrow.RecordBatch, error) {
	if len(h.keys.cols) == 0 && h.groupKeys.len() == 0 {
		// agg of no rows is still one row, as SQL's aggregates without
		// GROUP BY: count 0, the others null.
		h.index.put("", 0)
		h.groupKeys.push("")
	}
	n := h.groupKeys.len()
	return h.batchOf(h.out, n, h.groupKeys.bytes, func(add func(arrow.Array)) {
		for j, a := range h.aggs {
			acc := &h.acc[j]
			acc.grow(a, n)
			b := array.NewBuilder(h.mem, a.out)
			b.Reserve(n)
			for g := range n {
				switch {
				case a.fn == aggCount:
					b.(*array.Int64Builder).Append(acc.n[g])
				case a.fn == aggCountDistinct:
					b.(*array.Int64Builder).Append(int64(len(acc.set[g])))
				case a.fn == aggApproxDistinct:
					var e int64
					if acc.sk[g] != nil {
						e = acc.sk[g].estimate()
					}
					b.(*array.Int64Builder).Append(e)
				case acc.n[g] == 0, a.fn == aggQuantile && len(acc.vals[g]) == 0:
					// (A quantile's values and count disagree only in a
					// state read back corrupt.)
					b.AppendNull()
				case a.fn == aggQuantile && a.k == kDecimal:
					b.(*array.Decimal128Builder).Append(quantileDec(acc.vals[g], a.q, a.disc, a.dec.S))
				case a.fn == aggQuantile && a.disc:
					b.(*array.Float64Builder).Append(quantileDisc(acc.vals[g], a.q))
				case a.fn == aggQuantile:
					b.(*array.Float64Builder).Append(quantileCont(acc.vals[g], a.q))
				case a.fn == aggApproxQuantile:
					x, _ := acc.dd[g].GetValueAtQuantile(a.q) // n > 0: not empty
					b.(*array.Float64Builder).Append(x)
				case (a.fn == aggVarSamp || a.fn == aggStddevSamp) && acc.n[g] == 1:
					b.AppendNull() // no sample variance of one value, as in DuckDB
				case a.fn == aggVarSamp:
					b.(*array.Float64Builder).Append(acc.m2[g] / float64(acc.n[g]-1))
				case a.fn == aggVarPop:
					b.(*array.Float64Builder).Append(acc.m2[g] / float64(acc.n[g]))
				case a.fn == aggStddevSamp:
					b.(*array.Float64Builder).Append(math.Sqrt(acc.m2[g] / float64(acc.n[g]-1)))
				case a.fn == aggStddevPop:
					b.(*array.Float64Builder).Append(math.Sqrt(acc.m2[g] / float64(acc.n[g])))
				case a.fn == aggMean && a.k == kFloat:
					b.(*array.Float64Builder).Append(acc.f[g] / float64(acc.n[g]))
				case a.fn == aggMean && a.k == kDecimal:
					// DuckDB divides the exact sum by count x 10^scale.
					b.(*array.Float64Builder).Append(expr.DecFloat(acc.d[g], 0) / (float64(acc.n[g]) * math.Pow10(int(a.dec.S))))
				case a.fn == aggMean:
					b.(*array.Float64Builder).Append(float64(acc.i[g]) / float64(acc.n[g]))
				default:
					acc.appendValue(b, g)
				}
			}
			add(b.NewArray())
			b.Release()
		}
	})
}

// batchOf builds a batch of schema out with a row for each of n encoded
// group keys, key(0) on: the key columns, then the columns aggCols adds.
func (h *hashAgg) batchOf(out *arrow.Schema, n int, key func(int) []byte, aggCols func(add func(arrow.Array))) (arrow.RecordBatch, error) {
	kb := h.keys.builders(h.mem)
	defer func() {
		for _, b := range kb {
			b.Release()
		}
	}()
	for _, b := range kb {
		b.Reserve(n)
	}
	for i := range n {
		if err := h.keys.decode(key(i), kb); err != nil {
			return nil, fmt.Errorf("%s: %w", h.stage, err)
		}
	}
	cols := make([]arrow.Array, 0, len(out.Fields()))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, b := range kb {
		cols = append(cols, b.NewArray())
	}
	aggCols(func(a arrow.Array) { cols = append(cols, a) })
	return array.NewRecordBatch(out, cols, int64(n)), nil
}

// appendValue appends group g's running value to b, a builder of the
// value's own type (int64, float64, date32, timestamp or string).
func (a *accum) appendValue(b array.Builder, g int) {
	switch bb := b.(type) {
	case *array.Int64Builder:
		bb.Append(a.i[g])
	case *array.Float64Builder:
		bb.Append(a.f[g])
	case *array.Decimal128Builder:
		bb.Append(a.d[g])
	case *array.Date32Builder:
		bb.Append(arrow.Date32(a.i[g]))
	case *array.TimestampBuilder:
		bb.Append(arrow.Timestamp(a.i[g]))
	case *array.StringBuilder:
		bb.Append(a.s[g])
	case *array.BooleanBuilder:
		bb.Append(a.i[g] != 0)
	}
}
