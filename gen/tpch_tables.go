package gen

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var (
	tInt64  = arrow.PrimitiveTypes.Int64
	tInt32  = arrow.PrimitiveTypes.Int32
	tMoney  = arrow.PrimitiveTypes.Float64
	tString = arrow.BinaryTypes.String
	tDate   = arrow.FixedWidthTypes.Date32
)

func schemaOf(cols ...any) *arrow.Schema {
	var fs []arrow.Field
	for i := 0; i < len(cols); i += 2 {
		fs = append(fs, arrow.Field{Name: cols[i].(string), Type: cols[i+1].(arrow.DataType)})
	}
	return arrow.NewSchema(fs, nil)
}

// TPCHSchema is the schema of a TPC-H table's files: the specification's
// columns in its order, none nullable, keys int64, money float64 in whole
// cents as in Lineitem, dates date32. Lineitem's is LineitemSchema.
func TPCHSchema(table string) *arrow.Schema {
	switch table {
	case "region":
		return schemaOf("r_regionkey", tInt64, "r_name", tString, "r_comment", tString)
	case "nation":
		return schemaOf("n_nationkey", tInt64, "n_name", tString, "n_regionkey", tInt64, "n_comment", tString)
	case "supplier":
		return schemaOf("s_suppkey", tInt64, "s_name", tString, "s_address", tString, "s_nationkey", tInt64,
			"s_phone", tString, "s_acctbal", tMoney, "s_comment", tString)
	case "customer":
		return schemaOf("c_custkey", tInt64, "c_name", tString, "c_address", tString, "c_nationkey", tInt64,
			"c_phone", tString, "c_acctbal", tMoney, "c_mktsegment", tString, "c_comment", tString)
	case "part":
		return schemaOf("p_partkey", tInt64, "p_name", tString, "p_mfgr", tString, "p_brand", tString,
			"p_type", tString, "p_size", tInt32, "p_container", tString, "p_retailprice", tMoney, "p_comment", tString)
	case "partsupp":
		return schemaOf("ps_partkey", tInt64, "ps_suppkey", tInt64, "ps_availqty", tInt32,
			"ps_supplycost", tMoney, "ps_comment", tString)
	case "orders":
		return schemaOf("o_orderkey", tInt64, "o_custkey", tInt64, "o_orderstatus", tString, "o_totalprice", tMoney,
			"o_orderdate", tDate, "o_orderpriority", tString, "o_clerk", tString, "o_shippriority", tInt32,
			"o_comment", tString)
	case "lineitem":
		return LineitemSchema()
	}
	return nil
}

// tpchTable sizes table name and says how to generate it.
func tpchTable(ctx context.Context, name string, n tpchSizes, opts TPCHOptions) (Options, *dataset, error) {
	text := tpchText()
	rows := map[string]int64{
		"region": 5, "nation": 25, "supplier": n.supps, "customer": n.custs,
		"part": n.parts, "partsupp": 4 * n.parts, "orders": n.orders,
	}
	o := opts.tableOptions(rows[name])
	perRow := func(table uint64, row rowFunc) func(memory.Allocator, int, int64, int64) source {
		schema := TPCHSchema(name)
		return func(mem memory.Allocator, i int, start, _ int64) source {
			return &rowSource{b: array.NewRecordBuilder(mem, schema), r: newRNG(opts.Seed, table, i, streamValues),
				k: start, row: row, text: text}
		}
	}
	ds := &dataset{name: name, schema: TPCHSchema(name)}
	switch name {
	case "region":
		ds.source = perRow(tableRegion, regionRow)
	case "nation":
		ds.source = perRow(tableNation, nationRow)
	case "supplier":
		ds.plain = []string{"s_suppkey", "s_name", "s_address", "s_phone", "s_acctbal", "s_comment"}
		ds.source = perRow(tableSupplier, supplierRow)
	case "customer":
		ds.plain = []string{"c_custkey", "c_name", "c_address", "c_phone", "c_acctbal", "c_comment"}
		ds.source = perRow(tableCustomer, customerRow)
	case "part":
		ds.plain = []string{"p_partkey", "p_name", "p_comment"}
		ds.source = perRow(tablePart, partRow)
	case "partsupp":
		supps := n.supps
		ds.plain = []string{"ps_partkey", "ps_suppkey", "ps_supplycost", "ps_comment"}
		ds.source = perRow(tablePartsupp, func(s *rowSource) {
			partsuppRow(s, supps)
		})
	case "orders":
		g := newOrderGen(opts.Seed, n, opts.SF)
		ds.plain = []string{"o_orderkey", "o_custkey", "o_totalprice", "o_comment"}
		ds.source = func(mem memory.Allocator, i int, start, _ int64) source {
			return &ordersSource{rowSource: rowSource{b: array.NewRecordBuilder(mem, ds.schema), k: start, text: g.text}, g: g}
		}
	case "lineitem":
		g := newOrderGen(opts.Seed, n, opts.SF)
		// Lineitem has about four lines an order; its files hold whole
		// orders, so their row counts come from a replay of line counts.
		fr := opts.FileRows
		if fr == 0 {
			fr = defaultFileRows
		}
		files := int(min(max((4*n.orders+fr-1)/fr, 1), n.orders))
		first, lines, err := orderFiles(ctx, g, n.orders, files, o.concurrency())
		if err != nil {
			return Options{}, nil, err
		}
		starts := make([]int64, files)
		var total int64
		for i, l := range lines {
			starts[i] = total
			total += l
		}
		o.Rows, o.Files = total, files
		ds.schema = writeSchema(LineitemSchema(), lineitemDict)
		ds.plain = []string{"l_orderkey", "l_partkey", "l_extendedprice", "l_comment"}
		ds.split = func(i int) (int64, int64) { return starts[i], lines[i] }
		ds.source = func(mem memory.Allocator, i int, _, _ int64) source {
			return &tpchLineitemSource{lineitemSource: newLineitemSource(mem, ds.schema), g: g,
				idx: first[i], text: g.text}
		}
	default:
		return Options{}, nil, fmt.Errorf("gen: no TPC-H table %q", name)
	}
	return o, ds, nil
}

// rowSource builds a table one row at a time: simple, and fast enough
// for every table but lineitem. row appends global row k.
type rowSource struct {
	b    *array.RecordBuilder
	r    *rng
	k    int64
	row  rowFunc
	text string
	buf  []byte
}

type rowFunc func(s *rowSource)

func (s *rowSource) next(n int) arrow.RecordBatch {
	for range n {
		s.row(s)
		s.k++
	}
	return s.b.NewRecordBatch()
}

func (s *rowSource) release() { s.b.Release() }

func (s *rowSource) i64(col int, v int64) { s.b.Field(col).(*array.Int64Builder).Append(v) }
func (s *rowSource) i32(col int, v int32) { s.b.Field(col).(*array.Int32Builder).Append(v) }
func (s *rowSource) str(col int, v string) {
	s.b.Field(col).(*array.StringBuilder).Append(v)
}
func (s *rowSource) money(col int, cents int64) {
	s.b.Field(col).(*array.Float64Builder).Append(float64(cents) / 100)
}
func (s *rowSource) date(col int, d int32) {
	s.b.Field(col).(*array.Date32Builder).Append(arrow.Date32(d))
}

// between draws uniformly from [lo, hi].
func (s *rowSource) between(lo, hi int64) int64 { return lo + int64(s.r.n(uint64(hi-lo+1))) }

// comment is random text of lo..hi bytes cut from the grammar's pool.
func (s *rowSource) comment(lo, hi int64) string {
	n := s.between(lo, hi)
	off := s.r.n(uint64(int64(len(s.text)) - n))
	return s.text[off : off+uint64(n)]
}

// vstring is the specification's random v-string: lo..hi characters
// drawn from letters, digits, comma and period.
func (s *rowSource) vstring(lo, hi int64) string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,."
	n := s.between(lo, hi)
	s.buf = s.buf[:0]
	for range n {
		s.buf = append(s.buf, alphabet[s.r.n(uint64(len(alphabet)))])
	}
	return string(s.buf)
}

// phone is the specification's phone number: country code nation+10.
func (s *rowSource) phone(nation int64) string {
	return fmt.Sprintf("%02d-%03d-%03d-%04d", nation+10, s.between(100, 999), s.between(100, 999), s.between(1000, 9999))
}

func regionRow(s *rowSource) {
	s.i64(0, s.k)
	s.str(1, regionNames[s.k])
	s.str(2, s.comment(31, 115))
}

func nationRow(s *rowSource) {
	s.i64(0, s.k)
	s.str(1, nations[s.k].name)
	s.i64(2, nations[s.k].region)
	s.str(3, s.comment(31, 114))
}

func supplierRow(s *rowSource) {
	key := s.k + 1
	nation := s.between(0, 24)
	s.i64(0, key)
	s.str(1, fmt.Sprintf("Supplier#%09d", key))
	s.str(2, s.vstring(10, 40))
	s.i64(3, nation)
	s.str(4, s.phone(nation))
	s.money(5, s.between(-99_999, 999_999))
	s.str(6, s.supplierComment())
}

// supplierComment is s_comment: 5 suppliers in 10,000 have "Customer
// ... Complaints" in theirs and 5 "Customer ... Recommends" (spec
// 4.2.3), which query 16 filters on.
func (s *rowSource) supplierComment() string {
	c := s.comment(25, 100)
	if s.r.n(10_000) >= 10 {
		return c
	}
	tail := "Complaints"
	if s.r.n(2) == 1 {
		tail = "Recommends"
	}
	// "Customer " + some of the text + tail, at a random place in c.
	gap := s.between(0, int64(len(c)-len("Customer ")-len(tail)))
	at := s.between(0, int64(len(c)-len("Customer ")-len(tail))-gap)
	mid := s.comment(gap, gap)
	b := append(s.buf[:0], c[:at]...)
	b = append(b, "Customer "...)
	b = append(b, mid...)
	b = append(b, tail...)
	b = append(b, c[len(b):]...)
	s.buf = b
	return string(b)
}

func customerRow(s *rowSource) {
	key := s.k + 1
	nation := s.between(0, 24)
	s.i64(0, key)
	s.str(1, fmt.Sprintf("Customer#%09d", key))
	s.str(2, s.vstring(10, 40))
	s.i64(3, nation)
	s.str(4, s.phone(nation))
	s.money(5, s.between(-99_999, 999_999))
	s.str(6, segments[s.r.n(uint64(len(segments)))])
	s.str(7, s.comment(29, 116))
}

func partRow(s *rowSource) {
	key := s.k + 1
	var pick [5]int
	s.buf = s.buf[:0]
	for i := range pick {
	draw:
		pick[i] = int(s.r.n(uint64(len(colors))))
		for _, p := range pick[:i] {
			if p == pick[i] {
				goto draw
			}
		}
		if i > 0 {
			s.buf = append(s.buf, ' ')
		}
		s.buf = append(s.buf, colors[pick[i]]...)
	}
	m := s.between(1, 5)
	s.i64(0, key)
	s.str(1, string(s.buf))
	s.str(2, fmt.Sprintf("Manufacturer#%d", m))
	s.str(3, fmt.Sprintf("Brand#%d%d", m, s.between(1, 5)))
	s.str(4, pickOf(s.r, typeSyllables[0])+" "+pickOf(s.r, typeSyllables[1])+" "+pickOf(s.r, typeSyllables[2]))
	s.i32(5, int32(s.between(1, 50)))
	s.str(6, pickOf(s.r, containerSyllables[0])+" "+pickOf(s.r, containerSyllables[1]))
	s.money(7, retailCents(key))
	s.str(8, s.comment(5, 22))
}

func pickOf(r *rng, vs []string) string { return vs[r.n(uint64(len(vs)))] }

func partsuppRow(s *rowSource, supps int64) {
	part := s.k/4 + 1
	s.i64(0, part)
	s.i64(1, partSupp(part, s.k%4, supps))
	s.i32(2, int32(s.between(1, 9999)))
	s.money(3, s.between(100, 100_000))
	s.str(4, s.comment(49, 198))
}

// ordersSource writes orders from orderGen, so that status and total
// price agree with the lines lineitem draws for the same orders.
type ordersSource struct {
	rowSource
	g *orderGen
	o tpchOrder
}

func (s *ordersSource) next(n int) arrow.RecordBatch {
	for range n {
		s.k++
		s.g.order(s.k, &s.o)
		s.r = &s.o.r
		// Customers whose key is a multiple of three place no orders
		// (spec 4.2.3): the i-th other key is i/2*3 + i%2 + 1.
		i := int64(s.r.n(uint64(s.g.custs - s.g.custs/3)))
		s.i64(0, s.o.key)
		s.i64(1, i/2*3+i%2+1)
		s.str(2, s.o.status())
		s.money(3, s.o.totalCents())
		s.date(4, s.o.date)
		s.str(5, priorities[s.r.n(uint64(len(priorities)))])
		s.str(6, fmt.Sprintf("Clerk#%09d", s.between(1, s.g.clerks)))
		s.i32(7, 0)
		s.str(8, s.comment(19, 78))
	}
	return s.b.NewRecordBatch()
}

// tpchLineitemSource writes the lines of orderGen's orders into
// Lineitem's columns.
type tpchLineitemSource struct {
	*lineitemSource
	g    *orderGen
	idx  int64 // next order
	o    tpchOrder
	pos  int // next line of o
	text string
}

func (s *tpchLineitemSource) next(n int) arrow.RecordBatch {
	s.grow(n)
	for j := range n {
		if s.pos == s.o.n {
			s.g.order(s.idx, &s.o)
			s.idx++
			s.pos = 0
		}
		l := &s.o.lines[s.pos]
		s.pos++
		s.okey[j] = s.o.key
		s.pkey[j] = l.part
		s.skey[j] = l.supp
		s.lnum[j] = int32(s.pos)
		s.qty[j] = float64(l.qty)
		s.price[j] = float64(l.qty*retailCents(l.part)) / 100
		s.disc[j] = float64(l.disc) / 100
		s.tax[j] = float64(l.tax) / 100
		s.flagIdx[j], s.statusIdx[j] = l.flag, l.status
		s.ship[j], s.commit[j], s.receipt[j] = arrow.Date32(l.ship), arrow.Date32(l.commit), arrow.Date32(l.receipt)
		s.instrIdx[j], s.mdx[j] = l.instr, l.mode
		s.cm[j] = s.text[l.cOff : l.cOff+l.cLen]
	}
	return s.record(n)
}
