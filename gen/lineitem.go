package gen

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/store"
)

// Scale factor 1 sizes (TPC-H 4.2.5): the part and supplier key ranges are
// scaled by Rows over the rows of lineitem at SF 1.
const (
	sf1LineitemRows = 6_001_215
	sf1Parts        = 200_000
	sf1Suppliers    = 10_000
)

func day(y int, m time.Month, d int) arrow.Date32 {
	return arrow.Date32(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// TPC-H dates (spec 4.2.3): orders fall in [startDate, endDate-151] so
// that every line is received by endDate; currentDate splits the flags.
var (
	startDate   = day(1992, 1, 1)
	currentDate = day(1995, 6, 17)
	endDate     = day(1998, 12, 31)
)

var (
	shipInstructs = []string{"DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"}
	shipModes     = []string{"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"}
)

// LineitemSchema is the schema of Lineitem's files: the 16 TPC-H lineitem
// columns, none nullable, money as float64.
func LineitemSchema() *arrow.Schema {
	f := func(name string, t arrow.DataType) arrow.Field { return arrow.Field{Name: name, Type: t} }
	return arrow.NewSchema([]arrow.Field{
		f("l_orderkey", arrow.PrimitiveTypes.Int64),
		f("l_partkey", arrow.PrimitiveTypes.Int64),
		f("l_suppkey", arrow.PrimitiveTypes.Int64),
		f("l_linenumber", arrow.PrimitiveTypes.Int32),
		f("l_quantity", arrow.PrimitiveTypes.Float64),
		f("l_extendedprice", arrow.PrimitiveTypes.Float64),
		f("l_discount", arrow.PrimitiveTypes.Float64),
		f("l_tax", arrow.PrimitiveTypes.Float64),
		f("l_returnflag", arrow.BinaryTypes.String),
		f("l_linestatus", arrow.BinaryTypes.String),
		f("l_shipdate", arrow.FixedWidthTypes.Date32),
		f("l_commitdate", arrow.FixedWidthTypes.Date32),
		f("l_receiptdate", arrow.FixedWidthTypes.Date32),
		f("l_shipinstruct", arrow.BinaryTypes.String),
		f("l_shipmode", arrow.BinaryTypes.String),
		f("l_comment", arrow.BinaryTypes.String),
	}, nil)
}

// Lineitem writes a TPC-H lineitem table of opts.Rows rows as opts.Files
// snappy Parquet files named prefix/part-NNNNN.parquet. Orders have 1 to 7
// lines and their keys increase across files, sparse as in dbgen (8 keys
// used in every 32).
func Lineitem(ctx context.Context, st *store.Store, prefix string, opts Options) (Result, error) {
	if err := check(st, opts); err != nil {
		return Result{}, err
	}
	firstOrder, err := orderOffsets(ctx, opts)
	if err != nil {
		return Result{}, err
	}
	parts, supps := keyRanges(opts.Rows)
	text := textPool()
	schema := writeSchema(LineitemSchema(), lineitemDict)
	ds := &dataset{
		name:   "lineitem",
		schema: schema,
		// Dictionaries for the columns with few distinct values per row
		// group; the rest would only fill a dictionary page and fall back.
		plain: []string{"l_orderkey", "l_partkey", "l_extendedprice", "l_comment"},
		source: func(mem memory.Allocator, i int, start, rows int64) source {
			s := newLineitemSource(mem, schema)
			s.val = newRNG(opts.Seed, tableLineitem, i, streamValues)
			s.lines = newRNG(opts.Seed, tableLineitem, i, streamOrders)
			s.order = firstOrder[i]
			s.rowsLeft = rows
			s.parts, s.supps, s.text = parts, supps, text
			return s
		},
	}
	return generate(ctx, st, prefix, opts, ds)
}

// keyRanges scales the SF 1 part and supplier counts to rows of lineitem.
func keyRanges(rows int64) (parts, supps int64) {
	scale := func(n uint64) int64 { return max(int64(mulDiv(uint64(rows), n, sf1LineitemRows)), 1) }
	return scale(sf1Parts), scale(sf1Suppliers)
}

// orderLines draws the line count of the next order of a file, cut short
// at the file's end: orders never span files.
func orderLines(r *rng, rowsLeft int64) int64 {
	return min(1+int64(r.n(7)), rowsLeft)
}

// orderOffsets returns the order index before the first order of each file.
// Line counts come from their own stream per file, so this pass replays
// them cheaply and in parallel, and every file knows its keys up front.
func orderOffsets(ctx context.Context, opts Options) ([]int64, error) {
	counts := make([]int64, opts.Files)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.concurrency())
	for i := range opts.Files {
		g.Go(func() error {
			r := newRNG(opts.Seed, tableLineitem, i, streamOrders)
			_, left := opts.split(i)
			var n int64
			for left > 0 {
				left -= orderLines(r, left)
				n++
				if n&(1<<20-1) == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
			}
			counts[i] = n
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var sum int64
	for i, n := range counts {
		counts[i] = sum
		sum += n
	}
	return counts, nil
}

// sparseKey maps the i-th order (from 1) to its key as dbgen's mk_sparse
// does: the low 3 bits are kept and 2 bits are left empty above them.
func sparseKey(i int64) int64 { return i>>3<<5 | i&7 }

// retailCents is P_RETAILPRICE of a part in cents (TPC-H 4.2.3).
func retailCents(partkey int64) int64 {
	return 90000 + (partkey/10)%20001 + 100*(partkey%1000)
}

// suppKey is the supplier of a part's s-th supply (0..3), dbgen's
// PART_SUPP_BRIDGE.
func suppKey(partkey, s, supps int64) int64 {
	return (partkey+s*(supps/4+(partkey-1)/supps))%supps + 1
}

// lineitemDict are the columns written as dictionary arrays.
var lineitemDict = map[string]bool{"l_returnflag": true, "l_linestatus": true, "l_shipinstruct": true, "l_shipmode": true}

var (
	returnFlags = []string{"A", "N", "R"}
	lineStatus  = []string{"F", "O"}
)

const (
	flagA, flagN, flagR = 0, 1, 2
	statusF, statusO    = 0, 1
)

type lineitemSource struct {
	schema       *arrow.Schema
	val, lines   *rng
	order        int64 // index of the current order (keys from sparseKey)
	key          int64
	orderDate    arrow.Date32
	linesLeft    int64 // lines left in the current order
	lineNo       int32
	rowsLeft     int64
	parts, supps int64
	text         string

	i64                       *array.Int64Builder
	i32                       *array.Int32Builder
	f64                       *array.Float64Builder
	date                      *array.Date32Builder
	str                       *array.StringBuilder
	flag, status, instr, mode *dictColumn

	// Column scratch, reused for every batch of the file.
	okey, pkey, skey                  []int64
	lnum                              []int32
	qty, price, disc, tax             []float64
	flagIdx, statusIdx, instrIdx, mdx []int8
	ship, commit, receipt             []arrow.Date32
	cm                                []string
}

func newLineitemSource(mem memory.Allocator, schema *arrow.Schema) *lineitemSource {
	return &lineitemSource{
		schema: schema,
		i64:    array.NewInt64Builder(mem),
		i32:    array.NewInt32Builder(mem),
		f64:    array.NewFloat64Builder(mem),
		date:   array.NewDate32Builder(mem),
		str:    array.NewStringBuilder(mem),
		flag:   newDictColumn(mem, returnFlags),
		status: newDictColumn(mem, lineStatus),
		instr:  newDictColumn(mem, shipInstructs),
		mode:   newDictColumn(mem, shipModes),
	}
}

func (s *lineitemSource) release() {
	s.i64.Release()
	s.i32.Release()
	s.f64.Release()
	s.date.Release()
	s.str.Release()
	s.flag.release()
	s.status.release()
	s.instr.release()
	s.mode.release()
}

func (s *lineitemSource) grow(n int) {
	if cap(s.okey) >= n {
		return
	}
	s.okey, s.pkey, s.skey = make([]int64, n), make([]int64, n), make([]int64, n)
	s.lnum = make([]int32, n)
	s.qty, s.price, s.disc, s.tax = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	s.flagIdx, s.statusIdx, s.instrIdx, s.mdx = make([]int8, n), make([]int8, n), make([]int8, n), make([]int8, n)
	s.ship, s.commit, s.receipt = make([]arrow.Date32, n), make([]arrow.Date32, n), make([]arrow.Date32, n)
	s.cm = make([]string, n)
}

func (s *lineitemSource) next(n int) arrow.RecordBatch {
	s.grow(n)
	r := s.val
	orderDays := uint64(endDate - 151 - startDate + 1)
	textLen := uint64(len(s.text))
	for j := range n {
		if s.linesLeft == 0 {
			s.linesLeft = orderLines(s.lines, s.rowsLeft)
			s.order++
			s.key = sparseKey(s.order)
			s.orderDate = startDate + arrow.Date32(r.n(orderDays))
			s.lineNo = 0
		}
		s.linesLeft--
		s.rowsLeft--
		s.lineNo++

		part := 1 + int64(r.n(uint64(s.parts)))
		q := 1 + int64(r.n(50))
		ship := s.orderDate + 1 + arrow.Date32(r.n(121))
		receipt := ship + 1 + arrow.Date32(r.n(30))
		var flag int8 = flagN
		if receipt <= currentDate {
			flag = int8(flagA + 2*r.n(2)) // A or R
		}
		var status int8 = statusF
		if ship > currentDate {
			status = statusO
		}
		clen := 10 + r.n(34)
		off := r.n(textLen - clen)

		s.okey[j] = s.key
		s.pkey[j] = part
		s.skey[j] = suppKey(part, int64(r.n(4)), s.supps)
		s.lnum[j] = s.lineNo
		s.qty[j] = float64(q)
		// Integer cents, divided once: the same decimal value as dbgen
		// prints, and no float rounding that could differ by platform.
		s.price[j] = float64(q*retailCents(part)) / 100
		s.disc[j] = float64(r.n(11)) / 100
		s.tax[j] = float64(r.n(9)) / 100
		s.flagIdx[j] = flag
		s.statusIdx[j] = status
		s.ship[j] = ship
		s.commit[j] = s.orderDate + 30 + arrow.Date32(r.n(61))
		s.receipt[j] = receipt
		s.instrIdx[j] = int8(r.n(4))
		s.mdx[j] = int8(r.n(7))
		s.cm[j] = s.text[off : off+clen]
	}
	return s.record(n)
}

// record builds a batch of the first n rows of the column scratch.
func (s *lineitemSource) record(n int) arrow.RecordBatch {
	cols := []arrow.Array{
		column(s.i64, s.okey[:n]), column(s.i64, s.pkey[:n]), column(s.i64, s.skey[:n]),
		column(s.i32, s.lnum[:n]),
		column(s.f64, s.qty[:n]), column(s.f64, s.price[:n]), column(s.f64, s.disc[:n]), column(s.f64, s.tax[:n]),
		s.flag.array(s.flagIdx[:n]), s.status.array(s.statusIdx[:n]),
		column(s.date, s.ship[:n]), column(s.date, s.commit[:n]), column(s.date, s.receipt[:n]),
		s.instr.array(s.instrIdx[:n]), s.mode.array(s.mdx[:n]),
		column(s.str, s.cm[:n]),
	}
	defer releaseAll(cols)
	return array.NewRecordBatch(s.schema, cols, int64(n))
}
