package gen

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/store"
)

// TPCHOptions size and seed a TPC-H dataset. The output depends only on
// SF, Seed, FileRows and RowGroupRows.
type TPCHOptions struct {
	// SF is the scale factor (>= 0.001): SF 1 is about 1 GB of CSV, with
	// 6,001,215 lineitem rows give or take the random line counts.
	// Fractional scale factors scale every table but region and nation.
	SF float64
	// Seed selects the dataset; the same seed gives the same bytes.
	Seed uint64
	// FileRows sizes the files: a table has as many as it needs to hold
	// at most FileRows rows each (lineitem's files hold whole orders and
	// are sized by four lines an order, so they may hold a few more).
	// Zero means 1<<20.
	FileRows int64
	// RowGroupRows is the number of rows per row group. Zero means a
	// quarter of a file, so that readers can split even one-file tables.
	RowGroupRows int64
	// Concurrency, Mem and Progress are as in Options.
	Concurrency int
	Mem         memory.Allocator
	Progress    func(bytes int64)
}

// TableResult is one generated table of a TPC-H dataset.
type TableResult struct {
	Table string
	Result
}

const defaultFileRows = 1 << 20

// minSF keeps at least ten suppliers, so that the four suppliers of a
// part (the partsupp formula) are distinct.
const minSF = 0.001

func (o TPCHOptions) validate() error {
	switch {
	case math.IsNaN(o.SF) || math.IsInf(o.SF, 0) || o.SF < minSF:
		return fmt.Errorf("gen: SF must be at least %g, got %g", minSF, o.SF)
	case o.SF > 100_000:
		return fmt.Errorf("gen: SF must be at most 100000, got %g", o.SF)
	case o.FileRows < 0:
		return fmt.Errorf("gen: FileRows must be >= 0 (0 = default), got %d", o.FileRows)
	case o.RowGroupRows < 0:
		return fmt.Errorf("gen: RowGroupRows must be >= 0 (0 = default), got %d", o.RowGroupRows)
	case o.Concurrency < 0:
		return fmt.Errorf("gen: Concurrency must be >= 0 (0 = GOMAXPROCS), got %d", o.Concurrency)
	}
	return nil
}

// tpchSizes are the row counts of the scaled tables (spec 4.2.5).
type tpchSizes struct {
	supps, custs, parts, orders int64
}

func sizesFor(sf float64) tpchSizes {
	// Rounded, not truncated: 0.01*150000 is 1499.999... in binary.
	scale := func(n float64) int64 { return int64(math.Round(sf * n)) }
	return tpchSizes{supps: scale(10_000), custs: scale(150_000), parts: scale(200_000), orders: scale(1_500_000)}
}

// TPCHTables are the tables TPCH writes, in the order it writes them.
func TPCHTables() []string {
	return []string{"region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"}
}

// TPCH writes the eight TPC-H tables, each as snappy Parquet files named
// prefix/TABLE/part-NNNNN.parquet. Values follow the specification's
// distributions and every foreign key resolves; see doc.go for what
// differs from dbgen. On an error it removes every file it committed.
func TPCH(ctx context.Context, st *store.Store, prefix string, opts TPCHOptions) ([]TableResult, error) {
	if st == nil {
		return nil, errNilStore
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	n := sizesFor(opts.SF)
	var out []TableResult
	fail := func(err error) ([]TableResult, error) {
		var files []File
		for _, t := range out {
			files = append(files, t.Files...)
		}
		return nil, errors.Join(err, removeCommitted(ctx, st, files))
	}
	for _, name := range TPCHTables() {
		o, ds, err := tpchTable(ctx, name, n, opts)
		if err != nil {
			return fail(err)
		}
		res, err := generate(ctx, st, store.Join(prefix, name), o, ds)
		if err != nil {
			return fail(err)
		}
		out = append(out, TableResult{Table: name, Result: res})
	}
	return out, nil
}

// tableOptions sizes the files of a table of rows rows.
func (o TPCHOptions) tableOptions(rows int64) Options {
	fileRows := o.FileRows
	if fileRows == 0 {
		fileRows = defaultFileRows
	}
	return Options{
		Rows: rows, Files: int((rows + fileRows - 1) / fileRows), Seed: o.Seed,
		RowGroupRows: o.RowGroupRows, Concurrency: o.Concurrency, Mem: o.Mem, Progress: o.Progress,
	}
}

// orderGen draws orders and their lines. Each order has a random source
// of its own, seeded from its index, so that orders and lineitem, written
// by different files, draw the same lines for it.
type orderGen struct {
	hi, lo       uint64
	parts, supps int64
	custs        int64
	clerks       int64
	text         string
}

func newOrderGen(seed uint64, n tpchSizes, sf float64) *orderGen {
	hi := splitmix(seed ^ splitmix(tableOrders))
	return &orderGen{
		hi: hi, lo: splitmix(hi ^ streamOrders),
		parts: n.parts, supps: n.supps, custs: n.custs,
		clerks: max(int64(math.Round(sf*1000)), 1),
		text:   tpchText(),
	}
}

func (g *orderGen) seed(r *rng, idx int64) {
	r.p.Seed(g.hi, splitmix(g.lo^uint64(idx)))
}

// lineCount is the first draw of an order's source: the prepass that
// sizes lineitem's files replays only this.
func lineCount(r *rng) int { return 1 + int(r.n(7)) }

type tpchLine struct {
	part, supp            int64
	qty, disc, tax        int64 // units and percent
	ship, commit, receipt int32
	flag, status          int8
	instr, mode           int8
	cOff, cLen            int32
}

type tpchOrder struct {
	idx, key int64
	date     int32
	n        int
	lines    [7]tpchLine
	r        rng // left where the lines end, for the order's own fields
}

// order draws order idx (from 1): its date and lines. The orders table
// then draws its remaining fields from o.r.
func (g *orderGen) order(idx int64, o *tpchOrder) {
	r := &o.r
	g.seed(r, idx)
	o.idx, o.key, o.n = idx, sparseKey(idx), lineCount(r)
	orderDays := uint64(endDate - 151 - startDate + 1)
	o.date = int32(startDate) + int32(r.n(orderDays))
	textLen := uint64(len(g.text))
	for j := range o.n {
		l := &o.lines[j]
		l.part = 1 + int64(r.n(uint64(g.parts)))
		l.supp = partSupp(l.part, int64(r.n(4)), g.supps)
		l.qty = 1 + int64(r.n(50))
		l.disc = int64(r.n(11))
		l.tax = int64(r.n(9))
		l.ship = o.date + 1 + int32(r.n(121))
		l.commit = o.date + 30 + int32(r.n(61))
		l.receipt = l.ship + 1 + int32(r.n(30))
		l.flag = flagN
		if l.receipt <= int32(currentDate) {
			l.flag = int8(flagA + 2*r.n(2)) // A or R
		}
		l.status = statusF
		if l.ship > int32(currentDate) {
			l.status = statusO
		}
		l.instr = int8(r.n(uint64(len(shipInstructs))))
		l.mode = int8(r.n(uint64(len(shipModes))))
		clen := 10 + r.n(34)
		l.cOff, l.cLen = int32(r.n(textLen-clen)), int32(clen)
	}
}

// partSupp is the supplier of a part's s-th supply (0..3): the
// specification's formula (suppKey), except where it gives a part the same
// supplier twice. That happens only below about 230 suppliers (SF 0.023),
// when a step of S/4 + (partkey-1)/S goes round the S suppliers in two or
// three steps; there a step of S/4 keeps the four apart.
func partSupp(partkey, s, supps int64) int64 {
	step := supps/4 + (partkey-1)/supps
	for d := int64(1); d <= 3; d++ {
		if d*step%supps == 0 {
			return (partkey+s*(supps/4))%supps + 1
		}
	}
	return suppKey(partkey, s, supps)
}

// totalCents is O_TOTALPRICE in cents: the sum over the lines of
// extendedprice * (1-discount) * (1+tax), each product truncated to the
// cent as dbgen does.
func (o *tpchOrder) totalCents() int64 {
	var sum int64
	for _, l := range o.lines[:o.n] {
		e := l.qty * retailCents(l.part)
		sum += e * (100 - l.disc) / 100 * (100 + l.tax) / 100
	}
	return sum
}

// status is O_ORDERSTATUS: F or O when all lines are, else P.
func (o *tpchOrder) status() string {
	var f, n int
	for _, l := range o.lines[:o.n] {
		n++
		if l.status == statusF {
			f++
		}
	}
	switch f {
	case n:
		return "F"
	case 0:
		return "O"
	}
	return "P"
}

// orderFiles splits orders 1..n into files of lineitem: file i holds the
// lines of orders [first[i], first[i+1]), and lines[i] of them.
func orderFiles(ctx context.Context, g *orderGen, orders int64, files, concurrency int) (first, lines []int64, err error) {
	first = make([]int64, files+1)
	lines = make([]int64, files)
	for i := range files + 1 {
		first[i] = 1 + orders*int64(i)/int64(files)
	}
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(concurrency)
	for i := range files {
		eg.Go(func() error {
			var r rng
			var n int64
			for idx := first[i]; idx < first[i+1]; idx++ {
				g.seed(&r, idx)
				n += int64(lineCount(&r))
				if idx&(1<<20-1) == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
			}
			lines[i] = n
			return nil
		})
	}
	return first, lines, eg.Wait()
}
