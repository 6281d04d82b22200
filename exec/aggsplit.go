package exec

import (
	"context"
	"encoding/binary"
	"fmt"
	"github.com/sluice-data/sluice/expr"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// splitAgg cuts an aggregation stage (sum-by, count-by, agg-by) in two,
// for running it over many workers with the result of one process:
//
//   - partial is a per-batch stage that turns each batch into its
//     summary: one row per group of the batch, in first-seen order, with
//     the key columns and each aggregate's state (its running value and
//     how many values it saw), exactly what the aggregation itself makes
//     of the batch;
//   - final is an aggregation over those summaries that folds them, in
//     stream order, as the stage folds its own, and emits what the stage
//     emits.
//
// So agg | ... and partial | (any transport keeping batch order) | final
// | ... give the same rows, float sums to the bit, as long as the final
// sees the summaries of every batch in the order the batches had. ok is
// false when st is not an aggregation.
func splitAgg(st Stage) (partial, final Stage, ok bool) {
	a, ok := st.(*aggStage)
	if !ok {
		return nil, nil, false
	}
	return &partialAggStage{a}, &finalAggStage{a}, true
}

type partialAggStage struct{ s *aggStage }

func (p *partialAggStage) Name() string { return p.s.name + " (partial)" }

func (p *partialAggStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	pl, err := p.s.bind(e, in)
	if err != nil {
		return nil, err
	}
	h := pl.agg.(*hashAgg)
	fields, _, _ := stateLayout(h.out.Fields()[:len(h.keys.cols)], h.aggs)
	seen := map[string]bool{}
	for _, f := range fields[:len(h.keys.cols)] {
		seen[f.Name] = true
	}
	for _, f := range fields[len(h.keys.cols):] {
		if seen[f.Name] {
			return nil, invalidf("%s: the partial aggregate would have two columns named %q", p.s.name, f.Name)
		}
		seen[f.Name] = true
	}
	out := arrow.NewSchema(fields, nil)
	return &bound{name: p.Name(), out: out, mapper: &partialMapper{h: h, out: out}}, nil
}

func stateCountName(agg string) string { return agg + ".n" }

// aggStateType is the type of a's state column in a partial.
func aggStateType(a boundAgg) arrow.DataType {
	switch {
	case binaryState(a.fn):
		return arrow.BinaryTypes.Binary
	case a.k == kDecimal && (a.fn == aggSum || a.fn == aggMean):
		return &arrow.Decimal128Type{Precision: 38, Scale: a.dec.S}
	case a.k == kDecimal:
		return decType(a.dec)
	}
	return stateType(a.k)
}

// decimalStateKey marks the binary state of a quantile of decimals with
// their type ("P,S"), which its result keeps.
const decimalStateKey = "sluice.decimal"

// stateField is a's state column.
func stateField(a boundAgg) arrow.Field {
	f := arrow.Field{Name: a.name, Type: aggStateType(a)}
	if a.fn == aggQuantile && a.k == kDecimal {
		f.Metadata = arrow.NewMetadata([]string{decimalStateKey}, []string{fmt.Sprintf("%d,%d", a.dec.P, a.dec.S)})
	}
	return f
}

// stateDec is the decimal type a binary state's field carries.
func stateDec(f arrow.Field) (expr.Dec, bool) {
	v, ok := f.Metadata.GetValue(decimalStateKey)
	if !ok {
		return expr.Dec{}, false
	}
	var d expr.Dec
	if _, err := fmt.Sscanf(v, "%d,%d", &d.P, &d.S); err != nil || d.P < 1 || d.P > 38 || d.S < 0 || d.S > d.P {
		return expr.Dec{}, false
	}
	return d, true
}

// encodeState is group g's state of an aggregate with a binaryState: the
// distinct values (each length-prefixed, sorted), the sketch, the values
// (float64s), or the mean and the sum of squared deviations.
func encodeState(a boundAgg, acc *accum, g int, b []byte) []byte {
	switch a.fn {
	case aggCountDistinct:
		keys := make([]string, 0, len(acc.set[g]))
		for k := range acc.set[g] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = binary.AppendUvarint(b, uint64(len(k)))
			b = append(b, k...)
		}
	case aggApproxDistinct:
		if acc.sk[g] != nil {
			b = acc.sk[g].encode(b)
		}
	case aggQuantile:
		for _, x := range acc.vals[g] {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
	case aggApproxQuantile:
		if acc.dd[g] != nil {
			acc.dd[g].Encode(&b, true)
		}
	default: // the variances
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(acc.f[g]))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(acc.m2[g]))
	}
	return b
}

// decodeState reads what encodeState wrote into group g of acc.
func decodeState(a boundAgg, acc *accum, g int, b []byte) error {
	bad := func() error { return fmt.Errorf("a malformed %s state (%d bytes)", aggFnNames[a.fn], len(b)) }
	switch a.fn {
	case aggCountDistinct:
		set := map[string]struct{}{}
		for len(b) > 0 {
			n, w := binary.Uvarint(b)
			if w <= 0 || uint64(len(b)-w) < n {
				return bad()
			}
			set[string(b[w:w+int(n)])] = struct{}{}
			b = b[w+int(n):]
		}
		acc.set[g] = set
	case aggApproxDistinct:
		if len(b) == 0 {
			return nil
		}
		sk, err := decodeHLL(b)
		if err != nil {
			return err
		}
		acc.sk[g] = sk
	case aggQuantile:
		if len(b)%8 != 0 {
			return bad()
		}
		vals := make([]float64, 0, len(b)/8)
		for ; len(b) > 0; b = b[8:] {
			vals = append(vals, math.Float64frombits(binary.LittleEndian.Uint64(b)))
		}
		acc.vals[g] = vals
	case aggApproxQuantile:
		if len(b) == 0 {
			return nil
		}
		sk, err := decodeQuantileSketch(b)
		if err != nil {
			return bad()
		}
		acc.dd[g] = sk
	default:
		if len(b) != 16 {
			return bad()
		}
		acc.f[g] = math.Float64frombits(binary.LittleEndian.Uint64(b))
		acc.m2[g] = math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
	}
	return nil
}

// stateType is how an aggregate's running value of kind k is kept.
func stateType(k kind) arrow.DataType {
	switch k {
	case kFloat:
		return arrow.PrimitiveTypes.Float64
	case kDate:
		return arrow.FixedWidthTypes.Date32
	case kTime:
		return &arrow.TimestampType{Unit: arrow.Nanosecond}
	case kString:
		return arrow.BinaryTypes.String
	case kBool:
		return arrow.FixedWidthTypes.Boolean
	}
	return arrow.PrimitiveTypes.Int64
}

func stateKind(dt arrow.DataType) (kind, bool) {
	switch dt.ID() {
	case arrow.INT64:
		return kInt, true
	case arrow.FLOAT64:
		return kFloat, true
	case arrow.DATE32:
		return kDate, true
	case arrow.TIMESTAMP:
		return kTime, true
	case arrow.STRING:
		return kString, true
	case arrow.BOOL:
		return kBool, true
	case arrow.DECIMAL128:
		return kDecimal, true
	}
	return 0, false
}

type partialMapper struct {
	h   *hashAgg
	out *arrow.Schema
}

func (m *partialMapper) mapBatch(ctx context.Context, in arrow.RecordBatch) (arrow.RecordBatch, error) {
	pa, err := m.h.partial(ctx, in, nil)
	if err != nil || pa == nil {
		return nil, err
	}
	return m.h.stateBatch(m.out, pa.(*aggPartial))
}

// stateBatch is the summary of p's groups as a batch of schema out (see
// stateLayout).
func (h *hashAgg) stateBatch(out *arrow.Schema, p *aggPartial) (arrow.RecordBatch, error) {
	p.stringKeys()
	return h.batchOf(out, len(p.keys), func(i int) []byte { return []byte(p.keys[i]) }, func(add func(arrow.Array)) {
		for j, a := range h.aggs {
			acc := &p.acc[j]
			if binaryState(a.fn) {
				b := array.NewBinaryBuilder(h.mem, arrow.BinaryTypes.Binary)
				var buf []byte
				for g := range p.keys {
					buf = encodeState(a, acc, g, buf[:0])
					b.Append(buf)
				}
				add(b.NewArray())
				b.Release()
			} else if a.fn != aggCount {
				b := array.NewBuilder(h.mem, aggStateType(a))
				for g := range p.keys {
					acc.appendValue(b, g)
				}
				add(b.NewArray())
				b.Release()
			}
			nb := array.NewInt64Builder(h.mem)
			nb.AppendValues(acc.n[:len(p.keys)], nil)
			add(nb.NewArray())
			nb.Release()
		}
	})
}

type finalAggStage struct{ s *aggStage }

func (f *finalAggStage) Name() string { return f.s.name + " (final)" }

func (f *finalAggStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	s := f.s
	keys, err := s.groupKeys(in)
	if err != nil {
		return nil, err
	}
	var fields []arrow.Field
	for _, c := range keys.cols {
		fields = append(fields, arrow.Field{Name: c.name, Type: c.out, Nullable: in.Field(c.idx).Nullable})
	}
	st := &stateAgg{valIdx: make([]int, len(s.aggs)), nIdx: make([]int, len(s.aggs))}
	var aggs []boundAgg
	for j, spec := range s.aggs {
		b := boundAgg{fn: spec.fn, name: spec.name, q: spec.q, disc: spec.disc}
		st.valIdx[j] = -1
		if spec.fn != aggCount {
			i, err := colIndex(f.Name(), in, spec.name)
			if err != nil {
				return nil, err
			}
			k, ok := stateKind(in.Field(i).Type)
			if d, isDec := in.Field(i).Type.(*arrow.Decimal128Type); isDec {
				b.dec = expr.Dec{P: d.Precision, S: d.Scale}
				ok = ok && d.Precision >= 1 && d.Precision <= 38 && d.Scale >= 0 && d.Scale <= d.Precision
			}
			if binaryState(spec.fn) {
				// The state says nothing of the argument's kind, and
				// these aggregates' results do not depend on it, but for
				// a quantile of decimals, which its field names.
				k, ok = kFloat, in.Field(i).Type.ID() == arrow.BINARY
				if d, isDec := stateDec(in.Field(i)); isDec && spec.fn == aggQuantile {
					k, b.dec = kDecimal, d
				}
			}
			if !ok {
				return nil, invalidf("%s: column %q is a %s, not an aggregate's state", f.Name(), spec.name, in.Field(i).Type)
			}
			b.k, st.valIdx[j] = k, i
		}
		i, err := colIndex(f.Name(), in, stateCountName(spec.name))
		if err != nil {
			return nil, err
		}
		if in.Field(i).Type.ID() != arrow.INT64 {
			return nil, invalidf("%s: column %q is a %s, not a count", f.Name(), stateCountName(spec.name), in.Field(i).Type)
		}
		st.nIdx[j] = i
		out, nullable, ok := aggOut(spec.fn, b.k, b.dec)
		if !ok {
			return nil, s.typeErr(spec, b.k)
		}
		b.out = out
		fields = append(fields, arrow.Field{Name: b.name, Type: b.out, Nullable: nullable})
		aggs = append(aggs, b)
	}
	out := arrow.NewSchema(fields, nil)
	st.hashAgg = newHashAgg(e, keys, aggs, out, s.name)
	return &bound{name: f.Name(), out: out, agg: st}, nil
}

// stateAgg folds summaries made by partialMapper: its partial reads a
// summary batch back into the state the aggregation made of its batch.
type stateAgg struct {
	*hashAgg
	valIdx []int // -1 for count
	nIdx   []int
}

func (s *stateAgg) partial(ctx context.Context, rec arrow.RecordBatch, keep []bool) (any, error) {
	n := int(rec.NumRows())
	if n == 0 {
		return nil, nil
	}
	kr := s.rows.Get()
	defer s.rows.Put(kr)
	s.keys.encode(rec, kr)
	var rows []int
	p := &aggPartial{}
	for i := range n {
		if keep == nil || keep[i] {
			rows = append(rows, i)
			p.keys = append(p.keys, string(kr.row(i)))
		}
	}
	p.acc = make([]accum, len(s.aggs))
	for j, a := range s.aggs {
		acc := &p.acc[j]
		acc.grow(a, len(rows))
		counts, ok := rec.Column(s.nIdx[j]).(*array.Int64)
		if !ok || counts.NullN() > 0 {
			return nil, fmt.Errorf("%s: the counts of %s are not int64 without nulls", s.stage, a.name)
		}
		for g, i := range rows {
			acc.n[g] = counts.Value(i)
		}
		if s.valIdx[j] < 0 {
			continue
		}
		col := rec.Column(s.valIdx[j])
		if col.NullN() > 0 {
			return nil, fmt.Errorf("%s: the state of %s has nulls", s.stage, a.name)
		}
		if c, ok := col.(*array.Binary); ok && binaryState(a.fn) {
			for g, i := range rows {
				if err := decodeState(a, acc, g, c.Value(i)); err != nil {
					return nil, fmt.Errorf("%s: %s: %w", s.stage, a.name, err)
				}
			}
			continue
		}
		for g, i := range rows {
			switch c := col.(type) {
			case *array.Int64:
				acc.i[g] = c.Value(i)
			case *array.Float64:
				acc.f[g] = c.Value(i)
			case *array.Decimal128:
				acc.d[g] = c.Value(i)
			case *array.Date32:
				acc.i[g] = int64(c.Value(i))
			case *array.Timestamp:
				acc.i[g] = int64(c.Value(i))
			case *array.String:
				acc.s[g] = strings.Clone(c.Value(i)) // the batch is released after the fold
			case *array.Boolean:
				if c.Value(i) {
					acc.i[g] = 1
				}
			default:
				return nil, fmt.Errorf("%s: the state of %s is a %s", s.stage, a.name, col.DataType())
			}
		}
	}
	return p, nil
}
