package plan

import (
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/format"
)

// BindParquet declares the Parquet options of what writes a file (the
// write stage, sluice scan -o) on fs, bound to w; who prefixes their help.
func BindParquet(fs *pflag.FlagSet, w *Write, who string) {
	fs.StringVar(&w.Compression, "compression", "snappy", who+"Parquet compression: "+strings.Join(format.Compressions, ", "))
	fs.Int64Var(&w.RowGroupRows, "row-group-rows", format.ParquetRowGroupRows, who+"most rows in a Parquet row group")
}

// defs are the stages, each defined once: the parser and the CLI's
// commands build them from the same flags.
var defs = []*Def{
	{
		Name: "scan", Kind: KindSource, Command: false, MinArgs: 1, MaxArgs: -1,
		Use:   "scan URL... [--columns a,b] [--filter EXPR]",
		Short: "Read Parquet datasets, or files of any format (first stage of sluice run)",
		Long: `Read Parquet datasets in dataset order: each URL is a file, a prefix (its
.parquet objects in key order) or a glob; where there is no Parquet, objects
in the format their content shows (Arrow IPC file or stream, CSV, JSON lines). The flags are sluice scan's (see
sluice scan --help); -o and --quiet belong to sluice scan alone. A filter
stage right after the scan also skips the row groups the filter's
conjuncts exclude, as --filter does. As a separate process, use
sluice scan URL -o - (or sluice run 'scan URL ...'), which writes the
batches as an Arrow IPC stream.`,
		Example: `  sluice run 'scan ./data/taxi --columns pickup_date,trip_distance | head 5 | show'

  # flag columns of few distinct values as dictionaries: cheaper to decode, pipe and group by
  sluice run 'scan ./data/lineitem --dict l_returnflag,l_linestatus --columns l_returnflag,l_linestatus,l_quantity
      | agg-by l_returnflag,l_linestatus "sum(l_quantity), count()" | show'`,
		zero: func() Stage { return &Scan{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			s := &Scan{}
			BindScan(fs, s)
			return func(args []string) (Stage, error) {
				s.URLs = args
				return checked(s)
			}
		},
	},
	{
		Name: "from-csv", Kind: KindSource, Command: true, MinArgs: 0, MaxArgs: -1,
		Use:   "from-csv [URL...]",
		Short: "Read CSV with a header line (from URLs, or stdin) as an Arrow stream",
		Long: `Read CSV with a header line from each URL in turn, or from stdin when no URL
is given. Column types are inferred from the first 1000 lines (int64,
float64, bool, date32 for YYYY-MM-DD, timestamp, else string) unless --types
names them; an empty value is null.`,
		Example: `  sluice from-csv trips.csv | sluice count-by payment_type | sluice show
  sluice from-csv --types zip=string < people.csv | sluice to-csv`,
		zero: func() Stage { return &FromCSV{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			var types []string
			fs.StringSliceVar(&types, "types", nil, "column types, name=type,... (int64, float64, bool, date32, timestamp, string)")
			return func(args []string) (Stage, error) {
				s := &FromCSV{URLs: some(args)}
				for _, t := range types {
					name, typ, ok := strings.Cut(t, "=")
					if !ok {
						return nil, invalidf("from-csv --types %q: want name=type", t)
					}
					if s.Types == nil {
						s.Types = map[string]string{}
					}
					s.Types[name] = typ
				}
				return checked(s)
			}
		},
	},
	{
		Name: "select", Kind: KindTransform, Command: true, MinArgs: 1, MaxArgs: -1,
		Use:   "select COLUMN|EXPR as NAME[, ...]",
		Short: "Keep the named columns, in that order, and computed ones",
		Long: `Keep the named columns, in the order given, and add the value of each
EXPR as NAME among them. EXPR is sluice's one expression language (see
filter): arithmetic, case, cast and the functions. Computed values are
int64, float64, string, bool, date32 or timestamp[ns, UTC] columns; a
column selected by its name keeps its type. A column whose name is not a
plain word is written in double quotes ("trip distance") when there are
expressions; several arguments are joined with spaces.`,
		Example: `  sluice run 'scan ./taxi | select pickup_date,fare_amount | head 3 | show'
  sluice run 'scan ./lineitem | select l_orderkey, l_extendedprice * (1 - l_discount) as revenue | to-csv'`,
		zero: func() Stage { return &Select{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			return func(args []string) (Stage, error) {
				cols, exprs, err := items("select", args, false)
				if err != nil {
					return nil, err
				}
				return checked(&Select{Columns: cols, Exprs: exprs})
			}
		},
	},
	{
		Name: "extend", Kind: KindTransform, Command: true, MinArgs: 1, MaxArgs: -1,
		Use:   "extend EXPR as NAME[, EXPR as NAME...]",
		Short: "Add computed columns and keep the rest",
		Long: `Add the value of each EXPR as a column NAME after the input's columns, or in
the place of the column of that name, and keep every other column. EXPR is
sluice's one expression language (see filter); each is computed over the
input's columns (not over the columns the same extend adds). Values are
int64, float64, string, bool, date32 or timestamp[ns, UTC] columns, nulls
kept. Several arguments are joined with spaces.`,
		Example: `  sluice extend "l_extendedprice * (1 - l_discount) as revenue, extract(year from l_shipdate) as year"
  sluice run "scan ./orders | extend \"case when o_totalprice > 1e5 then 'big' else 'small' end as size\" | count-by size | show"`,
		zero: func() Stage { return &Extend{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			return func(args []string) (Stage, error) {
				cols, exprs, err := items("extend", args, true)
				if err != nil {
					return nil, err
				}
				return checked(&Extend{Columns: cols, Exprs: exprs})
			}
		},
	},
	{
		Name: "drop", Kind: KindTransform, Command: true, MinArgs: 1, MaxArgs: -1,
		Use:     "drop COLUMN[,COLUMN...]",
		Short:   "Remove the named columns",
		Example: `  sluice from-csv people.csv | sluice drop ssn,phone | sluice to-csv`,
		zero:    func() Stage { return &Drop{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			return func(args []string) (Stage, error) {
				cols, err := list("drop", args...)
				if err != nil {
					return nil, err
				}
				return checked(&Drop{Columns: cols})
			}
		},
	},
	{
		Name: "rename", Kind: KindTransform, Command: true, MinArgs: 1, MaxArgs: -1,
		Use:     "rename OLD=NEW[,OLD=NEW...]",
		Short:   "Rename columns",
		Example: `  sluice run 'scan ./taxi | rename trip_distance=miles | head 3 | show'`,
		zero:    func() Stage { return &RenameColumns{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			return func(args []string) (Stage, error) {
				items, err := list("rename", args...)
				if err != nil {
					return nil, err
				}
				s := &RenameColumns{}
				for _, it := range items {
					o, n, ok := strings.Cut(it, "=")
					if !ok {
						return nil, invalidf("rename: %q: want OLD=NEW", it)
					}
					s.Pairs = append(s.Pairs, Rename{Old: o, New: n})
				}
				return checked(s)
			}
		},
	},
	{
		Name: "filter", Kind: KindTransform, Command: true, MinArgs: 1, MaxArgs: -1,
		Use:   "filter EXPR",
		Short: "Keep the rows for which an expression is true",
		Long: `Keep the rows for which EXPR is true (null is not true). EXPR is sluice's
one expression language, the same as scan --filter and agg-by's arguments:
  comparisons   = != < <= > >= (also == and <>), between numbers, strings,
                dates and timestamps; a quoted string compared with a date
                or timestamp is read as one (l_shipdate <= '1998-09-02')
  logic         and or not (also && || !), with SQL's rules for null
  sets, ranges  x in (1, 2, 3), x not in ('a', 'b'), x between 1 and 5
  patterns      s like 'RE%' (% any run, _ one character), s not like '%x'
  arithmetic    + - * / % on numbers; date + days, date - days, date - date,
                date or timestamp + or - interval 'N' day
  decimals      exact, as DuckDB's: + - * % of decimals and integers keep
                every digit (DuckDB's result precision and scale; a result
                past it stops with an error), / and float operands give a
                double; 1.5 is a decimal, 1.5e0 a double
  literals      12, 1.5, 'text' (a quote doubled inside), true, false,
                date 'YYYY-MM-DD', timestamp 'YYYY-MM-DD HH:MM:SS'
  intervals     date or timestamp + or - interval 'N' month or year: the
                same day N months on, clamped to the month's last day
  conditionals  case when c then v [when ...] [else v] end (a v may be
                null), case x when 1 then v ... end, coalesce(x, y, ...),
                nullif(x, y)
  casts         cast(x as integer|bigint|double|decimal(p,s)|varchar|date|
                timestamp|boolean); a value that does not convert is null
  strings       upper, lower, length, substring(s, start[, len]) (from 1;
                negative from the end), trim/ltrim/rtrim(s[, chars]),
                concat(a, ...) (skips nulls), a || b (null if either is;
                || of booleans is or, and binds as loosely: (a || b) = c),
                replace(s, from, to), strpos(s, t),
                regexp_matches(s, 're'[, 'i']), starts_with, ends_with,
                contains
  dates         extract(year|quarter|month|week|day|dow|isodow|doy|hour|
                minute|second|epoch from x), year(x), month(x), ...,
                date_part('part', x), date_trunc('month', x),
                date_diff('day', a, b) (boundaries crossed, as DuckDB;
                weeks are whole 7 days)
  numbers       abs, round(x[, n]) (half away from zero), floor, ceil,
                sqrt, ln, log10, exp, power(x, y), mod(a, b); sqrt and ln
                of what they are not defined for are null
  nulls         x is null, x is not null
Columns are named as they are, or in double quotes ("odd name"). Several
arguments are joined with spaces. A malformed expression is reported with
the position of the problem. Right after a scan in sluice run, the filter
also skips the row groups whose statistics exclude it, as scan --filter does.`,
		Example: `  sluice filter "l_shipdate <= date '1998-09-02'"
  sluice filter "starts_with(l_shipmode, 'RE') and l_quantity * 2 > 40"
  sluice filter "l_shipmode in ('AIR', 'RAIL') and l_shipdate between '1994-01-01' and '1994-12-31'"
  sluice run "scan ./lineitem | filter \"l_shipdate >= date '1998-12-01' - interval '90' day\" | count-by l_returnflag"`,
		zero: func() Stage { return &Filter{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			return func(args []string) (Stage, error) {
				return checked(&Filter{Expr: strings.Join(args, " ")})
			}
		},
	},
	{
		Name: "sum-by", Kind: KindTransform, Command: true, MinArgs: 2, MaxArgs: -1,
		Use:   "sum-by KEYS VALUE[,VALUE...]",
		Short: "Sum value columns per group of key columns",
		Long: `Sum the value columns per group of the key columns (comma-separated). Each
sum keeps its column's name; groups come out in key order. Float sums are
exact to the order of the input: each batch is summed in row order and the
batches in stream order, so piped and fused runs agree to the bit.`,
		Example: `  sluice run 'scan ./taxi --columns pickup_date,trip_distance | sum-by pickup_date trip_distance | top 9 --by trip_distance --desc | show'`,
		zero:    func() Stage { return &SumBy{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			return func(args []string) (Stage, error) {
				keys, err := list("sum-by", args[0])
				if err != nil {
					return nil, err
				}
				vals, err := list("sum-by", args[1:]...)
				if err != nil {
					return nil, err
				}
				return checked(&SumBy{Keys: keys, Values: vals})
			}
		},
	},
	{
		Name: "agg-by", Kind: KindTransform, Command: true, MinArgs: 2, MaxArgs: -1,
		Use:   "agg-by KEYS AGG[,AGG...]",
		Short: "Aggregate per group: sum, count, min, max, mean, distinct counts, quantiles, stddev",
		Long: `Compute aggregates per group of the key columns (comma-separated). Each AGG is
one of the following, optionally followed by "as NAME"; x is a column or an
expression (see filter). Nulls are skipped, as in DuckDB.

  sum(x), mean(x) or avg(x)     numbers; the sum of decimals is exact, a
                                DECIMAL(38) of their scale, their mean a float
  count(), count(x)             rows, non-null values
  count(distinct x)             distinct non-null values (exact)
  approx_count_distinct(x)      a HyperLogLog estimate (4096 registers, about
                                1.6% error; exact up to 512 distinct values)
  min(x), max(x)                numbers, strings, dates, timestamps
  any_value(x)                  the first non-null value in dataset order
  median(x), quantile(x, q)     exact, interpolated between the two nearest
                                values: DuckDB's median and quantile_cont (its
                                quantile is quantile_disc); q from 0 to 1;
                                numbers, as a float (decimals as decimals of
                                their type, to 15 digits)
  quantile_disc(x, q)           exact, the first value whose cumulative share
                                reaches q (DuckDB's quantile_disc), as a float
                                (decimals as above)
  approx_quantile(x, q)         a DDSketch estimate within 1% of the value at
                                rank q*(n-1), in a few KiB a group; as a float
  stddev(x) or stddev_samp(x), stddev_pop(x),
  variance(x) or var_samp(x), var_pop(x)
                                sample (null for one value) and population,
                                by Welford's method

Without a name, an aggregate of a column is called fn_column (sum_x, median_x,
count_distinct_x), count() count, and others as written. Groups come out in
key order. Past their share of run --memory (which every sort, join and
aggregation of the run shares) the groups spill to disk ($TMPDIR) by a hash of
their keys and are folded a part at a time, with the same results; one
group's state is held whole (median and quantile keep every value of a
group). Under run --workers each map task sends a summary per batch and the
driver folds them in dataset order, so results equal one process's to the
bit: count(distinct) sends its distinct values, median and quantile every
value, approx_count_distinct and approx_quantile their sketches (merged by
register maximum and by bucket counts, which any order gives alike).`,
		Example: `  sluice agg-by l_returnflag,l_linestatus "sum(l_quantity), mean(l_discount), count()"
  sluice agg-by l_shipmode "sum(l_extendedprice * (1 - l_discount)) as revenue"
  sluice agg-by l_shipmode "count(distinct l_orderkey), median(l_quantity), quantile(l_quantity, 0.99) as p99"
  sluice agg-by l_shipmode "approx_quantile(l_extendedprice, 0.99) as p99"`,
		zero: func() Stage { return &AggBy{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			return func(args []string) (Stage, error) {
				keys, err := list("agg-by", args[0])
				if err != nil {
					return nil, err
				}
				return checked(&AggBy{Keys: keys, Aggs: strings.Join(args[1:], ",")})
			}
		},
	},
	{
		Name: "count-by", Kind: KindTransform, Command: true, MinArgs: 1, MaxArgs: 1,
		Use:     "count-by KEYS",
		Short:   "Count the rows of each group of key columns",
		Example: `  sluice run 'scan ./taxi | count-by payment_type | show'`,
		zero:    func() Stage { return &CountBy{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			return func(args []string) (Stage, error) {
				keys, err := list("count-by", args[0])
				if err != nil {
					return nil, err
				}
				return checked(&CountBy{Keys: keys})
			}
		},
	},
	{
		Name: "sort", Kind: KindTransform, Command: true, MinArgs: 0, MaxArgs: 0,
		Use:   "sort --by KEYS [--desc]",
		Short: "Sort rows by key columns, spilling to disk past a memory budget",
		Long: `Sort the rows by the key columns (name, or name:desc / name:asc for one key);
rows that tie keep their input order, nulls come last (as in DuckDB). Past --memory of
batches, sorted runs are spilled to temporary files and merged at the end.`,
		Example: `  sluice sort --by fare_amount --desc
  sluice sort --by payment_type,trip_distance:desc --memory 64MiB`,
		zero: func() Stage { return &Sort{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			var by string
			var desc bool
			s := &Sort{}
			fs.StringVar(&by, "by", "", "comma-separated key columns")
			fs.BoolVar(&desc, "desc", false, "descending order")
			fs.Var(sizeValue{&s.Memory}, "memory", "most bytes of batches held before spilling to disk, within run --memory, which the run's sorts, joins and aggregations share (default: its share of that)")
			fs.StringVar(&s.TempDir, "tmp", "", "directory for spilled runs (default: the system's temporary directory)")
			return func(args []string) (Stage, error) {
				keys, err := sortKeys("sort", by, desc)
				if err != nil {
					return nil, err
				}
				s.Keys = keys
				return checked(s)
			}
		},
	},
	{
		Name: "top", Kind: KindTransform, Command: true, MinArgs: 1, MaxArgs: 1,
		Use:     "top N --by KEYS [--desc]",
		Short:   "Keep the first N rows in key order",
		Example: `  sluice top 9 --by trip_distance --desc`,
		zero:    func() Stage { return &Top{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			var by string
			var desc bool
			fs.StringVar(&by, "by", "", "comma-separated key columns")
			fs.BoolVar(&desc, "desc", false, "descending order")
			return func(args []string) (Stage, error) {
				n, err := rowCount("top", args[0])
				if err != nil {
					return nil, err
				}
				keys, err := sortKeys("top", by, desc)
				if err != nil {
					return nil, err
				}
				return checked(&Top{N: n, Keys: keys})
			}
		},
	},
	{
		Name: "distinct", Kind: KindTransform, Command: true, MinArgs: 0, MaxArgs: 0,
		Use:   "distinct [--on KEYS]",
		Short: "Keep one row of each distinct row, or of each distinct key",
		Long: `Keep each distinct row once; with --on, the first row (in dataset order) of
each distinct value of the key columns, every column kept (DuckDB's DISTINCT ON
without ORDER BY, made deterministic). Nulls are equal to each other here. Rows
come out in key order (the keys: every column, or --on's), nulls last, as
agg-by's groups do; so the same in one process, with --threads and with
run --workers, where each map task keeps its piece's first rows and the
driver keeps the first of those. The kept rows are held in memory until the
end (not spilled).`,
		Example: `  sluice run 'scan ./lineitem | select l_shipmode,l_returnflag | distinct | show'
  sluice run 'scan ./orders | distinct --on o_custkey | show'`,
		zero: func() Stage { return &Distinct{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			var on string
			fs.StringVar(&on, "on", "", "comma-separated key columns (default: every column)")
			return func(args []string) (Stage, error) {
				if !fs.Changed("on") {
					return checked(&Distinct{})
				}
				keys, err := list("distinct --on", on)
				if err != nil {
					return nil, err
				}
				return checked(&Distinct{On: keys})
			}
		},
	},
	{
		Name: "head", Kind: KindTransform, Command: true, MinArgs: 1, MaxArgs: 1,
		Use:     "head N",
		Short:   "Keep the first N rows, then stop reading",
		Example: `  sluice run 'scan ./lineitem | head 10 | show'`,
		zero:    func() Stage { return &Head{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			return func(args []string) (Stage, error) {
				n, err := rowCount("head", args[0])
				if err != nil {
					return nil, err
				}
				return checked(&Head{N: n})
			}
		},
	},
	{
		Name: "merge", Kind: KindEither, Command: true, MinArgs: 0, MaxArgs: -1,
		Use:   "merge --by KEYS URL...",
		Short: "Merge inputs already sorted by key columns",
		Long: `Merge sorted inputs into one sorted stream; rows that tie come from the
earlier input first. Inputs are objects (.arrow, .arrows, .parquet, .csv;
a prefix means each object under it, in key order). After other stages (or
with a pipe on stdin) the stream so far is the first input. An input found
out of order is an error naming it.`,
		Example: `  sluice merge --by l_orderkey ./sorted/
  sluice run 'scan ./new | sort --by k | merge --by k ./old.arrow | write ./all.arrow'`,
		zero: func() Stage { return &Merge{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			var by string
			var desc bool
			fs.StringVar(&by, "by", "", "comma-separated key columns the inputs are sorted by")
			fs.BoolVar(&desc, "desc", false, "the inputs are in descending order")
			return func(args []string) (Stage, error) {
				keys, err := sortKeys("merge", by, desc)
				if err != nil {
					return nil, err
				}
				return checked(&Merge{Keys: keys, URLs: some(args)})
			}
		},
	},
	{
		Name: "shuffle", Kind: KindTransform, Command: true, MinArgs: 0, MaxArgs: 0,
		Use:   "shuffle --by KEYS --to R",
		Short: "An exchange: with run --workers, R reducers each aggregate or sort one hash part of the rows",
		Long: `Mark an exchange in a pipeline. Under sluice run --workers N, each map task
hash-partitions its rows by the key columns into R parts (the hash of
partition) and writes them as one object with an index; reducer r reads
part r of every map task's object and runs the stages after the shuffle,
up to and including an aggregation (sum-by, count-by, agg-by) or a sort,
and the driver merges the reducers' groups by key, or their sorted rows
(ties in dataset order). The results are those of one process. Run in one
process, or as a stage of its own, it passes every batch on unchanged.`,
		Example: `  sluice run --workers 4 'scan ./lineitem | shuffle --by l_orderkey --to 8
      | sum-by l_orderkey l_quantity | top 10 --by l_quantity --desc | show'

  sluice run --workers 4 'scan ./lineitem | shuffle --by l_orderkey --to 8
      | sort --by l_shipdate | head 100 | show'`,
		zero: func() Stage { return &Shuffle{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			var by string
			var to int
			fs.StringVar(&by, "by", "", "comma-separated key columns")
			fs.IntVar(&to, "to", 0, "number of parts (reducers)")
			return func(args []string) (Stage, error) {
				if by == "" || to < 1 {
					return nil, invalidf("shuffle: --by KEYS and --to R (at least 1) are required")
				}
				keys, err := list("shuffle --by", by)
				if err != nil {
					return nil, err
				}
				return checked(&Shuffle{Keys: keys, Parts: to})
			}
		},
	},
	{
		Name: "partition", Kind: KindSink, Command: true, MinArgs: 1, MaxArgs: 1,
		Use:   "partition N --by KEYS --out URL",
		Short: "Split rows into N objects by a hash of key columns",
		Long: `Write each row to one of N objects, URL/part-00000.arrow and on, chosen by
xxh3 (XXH3-64, seed 0) of the row's key bytes mod N: for each key column a
byte 1 and the value (integers as 8 bytes little-endian, floats as float64
bits, strings as a 4-byte little-endian length and the bytes), or a byte 0
for null. The same key goes to the same partition in every run. Rows keep
their order within a partition; every partition is written, empty or not,
and appears only when the whole input was read without error.`,
		Example: `  sluice run 'scan ./lineitem | partition 8 --by l_orderkey --out ./by-order/'
  sluice from-csv x.csv | sluice partition 4 --by user --out s3://b/x/ --format parquet`,
		zero: func() Stage { return &Partition{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			s := &Partition{}
			var by string
			fs.StringVar(&by, "by", "", "comma-separated key columns")
			fs.StringVar(&s.Out, "out", "", "URL of the directory or prefix to write the partitions under")
			fs.StringVar(&s.Format, "format", "arrow", "the partitions' format: "+format.NameHelp())
			return func(args []string) (Stage, error) {
				n, err := strconv.Atoi(args[0])
				if err != nil || n < 1 {
					return nil, invalidf("partition: %q is not a number of partitions", args[0])
				}
				if by == "" || s.Out == "" {
					return nil, invalidf("partition: --by and --out are required")
				}
				if s.Keys, err = list("partition --by", by); err != nil {
					return nil, err
				}
				s.N = n
				return checked(s)
			}
		},
	},
	{
		Name: "write", Kind: KindSink, Command: true, MinArgs: 1, MaxArgs: 1,
		Use:   "write URL [--format F]",
		Short: "Write the stream to an object: .parquet, .arrow, .arrows, .csv or .jsonl",
		Long: `Write the stream into one object, in the format --format names or, without
it, the one its name ends with: ` + format.SuffixHelp() + `.
Parquet has statistics, --compression (snappy by default) and row groups
of at most --row-group-rows rows, its columns encoded in parallel; an
Arrow IPC file, CSV and JSON lines
hold dictionary columns as their values. The same formats, suffixes and
bytes as sluice scan -o and sluice get -o. The object appears only when
the whole input was read without error.`,
		Example: `  sluice run 'scan s3://b/taxi/ | filter "tip_amount > 10" | write ./big-tips.parquet'
  sluice run 'scan ./taxi | head 100 | write --format jsonl s3://b/sample.json'
  sluice run 'scan ./taxi | write --compression zstd --row-group-rows 131072 s3://b/taxi.parquet'`,
		zero: func() Stage { return &Write{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			s := &Write{}
			fs.StringVar(&s.Format, "format", "", "the format whatever the name: "+format.NameHelp())
			BindParquet(fs, s, "")
			return func(args []string) (Stage, error) {
				s.URL = args[0]
				return checked(s)
			}
		},
	},
	{
		Name: "to-csv", Kind: KindSink, Command: true, MinArgs: 0, MaxArgs: 0,
		Use:     "to-csv",
		Short:   "Write the stream as CSV with a header line on stdout",
		Example: `  sluice run 'scan ./taxi | head 100 | to-csv' > sample.csv`,
		zero:    func() Stage { return &ToCSV{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			return func(args []string) (Stage, error) { return &ToCSV{}, nil }
		},
	},
	{
		Name: "show", Kind: KindSink, Command: true, MinArgs: 0, MaxArgs: -1,
		Use:   "show [FILE|URL...] [--rows N]",
		Short: "Print the stream, or files of any format, as a table for a person",
		Long: `Print the stream as a table for a person: as a command, the Arrow IPC stream
on stdin, or the files or datasets the URLs name in any format sluice reads
(Parquet, Arrow IPC file or stream, CSV, JSON lines), told by their content.`,
		Example: `  sluice run 'scan ./taxi | count-by payment_type | show'
  sluice scan ./taxi --columns payment_type -o q.arrow && sluice show q.arrow
  sluice show ./trips.csv --rows 5`,
		zero: func() Stage { return &Show{} },
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			s := &Show{}
			fs.IntVar(&s.Rows, "rows", 100, "most rows printed (0: all); the row count is printed either way")
			return func(args []string) (Stage, error) {
				s.URLs = some(args)
				return checked(s)
			}
		},
	},
}

// some is args, nil when empty, as JSON reads an absent list.
func some(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	return args
}
