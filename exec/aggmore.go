package exec

import (
	"encoding/binary"
	"fmt"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"hash/fnv"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"

	"github.com/sluice-data/sluice/expr"
)

// The aggregates whose state is more than a running value: a distinct
// set, a sketch, the values themselves, or Welford's mean and squared
// deviations. Their partial state travels as one binary column (see
// encodeState), so a fan-out merges exactly what one process would.

// distinctKey is the bytes that identify value i of v for count(distinct):
// -0 counts as 0 and every NaN as one value, as DuckDB groups them.
func distinctKey(v vec, i int, buf []byte) []byte {
	buf = buf[:0]
	switch v.K {
	case kString:
		return append(buf, v.S(i)...)
	case kFloat:
		f := v.F[i]
		if f == 0 {
			f = 0
		} else if math.IsNaN(f) {
			f = math.NaN()
		}
		return binary.LittleEndian.AppendUint64(buf, math.Float64bits(f))
	case kBool:
		if v.B[i] {
			return append(buf, 1)
		}
		return append(buf, 0)
	case kDecimal:
		// One argument's decimals share a scale: equal values, equal bits.
		buf = binary.LittleEndian.AppendUint64(buf, v.D[i].LowBits())
		return binary.LittleEndian.AppendUint64(buf, uint64(v.D[i].HighBits()))
	}
	return binary.LittleEndian.AppendUint64(buf, uint64(v.I[i]))
}

// floatOf is value i of a numeric v as a float64 (integers beyond 2^53
// round, as DuckDB's median and stddev of a BIGINT do).
func floatOf(v vec, i int) float64 {
	switch v.K {
	case kFloat:
		return v.F[i]
	case kDecimal:
		return expr.DecFloat(v.D[i], v.Dec.S)
	}
	return float64(v.I[i])
}

// quantileDec is a quantile of decimals of scale s, held as floats (exact
// to 15 digits), as DuckDB computes it: quantile_disc's value, or
// quantile_cont's interpolation between the two values around the rank
// in the decimals' integers, the fraction truncated toward zero.
func quantileDec(vals []float64, q float64, disc bool, s int32) decimal128.Num {
	if disc {
		return expr.DecOfFloat(quantileDisc(vals, q), s)
	}
	a, b, frac := contNeighbours(vals, q)
	x := expr.DecOfFloat(a, s)
	if frac == 0 {
		return x
	}
	delta := expr.DecOfFloat(b, s).Sub(x).ToFloat64(0) * frac
	return x.Add(decimal128.FromI64(int64(delta)))
}

// hll is a HyperLogLog sketch with 2^hllP registers. Below hllSparse
// distinct hashes it keeps the hashes themselves (counted exactly);
// past that it keeps only the registers. Both merges (set union, register
// maximum) are order-independent, and a sketch turns dense exactly when
// the union of everything it saw passes hllSparse, so one process and any
// fan-out reach the same state and the same estimate.
type hll struct {
	sparse map[uint64]struct{} // nil once dense
	reg    []uint8
}

const (
	hllP      = 12 // 4096 registers: about 1.6% standard error
	hllM      = 1 << hllP
	hllSparse = 512
)

func newHLL() *hll { return &hll{sparse: map[uint64]struct{}{}} }

// hash64 is FNV-1a finished with murmur3's mixer, so the register index
// and the run of zeros both see well-spread bits. It is the same in every
// process (maphash's seed is not), which a fan-out needs.
func hash64(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func (s *hll) add(h uint64) {
	if s.sparse == nil {
		s.addReg(h)
		return
	}
	s.sparse[h] = struct{}{}
	if len(s.sparse) > hllSparse {
		s.densify()
	}
}

func (s *hll) addReg(h uint64) {
	idx := h >> (64 - hllP)
	rank := uint8(bits.LeadingZeros64(h<<hllP|1<<(hllP-1)) + 1)
	if rank > s.reg[idx] {
		s.reg[idx] = rank
	}
}

func (s *hll) densify() {
	s.reg = make([]uint8, hllM)
	for h := range s.sparse {
		s.addReg(h)
	}
	s.sparse = nil
}

func (s *hll) merge(o *hll) {
	if o.sparse != nil {
		for h := range o.sparse {
			s.add(h)
		}
		return
	}
	if s.sparse != nil {
		s.densify()
	}
	for i, r := range o.reg {
		s.reg[i] = max(s.reg[i], r)
	}
}

func (s *hll) estimate() int64 {
	if s.sparse != nil {
		return int64(len(s.sparse))
	}
	sum, zeros := 0.0, 0
	for _, r := range s.reg {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	m := float64(hllM)
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros)) // linear counting
	}
	return int64(math.Round(e))
}

func (s *hll) encode(b []byte) []byte {
	if s.sparse == nil {
		return append(append(b, 1), s.reg...)
	}
	hs := make([]uint64, 0, len(s.sparse))
	for h := range s.sparse {
		hs = append(hs, h)
	}
	slices.Sort(hs) // the same bytes for the same set
	b = append(b, 0)
	for _, h := range hs {
		b = binary.LittleEndian.AppendUint64(b, h)
	}
	return b
}

func decodeHLL(b []byte) (*hll, error) {
	switch {
	case len(b) == 1+hllM && b[0] == 1:
		return &hll{reg: slices.Clone(b[1:])}, nil
	case len(b) > 0 && b[0] == 0 && (len(b)-1)%8 == 0:
		s := newHLL()
		for b = b[1:]; len(b) > 0; b = b[8:] {
			s.sparse[binary.LittleEndian.Uint64(b)] = struct{}{}
		}
		return s, nil
	}
	return nil, fmt.Errorf("a malformed approx_count_distinct state (%d bytes)", len(b))
}

// quantileCont is DuckDB's quantile_cont (and median) of vals, which it
// sorts: the value at (n-1)*q, interpolated between its neighbours.
func quantileCont(vals []float64, q float64) float64 {
	a, b, frac := contNeighbours(vals, q)
	if frac == 0 {
		return a
	}
	return a + frac*(b-a)
}

// contNeighbours sorts vals and gives the two values around rank
// q*(n-1) and the fraction of the way between them (0 on a value).
func contNeighbours(vals []float64, q float64) (a, b, frac float64) {
	sort.Float64s(vals)
	rn := float64(len(vals)-1) * q
	lo, hi := math.Floor(rn), math.Ceil(rn)
	return vals[int(lo)], vals[int(hi)], rn - lo
}

// welfordAdd adds x to a running count n, mean and sum of squared
// deviations m2 (Welford's update, as DuckDB's stddev keeps them).
func welfordAdd(n int64, mean, m2, x float64) (float64, float64) {
	d := x - mean
	mean += d / float64(n)
	return mean, m2 + d*(x-mean)
}

// welfordMerge combines two such states (Chan et al.), in DuckDB's form.
func welfordMerge(n1 int64, mean1, m21 float64, n2 int64, mean2, m22 float64) (float64, float64) {
	if n1 == 0 {
		return mean2, m22
	}
	n := float64(n1 + n2)
	f1, f2 := float64(n1), float64(n2)
	mean := (f2*mean2 + f1*mean1) / n
	d := mean2 - mean1
	return mean, m21 + m22 + d*d*f1*f2/n
}

// quantileArg is the q of quantile(x, q): a number from 0 to 1, written
// as a constant.
func quantileArg(n expr.Node) (float64, bool) {
	q, err := strconv.ParseFloat(expr.String(n), 64)
	return q, err == nil && q >= 0 && q <= 1
}

// quantileDisc is the value at fraction q of vals as DuckDB's
// quantile_disc picks it: the first whose cumulative share reaches q.
func quantileDisc(vals []float64, q float64) float64 {
	sort.Float64s(vals)
	n := len(vals)
	floored := int(math.Floor(float64(n) - float64(n)*q))
	return vals[max(1, n-floored)-1]
}

// quantileMapping maps values to approx_quantile's buckets: 1% relative
// accuracy, logarithmic, so one sketch covers any range in a few thousand
// buckets.
var quantileMapping = func() mapping.IndexMapping {
	m, err := mapping.NewLogarithmicMapping(0.01)
	if err != nil {
		panic(err) // a constant accuracy in range
	}
	return m
}()

// newQuantileSketch is approx_quantile's state: a DDSketch, whose buckets
// hold whole counts, so adding and merging in any order (one process or
// any fan-out) reach the same state and the same quantiles.
func newQuantileSketch() *ddsketch.DDSketch {
	return ddsketch.NewDDSketch(quantileMapping, store.NewDenseStore(), store.NewDenseStore())
}

// decodeQuantileSketch reads a sketch that Encode wrote. It decodes into
// sparse stores first: a dense one spans its lowest to its highest
// bucket, and a corrupt index would make it allocate without bound.
func decodeQuantileSketch(b []byte) (*ddsketch.DDSketch, error) {
	sparse, err := ddsketch.DecodeDDSketch(b, store.SparseStoreConstructor, quantileMapping)
	if err != nil {
		return nil, err
	}
	lo, hi := quantileMapping.Index(quantileMapping.MinIndexableValue()), quantileMapping.Index(quantileMapping.MaxIndexableValue())
	sk := newQuantileSketch()
	for _, st := range []store.Store{sparse.GetPositiveValueStore(), sparse.GetNegativeValueStore()} {
		if st.IsEmpty() {
			continue
		}
		min, _ := st.MinIndex()
		max, _ := st.MaxIndex()
		if min < lo || max > hi {
			return nil, fmt.Errorf("a bucket index out of range")
		}
	}
	if sparse.GetZeroCount() < 0 || math.IsNaN(sparse.GetZeroCount()) {
		return nil, fmt.Errorf("a negative count")
	}
	if err := sk.MergeWith(sparse); err != nil {
		return nil, err
	}
	return sk, nil
}

// quantileSketchBytes is about what sk holds: its two stores' buckets.
func quantileSketchBytes(sk *ddsketch.DDSketch) int64 {
	n := int64(64)
	for _, st := range []store.Store{sk.GetPositiveValueStore(), sk.GetNegativeValueStore()} {
		lo, err1 := st.MinIndex()
		hi, err2 := st.MaxIndex()
		if err1 == nil && err2 == nil {
			n += 8 * int64(hi-lo+1+64)
		}
	}
	return n
}
