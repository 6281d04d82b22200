package exec

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/internal/freelist"
	"github.com/sluice-data/sluice/plan"
)

// JoinOptions say how a join matches rows (see plan.Join).
type JoinOptions struct {
	// How is inner, left, right, full, semi or anti.
	How         string
	Left, Right []string
	Where       string
	Prefix      string
	// Memory is how many bytes of the right side, its hash table counted,
	// the join holds; past that it partitions both sides to disk (a grace
	// hash join). Zero: half the run's Options.Memory (joinBudget).
	Memory int64
}

// Join joins the stream (the left side) with the batches of other (the
// right side), which is read into memory when the first batch arrives.
// Left rows keep their order, each followed by its matches in the right
// side's order; right and full joins then add the right rows that matched
// nothing, in their order.
func Join(other Pipeline, o JoinOptions) Stage { return &joinStage{other: other, o: o} }

// JoinOf is the join j says, with other as its other side.
func JoinOf(j *plan.Join, other Pipeline) Stage {
	return Join(other, JoinOptions{How: j.How, Left: j.Left, Right: j.Right, Where: j.Where, Prefix: j.Prefix, Memory: j.Memory})
}

type joinStage struct {
	other Pipeline
	o     JoinOptions
	// pre, when set, is the right side read before the left side's scan
	// opened (to prune it by the right side's keys).
	pre *sideBatches
	// reduced says the join's left side ran first: its keys, if it was
	// small, are already in the right side (reduce.go).
	reduced bool
	// wherePushed says what --where implies of each side alone is a
	// filter before it (pushWhere).
	wherePushed bool
}

func (s *joinStage) Name() string { return "join" }

// readsColumns: the left columns the output keeps, the keys and what
// --where reads; names of the right side are the other pipeline's and
// the scan before ignores them.
func (s *joinStage) readsColumns(out []string) []string {
	if out == nil {
		return nil
	}
	cols, ok := exprColumns(s.o.Where)
	if s.o.Where != "" && !ok {
		return nil
	}
	var rightNames []string
	known := false
	if s.pre != nil && s.pre.out != nil {
		for _, f := range s.pre.out.Fields() {
			rightNames = append(rightNames, f.Name)
		}
		known = true
	} else {
		// Not read yet (a join inside another join's side): what its
		// pipeline ends with may say. TPC-H Q5's orders side read all 9
		// of its columns, 50 MiB for 15, for want of this.
		rightNames, known = outputNames(s.other.Stages)
	}
	if known {
		// The right side's columns (but keys named alike) are not the
		// left's: a scan before told of them would read every column.
		// So for those --where reads too (TPC-H Q21's semi and anti
		// joins had its lineitem scan read all 16 columns, 186 MiB for
		// 11).
		right := map[string]bool{}
		for _, name := range rightNames {
			if !(s.o.Prefix == "" && slices.Contains(s.o.Left, name) && slices.Contains(s.o.Right, name)) {
				right[s.o.Prefix+name] = true
			}
		}
		out = slices.DeleteFunc(slices.Clone(out), func(n string) bool { return right[n] })
		cols = slices.DeleteFunc(cols, func(n string) bool { return right[n] })
	}
	return union(out, append(slices.Clone(s.o.Left), cols...)...)
}

// preserves says the join keeps the unmatched rows of that side.
func (s *joinStage) preserves(left bool) bool {
	if left {
		return s.o.How == "left" || s.o.How == "full"
	}
	return s.o.How == "right" || s.o.How == "full"
}

// otherSchema is the schema of the other side's batches, found as a run
// would find it: the source opened for its schema, its stages bound.
func (s *joinStage) otherSchema(e *env) (*arrow.Schema, error) {
	if len(s.other.Stages) > 0 && IsSink(s.other.Stages[len(s.other.Stages)-1]) {
		return nil, invalidf("join: the right side ends in %s: it must end in a stream", s.other.Stages[len(s.other.Stages)-1].Name())
	}
	src, err := s.other.Source.open(context.Background(), e)
	if err != nil {
		return nil, fmt.Errorf("join (right side): %w", err)
	}
	schema := src.Schema()
	src.Close()
	var out *arrow.Schema
	sink := Collect(func(s *arrow.Schema) { out = s }, nil)
	if _, err := bindAll(e, schema, append(slices.Clone(s.other.Stages), sink)); err != nil {
		return nil, fmt.Errorf("join (right side): %w", err)
	}
	return out, nil
}

// keyKind is what a key's values are compared as: integers of every
// width alike, strings and binaries alike, dictionaries as their values.
func keyKind(dt arrow.DataType) string {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return "an integer"
	case arrow.FLOAT32, arrow.FLOAT64:
		return "a float"
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY, arrow.STRING_VIEW, arrow.BINARY_VIEW:
		return "a string"
	case arrow.DICTIONARY:
		return keyKind(dt.(*arrow.DictionaryType).ValueType)
	case arrow.DECIMAL128:
		// Keys are compared as unscaled integers: a scale must match.
		return fmt.Sprintf("a decimal of scale %d", dt.(*arrow.Decimal128Type).Scale)
	}
	return dt.String()
}

func valueType(dt arrow.DataType) arrow.DataType {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		return d.ValueType
	}
	return dt
}

func (s *joinStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	right, err := s.otherSchema(e)
	if err != nil {
		return nil, err
	}
	// The right side is held with dictionaries decoded, so gathering its
	// rows is a copy of values.
	j, err := newJoiner(s, e, in, decodedSchema(right))
	if err != nil {
		return nil, err
	}
	out := j.joined
	if s.semi() {
		out = in
	}
	b := &bound{name: "join", out: out, done: j.release}
	switch {
	case s.pre != nil && s.pre.spill != nil:
		b.newOp = func(next operator) (operator, error) { return newGraceOp(s, e, in, next) }
	case s.preserves(false):
		b.newOp = func(next operator) (operator, error) { return &joinOp{j: j, next: next}, nil }
	default:
		b.mapper = j
	}
	return b, nil
}

func (s *joinStage) semi() bool { return s.o.How == "semi" || s.o.How == "anti" }

// newJoiner checks the join against the schemas of its sides and works
// out the schema of joined rows.
func newJoiner(s *joinStage, e *env, in, right *arrow.Schema) (*joiner, error) {
	o := s.o
	j := &joiner{stage: s, e: e, in: in, right: right}
	var err error
	if j.lkeys, err = newKeyEncoder("join (left side)", in, o.Left); err != nil {
		return nil, err
	}
	if j.rkeys, err = newKeyEncoder("join (right side)", right, o.Right); err != nil {
		return nil, err
	}
	// A key named alike on both sides is in the output once.
	dup := map[int]int{} // right column -> the left column it is
	for k := range o.Left {
		lc, rc := j.lkeys.cols[k], j.rkeys.cols[k]
		if lk, rk := keyKind(lc.in), keyKind(rc.in); lk != rk {
			return nil, invalidf("join --on: key %s is %s on the left side and %s is %s on the right side", o.Left[k], lk, o.Right[k], rk)
		}
		if o.Left[k] == o.Right[k] && o.Prefix == "" {
			dup[rc.idx] = lc.idx
		}
	}
	j.intKey = len(o.Left) == 1 && smallInt(j.lkeys.cols[0].in) && smallInt(j.rkeys.cols[0].in)
	var fields []arrow.Field
	for _, f := range in.Fields() {
		f.Nullable = f.Nullable || s.preserves(false)
		fields = append(fields, f)
	}
	for i, f := range right.Fields() {
		if li, ok := dup[i]; ok {
			j.dupLeft = append(j.dupLeft, [2]int{li, i})
			continue
		}
		f.Name = o.Prefix + f.Name
		if in.HasField(f.Name) {
			// In a semi or anti join only --where sees the right side's
			// columns: a clash matters when it could not tell them apart.
			if s.semi() && o.Where == "" {
				continue
			}
			return nil, invalidf("join: column %q is on both sides: rename it on one side (rename, select) or give --prefix for the right side's columns", f.Name)
		}
		f.Nullable = f.Nullable || s.preserves(true)
		j.rightKeep = append(j.rightKeep, i)
		fields = append(fields, f)
	}
	md := in.Metadata()
	j.joined = arrow.NewSchema(fields, &md)
	if o.Where != "" {
		if j.where, err = expr.CompileFilter(o.Where, j.joined); err != nil {
			return nil, stageExprError("join --where", err)
		}
	}
	return j, nil
}

// joiner is a join bound to its input: the right side's hash table once
// built, and how to probe it with a left batch.
type joiner struct {
	stage *joinStage
	e     *env
	in    *arrow.Schema
	right *arrow.Schema
	// joined is the schema of matched pairs: left columns, then the
	// right ones but for keys named alike (dupLeft: left, right index).
	joined       *arrow.Schema
	rightKeep    []int
	dupLeft      [][2]int
	lkeys, rkeys *keyEncoder
	where        *expr.Expr
	intKey       bool

	once     sync.Once
	buildErr error
	t        *joinTable
	// pairs are probes' arrays, recycled (pairBuffers).
	pairs freelist.List[pairs]
}

// joinTable is the right side (or one part of it) indexed by key.
type joinTable struct {
	// batches are the right side's, then one row of nulls (nullRef) that
	// a left row without a match takes its right columns from.
	batches []arrow.RecordBatch
	nullRef rowRef
	// refs are the right side's rows with a key, grouped by key (index):
	// key g's are refs[span(g)].
	refs   []rowRef
	first  []int32 // where each key's rows start in refs; nil when each row is a key
	starts []int   // the number of each batch's first row
	// head gives each key's number; intHead replaces it for one integer
	// key, whose values are looked up as they are rather than as key
	// bytes.
	head    *keyIndex
	intHead *intTable
	// matched marks the right rows that matched (right and full joins,
	// which probe one batch at a time).
	matched []bool
	// keysOnly says the table holds the right side's keys and nothing
	// else (refs and next are nil): a semi or anti join without --where
	// asks only whether a key is there, and a right side of millions of
	// rows often has far fewer keys (TPC-H Q22's 1.5 M orders, 100 k
	// customers), whose table is that much smaller to make and to touch.
	keysOnly bool
	// keys is how many distinct keys index found.
	keys int
	// pack, for a key of several integer columns, makes one int64 of
	// them, which intHead indexes.
	pack *keyPack
	// arrays holds refs, first and intHead's arrays.
	arrays tableMem
}

func (t *joinTable) release() {
	releaseAll(t.batches)
	t.batches = nil
	t.arrays.release()
	t.refs, t.first, t.intHead, t.head = nil, nil, nil, nil
}

// ready builds the table of the right side, once: from the batches read
// before the run began, or by reading it now.
func (j *joiner) ready(ctx context.Context) error {
	j.once.Do(func() {
		side := j.stage.pre
		if side == nil {
			if side, j.buildErr = readSide(ctx, j.e, j.stage.other, j.stage.o, nil); j.buildErr != nil {
				return
			}
			defer side.release()
		}
		batches := make([]arrow.RecordBatch, len(side.batches))
		for i, b := range side.batches {
			b.Retain()
			batches[i] = b
		}
		j.t, j.buildErr = j.buildTable(batches)
	})
	return j.buildErr
}

func (j *joiner) release() {
	if j.t != nil {
		j.t.release()
	}
}

// buildTable indexes batches (of schema j.right, which the table takes)
// by key.
func (j *joiner) buildTable(batches []arrow.RecordBatch) (*joinTable, error) {
	t := &joinTable{batches: batches, arrays: tableMem{mem: j.e.mem}}
	for _, b := range batches {
		if !b.Schema().Equal(j.right) {
			t.release()
			return nil, fmt.Errorf("join (right side): its schema changed while it was read: %s, bound as %s", schemaString(b.Schema()), schemaString(j.right))
		}
	}
	n := 0
	for _, b := range batches {
		n += int(b.NumRows())
	}
	if n > 1<<31-2 {
		t.release()
		return nil, fmt.Errorf("join (right side): %d rows, more than a join holds (2^31)", n)
	}
	if !j.intKey {
		t.pack = newKeyPack(batches, j.lkeys, j.rkeys)
	}
	intKey := j.intKey || t.pack != nil
	if j.stage.semi() && j.where == nil {
		t.indexKeys(batches, j.rkeys, intKey, n)
	} else {
		t.index(batches, j.rkeys, intKey, n)
	}
	if intKey {
		t.intHead.withBits()
	}
	if j.stage.preserves(false) {
		t.matched = make([]bool, n)
	}
	cols := make([]arrow.Array, j.right.NumFields())
	for i, f := range j.right.Fields() {
		cols[i] = array.MakeArrayOfNull(j.e.mem, f.Type, 1)
	}
	nullRow := array.NewRecordBatch(j.right, cols, 1)
	for _, c := range cols {
		c.Release()
	}
	t.nullRef = rowRef{Batch: int32(len(t.batches))}
	t.batches = append(t.batches, nullRow)
	return t, nil
}

// index groups the rows of batches (n in all) by key: refs holds them
// one key after another, each key's in the batches' order, and head or
// intHead gives each key's number g, whose rows are refs[span(g)]. A
// probe then copies a key's rows from one place, where rows chained
// through the side's order cost a cache miss each (TPC-H Q13's customers,
// ten orders each, among 1.5 M: 23 % of the query's time). Rows with a
// null key are in no group.
func (t *joinTable) index(batches []arrow.RecordBatch, keys *keyEncoder, intKey bool, n int) {
	gids := tableSlice[int32](&t.arrays, n)
	defer tableFree(&t.arrays, gids)
	if intKey {
		t.intHead = newIntTable(&t.arrays, t.distinctInts(batches, keys, n))
	} else {
		t.head = newKeyIndex(&t.arrays, n)
	}
	var kr keyRows
	var ints []int64
	row := 0
	for _, b := range batches {
		t.starts = append(t.starts, row)
		if intKey {
			ints = t.keyInts(b, keys, ints)
		} else {
			keys.encode(b, &kr)
		}
		nulls := keyNulls(b, keys)
		rows := int(b.NumRows())
		for r := range rows {
			if !intKey && r%touchAhead == 0 {
				// The next keys' slots read ahead (see keyIndex.touch).
				var sum int32
				for q := r; q < min(r+touchAhead, rows); q++ {
					sum += t.head.slotRow(unsafeString(kr.row(q)))
				}
				t.head.touched += sum
			}
			if nulls != nil && nulls[r] {
				gids[row] = -1 // a null key matches nothing
				row++
				continue
			}
			var g int32
			var ok bool
			if intKey {
				if g, ok = t.intHead.get(ints[r]); !ok {
					g = int32(t.keys)
					t.intHead.put(ints[r], g)
				}
			} else {
				k := kr.row(r)
				if g, ok = t.head.get(string(k)); !ok {
					g = int32(t.keys)
					t.head.put(string(k), g)
				}
			}
			if !ok {
				t.keys++
			}
			gids[row] = g
			row++
		}
	}
	if t.keys == n {
		// Every row a key of its own, in order: refs are the rows.
		t.refs = tableSlice[rowRef](&t.arrays, n)
		row := 0
		for bi, b := range batches {
			for r := range int32(b.NumRows()) {
				t.refs[row] = rowRef{Batch: int32(bi), Row: r}
				row++
			}
		}
		return
	}
	// A counting sort of the rows by key: first[g] is where key g's rows
	// start, first[g+1] where they end.
	t.first = tableSlice[int32](&t.arrays, t.keys+1)
	for _, g := range gids {
		if g >= 0 {
			t.first[g+1]++
		}
	}
	for g := range t.keys {
		t.first[g+1] += t.first[g]
	}
	at := tableSlice[int32](&t.arrays, t.keys)
	defer tableFree(&t.arrays, at)
	copy(at, t.first)
	t.refs = tableSlice[rowRef](&t.arrays, int(t.first[t.keys]))
	row = 0
	for bi, b := range batches {
		for r := range int32(b.NumRows()) {
			if g := gids[row]; g >= 0 {
				t.refs[at[g]] = rowRef{Batch: int32(bi), Row: r}
				at[g]++
			}
			row++
		}
	}
}

// pair adds to p left row i beside each right row of key g (alone, in
// a table of keys only: a semi or anti join needs no right row).
func (t *joinTable) pair(p *pairs, i, g int32) {
	if t.keysOnly {
		p.L = append(p.L, i)
		return
	}
	lo, hi := t.span(g)
	for range hi - lo {
		p.L = append(p.L, i)
	}
	p.R = append(p.R, t.refs[lo:hi]...)
}

// span is where key g's rows are in refs.
func (t *joinTable) span(g int32) (int32, int32) {
	if t.first == nil {
		return g, g + 1
	}
	return t.first[g], t.first[g+1]
}

// rowNumber is the number of the row r names, counting through the
// batches.
func (t *joinTable) rowNumber(r rowRef) int { return t.starts[r.Batch] + int(r.Row) }

// distinctInts estimates how many distinct keys batches hold (n rows),
// for the size of the table: one made for n keys when each key has ten
// rows (Q13's orders by customer) is ten times the size it need be, and
// its pages' first touch and its cache misses cost more than the
// estimate. Linear counting: the keys hashed into a bitmap of m bits, of
// which a fraction z stays clear, number about -m ln z.
func (t *joinTable) distinctInts(batches []arrow.RecordBatch, keys *keyEncoder, n int) int {
	if n <= 1<<14 {
		return n
	}
	m := min(1<<bits.Len(uint(n)), 1<<24) // bits: a load of at most 1 (the estimate is close), 2 MiB at most
	shift := uint(64 - bits.TrailingZeros(uint(m)))
	bitmap := tableSlice[uint64](&t.arrays, m/64)
	defer tableFree(&t.arrays, bitmap)
	var ints []int64
	for _, b := range batches {
		ints = t.keyInts(b, keys, ints)
		for _, k := range ints[:b.NumRows()] {
			// A full mix: Fibonacci hashing keeps the pattern of keys
			// such as multiples of 1024, which linear counting reads as
			// collisions.
			h := uint64(k)
			h = (h ^ h>>33) * 0xff51afd7ed558ccd
			h = (h ^ h>>33) * 0xc4ceb9fe1a85ec53
			h = (h ^ h>>33) >> shift
			bitmap[h>>6] |= 1 << (h & 63)
		}
	}
	set := 0
	for _, w := range bitmap {
		set += bits.OnesCount64(w)
	}
	if set == m {
		return n
	}
	est := -float64(m) * math.Log(float64(m-set)/float64(m))
	// A tenth more, so that a close estimate does not grow the table.
	return min(n, int(est*1.1)+1)
}

// indexKeys is index for a table that holds only the keys (keysOnly):
// its key table grows with the keys it finds, from a size for few.
func (t *joinTable) indexKeys(batches []arrow.RecordBatch, keys *keyEncoder, intKey bool, n int) {
	t.keysOnly = true
	row := 0
	for _, b := range batches {
		t.starts = append(t.starts, row)
		row += int(b.NumRows())
	}
	if intKey {
		t.intHead = newIntTable(&t.arrays, min(n, 1<<14))
	} else {
		t.head = newKeyIndex(&t.arrays, 0)
	}
	var kr keyRows
	var ints []int64
	for _, b := range batches {
		if intKey {
			ints = t.keyInts(b, keys, ints)
		} else {
			keys.encode(b, &kr)
		}
		nulls := keyNulls(b, keys)
		for r := range int(b.NumRows()) {
			switch {
			case nulls != nil && nulls[r]:
			case intKey:
				t.intHead.put(ints[r], 0)
			default:
				if _, ok := t.head.get(string(kr.row(r))); !ok {
					t.head.put(string(kr.row(r)), 0)
				}
			}
		}
	}
}

// pairBuffers are empty pairs with room for n (R only if right), from
// the ones recycled: a batch's pairs made anew cost the zeroing of room
// for every row of it, most of which match nothing in a selective join
// (TPC-H Q3).
func (j *joiner) pairBuffers(n int, right bool) pairs {
	p := *j.pairs.Get()
	if cap(p.L) < n {
		p.L = make([]int32, 0, n)
	}
	p.L = p.L[:0]
	switch {
	case !right:
		p.R = nil
	case cap(p.R) < n:
		p.R = make([]rowRef, 0, n)
	default:
		p.R = p.R[:0]
	}
	return p
}

// recycle keeps p's arrays for pairBuffers, unless they are large: a
// join whose keys repeat makes room for many rows a row.
func (j *joiner) recycle(p pairs) {
	if cap(p.L) > 1<<20 || cap(p.R) > 1<<20 {
		return
	}
	j.pairs.Put(&pairs{L: p.L[:0], R: p.R[:0]})
}

// pairs are matched rows: left row L[i] with right row R[i].
type pairs struct {
	L []int32
	R []rowRef
}

// probe finds the pairs of rec's rows and t's whose keys are equal and,
// with --where, for which it holds; pairs come in left order.
func (j *joiner) probe(ctx context.Context, t *joinTable, rec arrow.RecordBatch) (pairs, error) {
	// Room for a match a left row in the joins that matter (facts to a
	// dimension), or for as many as the right side has rows a key (TPC-H
	// Q13's customers, ten orders each), saves growing the pairs batch
	// by batch.
	n := int(rec.NumRows())
	per := 1
	if !t.keysOnly && t.keys > 0 {
		per = min((len(t.refs)+t.keys-1)/t.keys, 64)
	}
	p := j.pairBuffers(n*per, !t.keysOnly)
	var kr keyRows
	var ints []int64
	intKey := j.intKey || t.pack != nil
	if intKey {
		ints = t.keyInts(rec, j.lkeys, nil)
	} else {
		j.lkeys.encode(rec, &kr)
	}
	nulls := keyNulls(rec, j.lkeys)
	if intKey && t.intHead.bits != nil {
		j.probeBits(t, ints[:n], nulls, &p)
	} else {
		j.probeAll(t, n, intKey, ints, &kr, nulls, &p)
	}
	if j.where == nil || len(p.L) == 0 {
		return p, nil
	}
	cand, err := j.assemble(ctx, t, rec, p)
	if err != nil {
		return p, err
	}
	defer cand.Release()
	v, err := j.where.Eval(cand)
	if err != nil {
		return p, fmt.Errorf("join --where: %w", err)
	}
	// The pairs that hold, in place: p's arrays stay the ones recycled.
	w := 0
	for i := range p.L {
		if v.IsValid(i) && (v.Const && v.B[0] || !v.Const && v.B[i]) {
			p.L[w], p.R[w] = p.L[i], p.R[i]
			w++
		}
	}
	p.L, p.R = p.L[:w], p.R[:w]
	return p, nil
}

// probeAll finds the pairs of the n rows whose keys are ints (intKey)
// or in kr, each looked up in turn.
func (j *joiner) probeAll(t *joinTable, n int, intKey bool, ints []int64, kr *keyRows, nulls []bool, p *pairs) {
	var touched int32
	ahead := !intKey || !t.intHead.small()
	for i := range n {
		if ahead && i%touchAhead == 0 {
			// The next keys' slots read ahead, their cache misses at
			// once (see keyIndex.touch): TPC-H Q9's and Q3's tables are
			// far larger than the caches.
			end := min(i+touchAhead, n)
			for q := i; q < end; q++ {
				if intKey {
					if k := ints[q]; t.intHead.mayHave(k) {
						touched += t.intHead.slots[t.intHead.slot(k)].row
					}
				} else {
					touched += t.head.slotRow(unsafeString(kr.row(q)))
				}
			}
		}
		if nulls != nil && nulls[i] {
			continue
		}
		var h int32
		var ok bool
		if intKey {
			h, ok = t.intHead.find(ints[i])
		} else {
			h, ok = t.head.get(string(kr.row(i)))
		}
		if ok {
			t.pair(p, int32(i), h)
		}
	}
	runtime.KeepAlive(touched) // the reads above are for their misses alone
}

// probeBits is probeAll for an integer key whose table has a bitmap: the
// rows whose bit is set are found first, in a loop of their own, and only
// they are looked up, their slots read ahead. Most rows of a selective
// join (TPC-H Q5's lineitems, against the orders of one year) end at the
// bitmap, which row by row was tested twice among the lookups.
func (j *joiner) probeBits(t *joinTable, ints []int64, nulls []bool, p *pairs) {
	tb := t.intHead
	cb := j.pairBuffers(len(ints), false)
	defer j.recycle(cb)
	cand := cb.L
	for i, k := range ints {
		if tb.mayHave(k) {
			cand = append(cand, int32(i))
		}
	}
	cb.L = cand
	var touched int32
	ahead := !tb.small()
	for c, i := range cand {
		if ahead && c%touchAhead == 0 {
			for _, q := range cand[c:min(c+touchAhead, len(cand))] {
				touched += tb.slots[tb.slot(ints[q])].row
			}
		}
		if nulls != nil && nulls[i] {
			continue
		}
		if h, ok := tb.get(ints[i]); ok {
			t.pair(p, i, h)
		}
	}
	runtime.KeepAlive(touched) // the reads above are for their misses alone
}

// assemble makes the joined rows of p: left row L[i] beside right row
// R[i]. L is -1 for a right row that matched nothing (every row of p, then:
// they are sent apart, at the end).
func (j *joiner) assemble(ctx context.Context, t *joinTable, rec arrow.RecordBatch, p pairs) (arrow.RecordBatch, error) {
	mem := j.e.mem
	n := len(p.L)
	var left arrow.RecordBatch
	var err error
	if slices.Contains(p.L, -1) {
		left, err = j.leftWithNulls(ctx, t, p)
	} else {
		left, err = takeRows(ctx, mem, rec, func(add func(int32)) {
			for _, i := range p.L {
				add(i)
			}
		}, n)
	}
	if err != nil {
		return nil, err
	}
	defer left.Release()
	right, err := gatherRows(ctx, mem, j.right, t.batches, p.R)
	if err != nil {
		return nil, err
	}
	defer right.Release()
	cols := slices.Clone(left.Columns())
	for _, i := range j.rightKeep {
		cols = append(cols, right.Column(i))
	}
	return array.NewRecordBatch(j.joined, cols, int64(n)), nil
}

// leftWithNulls is the left columns of right rows alone: nulls, but for
// keys named alike, which take the right's value.
func (j *joiner) leftWithNulls(ctx context.Context, t *joinTable, p pairs) (arrow.RecordBatch, error) {
	mem := j.e.mem
	n := len(p.L)
	cols := make([]arrow.Array, j.in.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, f := range j.in.Fields() {
		cols[i] = array.MakeArrayOfNull(mem, f.Type, n)
	}
	for _, d := range j.dupLeft {
		li, ri := d[0], d[1]
		arrs := make([]arrow.Array, len(t.batches))
		for b, rb := range t.batches {
			arrs[b] = rb.Column(ri)
		}
		v, err := gatherColumn(ctx, mem, j.right.Field(ri).Type, arrs, p.R)
		if err != nil {
			return nil, err
		}
		if lt := j.in.Field(li).Type; !arrow.TypeEqual(lt, v.DataType()) {
			c, err := compute.CastArray(ctx, v, compute.SafeCastOptions(lt))
			v.Release()
			if err != nil {
				return nil, fmt.Errorf("join: key %s: %w", j.in.Field(li).Name, err)
			}
			v = c
		}
		cols[li].Release()
		cols[li] = v
	}
	return array.NewRecordBatch(j.in, cols, int64(n)), nil
}

// mapBatch joins one left batch (inner, left, semi and anti joins, which
// keep no state across batches).
func (j *joiner) mapBatch(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if err := j.ready(ctx); err != nil {
		return nil, err
	}
	return j.joinBatch(ctx, j.t, rec)
}

// joinBatch joins rec with t: the output of one left batch, right rows
// that matched marked in t for right and full joins.
func (j *joiner) joinBatch(ctx context.Context, t *joinTable, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	p, err := j.probe(ctx, t, rec)
	if err != nil {
		return nil, err
	}
	defer j.recycle(p) // what follows copies the rows p names
	if t.matched != nil {
		for _, r := range p.R {
			t.matched[t.starts[r.Batch]+int(r.Row)] = true
		}
	}
	switch j.stage.o.How {
	case "semi", "anti":
		want := j.stage.o.How == "semi"
		has := make([]bool, rec.NumRows())
		for _, i := range p.L {
			has[i] = true
		}
		var rows []int32
		for i, h := range has {
			if h == want {
				rows = append(rows, int32(i))
			}
		}
		if len(rows) == len(has) {
			rec.Retain()
			return rec, nil
		}
		return takeRows(ctx, j.e.mem, rec, func(add func(int32)) {
			for _, i := range rows {
				add(i)
			}
		}, len(rows))
	case "left", "full":
		p = withUnmatchedLeft(t, rec, p)
	}
	return j.assemble(ctx, t, rec, p)
}

// unmatchedRight sends the right rows of t that matched nothing, beside
// nulls, to emit in batches.
func (j *joiner) unmatchedRight(ctx context.Context, t *joinTable, emit func(arrow.RecordBatch) error) error {
	var p pairs
	flush := func() error {
		if len(p.L) == 0 {
			return nil
		}
		out, err := j.assemble(ctx, t, nil, p)
		if err != nil {
			return err
		}
		defer out.Release()
		p = pairs{}
		return emit(out)
	}
	for i, m := range t.matched {
		if m {
			continue
		}
		b, _ := slices.BinarySearch(t.starts, i+1) // the batch i is in, + 1
		p.L = append(p.L, -1)
		p.R = append(p.R, rowRef{Batch: int32(b - 1), Row: int32(i - t.starts[b-1])})
		if len(p.L) == outBatchRows {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// withUnmatchedLeft puts each left row that matched nothing in its place
// among p, beside the right side's row of nulls.
func withUnmatchedLeft(t *joinTable, rec arrow.RecordBatch, p pairs) pairs {
	n := int(rec.NumRows()) + len(p.L)
	for i := 1; i <= len(p.L); i++ {
		if i == len(p.L) || p.L[i] != p.L[i-1] {
			n-- // a left row that matched
		}
	}
	out := pairs{L: make([]int32, 0, n), R: make([]rowRef, 0, n)}
	k := 0
	for i := range int32(rec.NumRows()) {
		if k < len(p.L) && p.L[k] == i {
			for k < len(p.L) && p.L[k] == i {
				out.L = append(out.L, i)
				out.R = append(out.R, p.R[k])
				k++
			}
			continue
		}
		out.L = append(out.L, i)
		out.R = append(out.R, t.nullRef)
	}
	return out
}

// joinOp runs a right or full join: batches one at a time, the right
// rows that matched marked, the others sent at the end.
type joinOp struct {
	j    *joiner
	next operator
}

func (o *joinOp) push(ctx context.Context, rec arrow.RecordBatch) error {
	if err := o.j.ready(ctx); err != nil {
		return err
	}
	out, err := o.j.joinBatch(ctx, o.j.t, rec)
	if err != nil {
		return err
	}
	defer out.Release()
	return o.next.push(ctx, out)
}

func (o *joinOp) finish(ctx context.Context) error {
	if err := o.j.ready(ctx); err != nil {
		return err
	}
	if err := o.j.unmatchedRight(ctx, o.j.t, func(r arrow.RecordBatch) error { return o.next.push(ctx, r) }); err != nil {
		return err
	}
	return o.next.finish(ctx)
}

func (o *joinOp) release() {}

// decodedSchema is s with dictionaries as their value types.
func decodedSchema(s *arrow.Schema) *arrow.Schema {
	fields := slices.Clone(s.Fields())
	for i := range fields {
		fields[i].Type = valueType(fields[i].Type)
	}
	return arrow.NewSchema(fields, nil)
}

// decodeDicts returns rec with its dictionary columns as their values.
func decodeDicts(ctx context.Context, e *env, rec arrow.RecordBatch, to *arrow.Schema) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, c := range rec.Columns() {
		d, ok := c.(*array.Dictionary)
		if !ok {
			c.Retain()
			cols[i] = c
			continue
		}
		v, err := takeArray(ctx, e.mem, d.Dictionary(), d.Indices())
		if err != nil {
			return nil, err
		}
		cols[i] = v
	}
	return array.NewRecordBatch(to, cols, rec.NumRows()), nil
}

// keyNulls marks the rows with a null in a key column; nil when none.
func keyNulls(rec arrow.RecordBatch, k *keyEncoder) []bool {
	var nulls []bool
	for _, c := range k.cols {
		a := rec.Column(c.idx)
		if a.NullN() == 0 {
			continue
		}
		if nulls == nil {
			nulls = make([]bool, rec.NumRows())
		}
		for i := range nulls {
			nulls[i] = nulls[i] || a.IsNull(i)
		}
	}
	return nulls
}

// keyInts are the int64 keys of rec's rows, for a table indexed by
// them: keys's one column's values, or its columns packed (pack).
func (t *joinTable) keyInts(rec arrow.RecordBatch, keys *keyEncoder, buf []int64) []int64 {
	if t.pack != nil {
		return t.pack.values(rec, keys, buf)
	}
	return intValues(rec.Column(keys.cols[0].idx), buf)
}

// keyPack makes one int64 of a key of several integer columns, each
// column's value less the least the right side has, in bits of its own:
// a join on two keys (TPC-H Q5's supplier and nation, Q9's part and
// supplier) then looks its keys up in an intTable, with its bitmap,
// instead of hashing their bytes. A left row with a value outside the
// right side's range for its column matches nothing: its key is -1,
// which no packed key is.
type keyPack struct {
	lo, hi []int64
	shift  []uint
}

// columnInts are a's values as int64s: an int64 column's own memory, or
// widened into *scratch, which never holds a column's memory (intValues
// would widen the next column into it).
func columnInts(a arrow.Array, scratch *[]int64) []int64 {
	v := intValues(a, *scratch)
	if _, own := a.(*array.Int64); !own {
		*scratch = v
	}
	return v
}

// newKeyPack is the pack of the right side's key columns (batches) when
// every key column of both sides is an integer and their spans take 62
// bits at most; nil otherwise.
func newKeyPack(batches []arrow.RecordBatch, left, right *keyEncoder) *keyPack {
	n := len(right.cols)
	if n < 2 {
		return nil
	}
	for k := range n {
		if !smallInt(left.cols[k].in) || !smallInt(right.cols[k].in) {
			return nil
		}
	}
	p := &keyPack{lo: make([]int64, n), hi: make([]int64, n), shift: make([]uint, n)}
	seen := false
	var scratch []int64
	for _, b := range batches {
		nulls := keyNulls(b, right)
		for k, c := range right.cols {
			for i, v := range columnInts(b.Column(c.idx), &scratch) {
				if nulls != nil && nulls[i] {
					continue // its value may be anything
				}
				if !seen {
					for q := range n {
						p.lo[q], p.hi[q] = math.MaxInt64, math.MinInt64
					}
					seen = true
				}
				p.lo[k], p.hi[k] = min(p.lo[k], v), max(p.hi[k], v)
			}
		}
	}
	if !seen {
		return nil
	}
	var used uint
	for k := range n {
		span := uint64(p.hi[k]) - uint64(p.lo[k])
		p.shift[k] = used
		used += uint(bits.Len64(span))
		if used > 62 || span > math.MaxInt64 {
			return nil
		}
	}
	return p
}

// values are rec's keys packed into buf (grown; never a column's
// memory), or -1 for a row that no right row matches. Probes call it at
// once: p is only read.
func (p *keyPack) values(rec arrow.RecordBatch, keys *keyEncoder, buf []int64) []int64 {
	out := grow(buf, int(rec.NumRows()))
	clear(out)
	var scratch []int64
	for k, c := range keys.cols {
		lo, hi, sh := p.lo[k], p.hi[k], p.shift[k]
		for i, v := range columnInts(rec.Column(c.idx), &scratch) {
			if v < lo || v > hi {
				out[i] = -1
			} else if out[i] >= 0 {
				out[i] |= (v - lo) << sh
			}
		}
	}
	return out
}

// smallInt says intValues reads dt: integers that fit an int64.
func smallInt(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32:
		return true
	}
	return false
}

// intValues are the values of an integer column as int64s (the column's
// own memory for an int64 one; else widened into buf).
func intValues(a arrow.Array, buf []int64) []int64 {
	v, ok := intColumn(a, &buf)
	if !ok {
		panic(fmt.Sprintf("join: intValues of %s", a.DataType()))
	}
	return v
}
