package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/mempool"
)

// Pipeline stages. Each is defined once, with its flags, and made into
// both a command of its own (`sluice filter EXPR`, reading an Arrow IPC
// stream on stdin and writing one on stdout) and a stage of `sluice run`,
// whose text is parsed with a fresh copy of the same command's flags.

type stageKind int

const (
	kindSource stageKind = iota // starts a pipeline
	kindStage                   // stream in, stream out
	kindSink                    // ends a pipeline
	kindEither                  // merge: a source when first, else a stage
)

// stageIO is what a stage reads and writes besides its URLs.
type stageIO struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	first  bool      // the stage starts the pipeline
	stores *storeSet // the run's stores, closed when it ends
	// command says the stage runs as its own command (sluice show FILE),
	// not inside sluice run's text.
	command bool
}

// built is a stage made from its command line: a source or a stage.
type built struct {
	source exec.SourceStage
	stage  exec.Stage
}

type stageDef struct {
	name, use, short, long, example string
	kind                            stageKind
	args                            cobra.PositionalArgs
	// flags declares the stage's flags on fs, bound to fresh variables,
	// and returns how to build the stage once they and the arguments are
	// parsed.
	flags func(fs *pflag.FlagSet) func(args []string, sio stageIO) (built, error)
	// cli says the stage also is a command of its own (scan is not: the
	// scan command reads datasets for other uses).
	cli bool
}

func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s takes at least %d argument(s), got %d (see sluice %s --help)", cmd.Name(), n, len(args), cmd.Name())
		}
		return nil
	}
}

// splitList splits comma-separated names across arguments.
func splitList(what string, args ...string) ([]string, error) {
	var out []string
	for _, a := range args {
		for _, s := range strings.Split(a, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				return nil, usagef("%s: an empty name in %q", what, a)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// sortKeys parses KEYS for --by: names, each optionally name:desc or
// name:asc; --desc reverses those without a suffix.
func sortKeys(stage, by string, desc bool) ([]exec.SortKey, error) {
	if by == "" {
		return nil, usagef("%s: --by is required", stage)
	}
	names, err := splitList(stage+" --by", by)
	if err != nil {
		return nil, err
	}
	keys := make([]exec.SortKey, len(names))
	for i, n := range names {
		k := exec.SortKey{Column: n, Desc: desc}
		if c, dir, ok := strings.Cut(n, ":"); ok && (dir == "desc" || dir == "asc") {
			k = exec.SortKey{Column: c, Desc: dir == "desc"}
		}
		keys[i] = k
	}
	return keys, nil
}

func count(stage, s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, usagef("%s: %q is not a row count", stage, s)
	}
	return n, nil
}

func stage(s exec.Stage) (built, error) { return built{stage: s}, nil }

func stageOrErr(s exec.Stage, err error) (built, error) { return built{stage: s}, err }

var stageDefs = []*stageDef{
	{
		name: "scan", kind: kindSource, args: minArgs(1),
		use:   "scan URL... [--columns a,b] [--filter EXPR]",
		short: "Read Parquet datasets, or files of any format (first stage of sluice run)",
		long: `Read Parquet datasets in dataset order: each URL is a file, a prefix (its
.parquet objects in key order) or a glob; where there is no Parquet, objects
in the format their content shows (Arrow IPC file or stream, CSV, JSON lines). The flags are sluice scan's (see
sluice scan --help); -o and --quiet belong to sluice scan alone. A filter
stage right after the scan also skips the row groups the filter's
conjuncts exclude, as --filter does. As a separate process, use
sluice scan URL -o - (or sluice run 'scan URL ...'), which writes the
batches as an Arrow IPC stream.`,
		example: `  sluice run 'scan ./data/taxi --columns pickup_date,trip_distance | head 5 | show'

  # flag columns of few distinct values as dictionaries: cheaper to decode, pipe and group by
  sluice run 'scan ./data/lineitem --dict l_returnflag,l_linestatus --columns l_returnflag,l_linestatus,l_quantity
      | agg-by l_returnflag,l_linestatus "sum(l_quantity), count()" | show'`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			var o scanFlags // the same flags as sluice scan's
			o.register(fs)
			return o.scanStage
		},
	},
	{
		name: "from-csv", kind: kindSource, cli: true,
		use:   "from-csv [URL...]",
		short: "Read CSV with a header line (from URLs, or stdin) as an Arrow stream",
		long: `Read CSV with a header line from each URL in turn, or from stdin when no URL
is given. Column types are inferred from the first 1000 lines (int64,
float64, bool, date32 for YYYY-MM-DD, timestamp, else string) unless --types
names them; an empty value is null.`,
		example: `  sluice from-csv trips.csv | sluice count-by payment_type | sluice show
  sluice from-csv --types zip=string < people.csv | sluice to-csv`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			var types []string
			fs.StringSliceVar(&types, "types", nil, "column types, name=type,... (int64, float64, bool, date32, timestamp, string)")
			return func(args []string, sio stageIO) (built, error) {
				opts := exec.CSVOptions{Types: map[string]string{}}
				for _, t := range types {
					name, typ, ok := strings.Cut(t, "=")
					if !ok {
						return built{}, usagef("from-csv --types %q: want name=type", t)
					}
					opts.Types[name] = typ
				}
				if !sio.first {
					return built{}, usagef("from-csv reads CSV: it must be the first stage")
				}
				return built{source: exec.FromCSV(args, sio.stdin, opts)}, nil
			}
		},
	},
	{
		name: "select", kind: kindStage, cli: true, args: minArgs(1),
		use: "select COLUMN[,COLUMN...]", short: "Keep the named columns, in that order",
		example: `  sluice run 'scan ./taxi | select pickup_date,fare_amount | head 3 | show'`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			return func(args []string, _ stageIO) (built, error) {
				cols, err := splitList("select", args...)
				if err != nil {
					return built{}, err
				}
				return stage(exec.Select(cols...))
			}
		},
	},
	{
		name: "drop", kind: kindStage, cli: true, args: minArgs(1),
		use: "drop COLUMN[,COLUMN...]", short: "Remove the named columns",
		example: `  sluice from-csv people.csv | sluice drop ssn,phone | sluice to-csv`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			return func(args []string, _ stageIO) (built, error) {
				cols, err := splitList("drop", args...)
				if err != nil {
					return built{}, err
				}
				return stage(exec.Drop(cols...))
			}
		},
	},
	{
		name: "rename", kind: kindStage, cli: true, args: minArgs(1),
		use: "rename OLD=NEW[,OLD=NEW...]", short: "Rename columns",
		example: `  sluice run 'scan ./taxi | rename trip_distance=miles | head 3 | show'`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			return func(args []string, _ stageIO) (built, error) {
				items, err := splitList("rename", args...)
				if err != nil {
					return built{}, err
				}
				var pairs [][2]string
				for _, it := range items {
					o, n, ok := strings.Cut(it, "=")
					if !ok {
						return built{}, usagef("rename: %q: want OLD=NEW", it)
					}
					pairs = append(pairs, [2]string{o, n})
				}
				return stage(exec.Rename(pairs...))
			}
		},
	},
	{
		name: "filter", kind: kindStage, cli: true, args: minArgs(1),
		use: "filter EXPR", short: "Keep the rows for which an expression is true",
		long: `Keep the rows for which EXPR is true (null is not true). EXPR is sluice's
one expression language, the same as scan --filter and agg-by's arguments:
  comparisons   = != < <= > >= (also == and <>), between numbers, strings,
                dates and timestamps; a quoted string compared with a date
                or timestamp is read as one (l_shipdate <= '1998-09-02')
  logic         and or not (also && || !), with SQL's rules for null
  sets, ranges  x in (1, 2, 3), x not in ('a', 'b'), x between 1 and 5
  patterns      s like 'RE%' (% any run, _ one character), s not like '%x'
  arithmetic    + - * / % on numbers; date + days, date - days, date - date,
                date or timestamp + or - interval 'N' day
  literals      12, 1.5, 'text' (a quote doubled inside), true, false,
                date 'YYYY-MM-DD', timestamp 'YYYY-MM-DD HH:MM:SS'
  functions     starts_with(s, 'p'), ends_with(s, 'x'), contains(s, 'y'), abs(x)
  nulls         x is null, x is not null
Columns are named as they are, or in double quotes ("odd name"). Several
arguments are joined with spaces. A malformed expression is reported with
the position of the problem. Right after a scan in sluice run, the filter
also skips the row groups whose statistics exclude it, as scan --filter does.`,
		example: `  sluice filter "l_shipdate <= date '1998-09-02'"
  sluice filter "starts_with(l_shipmode, 'RE') and l_quantity * 2 > 40"
  sluice filter "l_shipmode in ('AIR', 'RAIL') and l_shipdate between '1994-01-01' and '1994-12-31'"
  sluice run "scan ./lineitem | filter \"l_shipdate >= date '1998-12-01' - interval '90' day\" | count-by l_returnflag"`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			return func(args []string, _ stageIO) (built, error) {
				return stageOrErr(exec.Filter(strings.Join(args, " ")))
			}
		},
	},
	{
		name: "sum-by", kind: kindStage, cli: true, args: minArgs(2),
		use: "sum-by KEYS VALUE[,VALUE...]", short: "Sum value columns per group of key columns",
		long: `Sum the value columns per group of the key columns (comma-separated). Each
sum keeps its column's name; groups come out in key order. Float sums are
exact to the order of the input: each batch is summed in row order and the
batches in stream order, so piped and fused runs agree to the bit.`,
		example: `  sluice run 'scan ./taxi --columns pickup_date,trip_distance | sum-by pickup_date trip_distance | top 9 --by trip_distance --desc | show'`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			return func(args []string, _ stageIO) (built, error) {
				keys, err := splitList("sum-by", args[0])
				if err != nil {
					return built{}, err
				}
				vals, err := splitList("sum-by", args[1:]...)
				if err != nil {
					return built{}, err
				}
				return stage(exec.SumBy(keys, vals))
			}
		},
	},
	{
		name: "agg-by", kind: kindStage, cli: true, args: minArgs(2),
		use: "agg-by KEYS AGG[,AGG...]", short: "Aggregate per group: sum, count, min, max, mean",
		long: `Compute aggregates per group of the key columns (comma-separated). Each AGG
is sum(x), count(), count(x), min(x), max(x) or mean(x), optionally followed
by "as NAME"; x is a column or an expression (see filter). Without a name,
sum(x) is called sum_x and count() count. Groups come out in key order.`,
		example: `  sluice agg-by l_returnflag,l_linestatus "sum(l_quantity), mean(l_discount), count()"
  sluice agg-by l_shipmode "sum(l_extendedprice * (1 - l_discount)) as revenue"`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			return func(args []string, _ stageIO) (built, error) {
				keys, err := splitList("agg-by", args[0])
				if err != nil {
					return built{}, err
				}
				return stageOrErr(exec.AggBy(keys, strings.Join(args[1:], ",")))
			}
		},
	},
	{
		name: "count-by", kind: kindStage, cli: true, args: exactArgs(1),
		use: "count-by KEYS", short: "Count the rows of each group of key columns",
		example: `  sluice run 'scan ./taxi | count-by payment_type | show'`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			return func(args []string, _ stageIO) (built, error) {
				keys, err := splitList("count-by", args[0])
				if err != nil {
					return built{}, err
				}
				return stage(exec.CountBy(keys))
			}
		},
	},
	{
		name: "sort", kind: kindStage, cli: true, args: exactArgs(0),
		use: "sort --by KEYS [--desc]", short: "Sort rows by key columns, spilling to disk past a memory budget",
		long: `Sort the rows by the key columns (name, or name:desc / name:asc for one key);
rows that tie keep their input order, nulls come last (as in DuckDB). Past --memory of
batches, sorted runs are spilled to temporary files and merged at the end.`,
		example: `  sluice sort --by fare_amount --desc
  sluice sort --by payment_type,trip_distance:desc --memory 64MiB`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			var by, mem, tmp string
			var desc bool
			fs.StringVar(&by, "by", "", "comma-separated key columns")
			fs.BoolVar(&desc, "desc", false, "descending order")
			fs.StringVar(&mem, "memory", "256MiB", "bytes of batches held before spilling to disk")
			fs.StringVar(&tmp, "tmp", "", "directory for spilled runs (default: the system's temporary directory)")
			return func(args []string, _ stageIO) (built, error) {
				keys, err := sortKeys("sort", by, desc)
				if err != nil {
					return built{}, err
				}
				m, err := parseMemory(mem)
				if err != nil {
					return built{}, err
				}
				return stage(exec.SortWith(keys, exec.SortOptions{Memory: m, TempDir: tmp}))
			}
		},
	},
	{
		name: "top", kind: kindStage, cli: true, args: exactArgs(1),
		use: "top N --by KEYS [--desc]", short: "Keep the first N rows in key order",
		example: `  sluice top 9 --by trip_distance --desc`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			var by string
			var desc bool
			fs.StringVar(&by, "by", "", "comma-separated key columns")
			fs.BoolVar(&desc, "desc", false, "descending order")
			return func(args []string, _ stageIO) (built, error) {
				n, err := count("top", args[0])
				if err != nil {
					return built{}, err
				}
				keys, err := sortKeys("top", by, desc)
				if err != nil {
					return built{}, err
				}
				return stage(exec.Top(n, keys))
			}
		},
	},
	{
		name: "head", kind: kindStage, cli: true, args: exactArgs(1),
		use: "head N", short: "Keep the first N rows, then stop reading",
		example: `  sluice run 'scan ./lineitem | head 10 | show'`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			return func(args []string, _ stageIO) (built, error) {
				n, err := count("head", args[0])
				if err != nil {
					return built{}, err
				}
				return stage(exec.Head(n))
			}
		},
	},
	{
		name: "merge", kind: kindEither, cli: true,
		use: "merge --by KEYS URL...", short: "Merge inputs already sorted by key columns",
		long: `Merge sorted inputs into one sorted stream; rows that tie come from the
earlier input first. Inputs are objects (.arrow, .arrows, .parquet, .csv;
a prefix means each object under it, in key order). After other stages (or
with a pipe on stdin) the stream so far is the first input. An input found
out of order is an error naming it.`,
		example: `  sluice merge --by l_orderkey ./sorted/
  sluice run 'scan ./new | sort --by k | merge --by k ./old.arrow | write ./all.arrow'`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			var by string
			var desc bool
			fs.StringVar(&by, "by", "", "comma-separated key columns the inputs are sorted by")
			fs.BoolVar(&desc, "desc", false, "the inputs are in descending order")
			return func(args []string, sio stageIO) (built, error) {
				keys, err := sortKeys("merge", by, desc)
				if err != nil {
					return built{}, err
				}
				m := exec.Merge(keys, args)
				if sio.first {
					if len(args) == 0 {
						return built{}, usagef("merge: name the sorted inputs")
					}
					return built{source: m}, nil
				}
				return built{stage: m}, nil
			}
		},
	},
	{
		name: "shuffle", kind: kindStage, cli: true,
		use: "shuffle --by KEYS --to R", short: "An exchange: with run --workers, R reducers each aggregate or sort one hash part of the rows",
		long: `Mark an exchange in a pipeline. Under sluice run --workers N, each map task
hash-partitions its rows by the key columns into R parts (the hash of
partition) and writes them as one object with an index; reducer r reads
part r of every map task's object and runs the stages after the shuffle,
up to and including an aggregation (sum-by, count-by, agg-by) or a sort,
and the driver merges the reducers' groups by key, or their sorted rows
(ties in dataset order). The results are those of one process. Run in one
process, or as a stage of its own, it passes every batch on unchanged.`,
		example: `  sluice run --workers 4 'scan ./lineitem | shuffle --by l_orderkey --to 8
      | sum-by l_orderkey l_quantity | top 10 --by l_quantity --desc | show'

  sluice run --workers 4 'scan ./lineitem | shuffle --by l_orderkey --to 8
      | sort --by l_shipdate | head 100 | show'`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			var by string
			var to int
			fs.StringVar(&by, "by", "", "comma-separated key columns")
			fs.IntVar(&to, "to", 0, "number of parts (reducers)")
			return func(args []string, _ stageIO) (built, error) {
				if len(args) > 0 {
					return built{}, usagef("shuffle takes no arguments, got %q (use --by and --to)", args)
				}
				if by == "" || to < 1 {
					return built{}, usagef("shuffle: --by KEYS and --to R (at least 1) are required")
				}
				keys, err := splitList("shuffle --by", by)
				if err != nil {
					return built{}, err
				}
				return stage(exec.Shuffle(keys, to))
			}
		},
	},
	{
		name: "partition", kind: kindSink, cli: true, args: exactArgs(1),
		use: "partition N --by KEYS --out URL", short: "Split rows into N objects by a hash of key columns",
		long: `Write each row to one of N objects, URL/part-00000.arrow and on, chosen by
xxh3 (XXH3-64, seed 0) of the row's key bytes mod N: for each key column a
byte 1 and the value (integers as 8 bytes little-endian, floats as float64
bits, strings as a 4-byte little-endian length and the bytes), or a byte 0
for null. The same key goes to the same partition in every run. Rows keep
their order within a partition; every partition is written, empty or not,
and appears only when the whole input was read without error.`,
		example: `  sluice run 'scan ./lineitem | partition 8 --by l_orderkey --out ./by-order/'
  sluice from-csv x.csv | sluice partition 4 --by user --out s3://b/x/ --format parquet`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			var by, out, formatName string
			fs.StringVar(&by, "by", "", "comma-separated key columns")
			fs.StringVar(&out, "out", "", "URL of the directory or prefix to write the partitions under")
			fs.StringVar(&formatName, "format", "arrow", "the partitions' format: "+format.NameHelp())
			return func(args []string, _ stageIO) (built, error) {
				n, err := strconv.Atoi(args[0])
				if err != nil || n < 1 {
					return built{}, usagef("partition: %q is not a number of partitions", args[0])
				}
				if by == "" || out == "" {
					return built{}, usagef("partition: --by and --out are required")
				}
				keys, err := splitList("partition --by", by)
				if err != nil {
					return built{}, err
				}
				return stage(exec.Partition(n, keys, out, formatName))
			}
		},
	},
	{
		name: "write", kind: kindSink, cli: true, args: exactArgs(1),
		use: "write URL [--format F]", short: "Write the stream to an object: .parquet, .arrow, .arrows, .csv or .jsonl",
		long: `Write the stream into one object, in the format --format names or, without
it, the one its name ends with: ` + format.SuffixHelp() + `.
Parquet has statistics, --compression (snappy by default) and row groups
of at most --row-group-rows rows, its columns encoded in parallel; an
Arrow IPC file, CSV and JSON lines
hold dictionary columns as their values. The same formats, suffixes and
bytes as sluice scan -o and sluice get -o. The object appears only when
the whole input was read without error.`,
		example: `  sluice run 'scan s3://b/taxi/ | filter "tip_amount > 10" | write ./big-tips.parquet'
  sluice run 'scan ./taxi | head 100 | write --format jsonl s3://b/sample.json'
  sluice run 'scan ./taxi | write --compression zstd --row-group-rows 131072 s3://b/taxi.parquet'`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			var name string
			var wf writeFlags
			fs.StringVar(&name, "format", "", "the format whatever the name: "+format.NameHelp())
			wf.register(fs, "")
			return func(args []string, _ stageIO) (built, error) {
				o, err := wf.options("write ")
				if err != nil {
					return built{}, err
				}
				f := format.Unknown
				if name != "" {
					if f, err = format.Parse(name); err != nil {
						return built{}, usagef("write --format: %v", err)
					}
				}
				return stage(exec.WriteOptions(args[0], f, o))
			}
		},
	},
	{
		name: "to-csv", kind: kindSink, cli: true, args: exactArgs(0),
		use: "to-csv", short: "Write the stream as CSV with a header line on stdout",
		example: `  sluice run 'scan ./taxi | head 100 | to-csv' > sample.csv`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			return func(args []string, sio stageIO) (built, error) { return stage(exec.ToCSV(sio.stdout)) }
		},
	},
	{
		name: "show", kind: kindSink, cli: true,
		use:   "show [FILE|URL...] [--rows N]",
		short: "Print the stream, or files of any format, as a table for a person",
		long: `Print the stream as a table for a person: as a command, the Arrow IPC stream
on stdin, or the files or datasets the URLs name in any format sluice reads
(Parquet, Arrow IPC file or stream, CSV, JSON lines), told by their content.`,
		example: `  sluice run 'scan ./taxi | count-by payment_type | show'
  sluice scan ./taxi --columns payment_type -o q.arrow && sluice show q.arrow
  sluice show ./trips.csv --rows 5`,
		flags: func(fs *pflag.FlagSet) func([]string, stageIO) (built, error) {
			var rows int
			fs.IntVar(&rows, "rows", 100, "most rows printed (0: all); the row count is printed either way")
			return func(args []string, sio stageIO) (built, error) {
				show := exec.ShowTable(sio.stdout, exec.ShowOptions{MaxRows: rows, Width: termWidth(sio.stdout)})
				switch {
				case len(args) == 0:
					return stage(show)
				case !sio.command:
					return built{}, usagef("show takes no file inside a pipeline (it shows the stream): read files with scan, or run sluice show %s", strings.Join(args, " "))
				}
				return built{source: exec.Scan(args, exec.ScanOptions{}), stage: show}, nil
			}
		},
	},
}

func stageDefByName(name string) *stageDef {
	for _, d := range stageDefs {
		if d.name == name {
			return d
		}
	}
	return nil
}

func stageNames() string {
	names := make([]string, len(stageDefs))
	for i, d := range stageDefs {
		names[i] = d.name
	}
	return strings.Join(names, ", ")
}

// newStageCommand makes a fresh command for a stage, with its build
// function bound to the command's flags.
func newStageCommand(d *stageDef) (*cobra.Command, func([]string, stageIO) (built, error)) {
	long := d.long
	if long == "" {
		long = d.short + "."
	}
	cmd := &cobra.Command{
		Use:   d.use,
		Short: d.short,
		Long: long + `

As a command it reads an Arrow IPC stream on stdin (unless it is a source)
and writes one on stdout (unless it is a sink; on a terminal it shows a
table); sluice run runs the same stages in one process.`,
		Example: d.example,
		Args:    d.args,
	}
	build := d.flags(cmd.Flags())
	return cmd, build
}

// stageCommands makes a command for every stage that has one.
func stageCommands(root *cobra.Command) []*cobra.Command {
	root.AddGroup(&cobra.Group{ID: "pipeline", Title: "Pipeline stages (Arrow IPC on stdin and stdout; in one process with sluice run):"})
	var cmds []*cobra.Command
	for _, d := range stageDefs {
		if !d.cli {
			continue
		}
		cmd, build := newStageCommand(d)
		cmd.GroupID = "pipeline"
		var cpuProfile string
		cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the stage to this file (go tool pprof reads it)")
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			stop, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			return runStage(cmd.Context(), d, build, args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		}
		cmds = append(cmds, cmd)
	}
	return cmds
}

// runStage runs one stage as its own process: it does its own work,
// under its own nice, affinity, cgroup and limits. Batches from a sluice
// stage before it come through shared memory on Linux (SLUICE_PIPE=plain:
// through the pipe).
func runStage(ctx context.Context, d *stageDef, build func([]string, stageIO) (built, error), args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	quietPipes(stdin, stdout)
	first := d.kind == kindSource || d.kind == kindEither && !isPipe(stdin)
	stores := newStoreSet()
	defer stores.Close()
	sio := stageIO{stdin: stdin, stdout: stdout, stderr: stderr, first: first, stores: stores, command: true}
	b, err := build(args, sio)
	if err != nil {
		return stageError(err)
	}
	p := exec.Pipeline{Source: b.source}
	if b.source != nil && b.stage != nil { // show FILE: a source and the stage over it
		p.Stages = append(p.Stages, b.stage)
	}
	if b.source == nil {
		if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			// Waiting for a person to type an Arrow stream would look like a hang.
			return usagef("%s reads an Arrow IPC stream on stdin, and stdin is a terminal: pipe a stage into it (sluice scan DIR -o - | sluice %s) or redirect a file (< q.arrow)", d.name, d.name)
		}
		p.Source = exec.ReadIPC(stdin)
		p.Stages = append(p.Stages, b.stage)
	}
	if len(p.Stages) == 0 || !exec.IsSink(p.Stages[len(p.Stages)-1]) {
		p.Stages = append(p.Stages, outputStage(stdout))
	}
	opts := exec.Options{Open: stores.open, Mem: mempool.NewMapped(0), HandOff: handOff()}
	if os.Getenv("SLUICE_PIPE_TRACE") != "" {
		opts.HandedOff = func() { fmt.Fprintf(stderr, "sluice: pipe: %s: read its input through shared memory\n", d.name) }
	}
	return stageError(exec.Run(ctx, p, opts))
}

// handOff says whether stages pass batches to and from sluice stages at
// the other end of their pipes through shared memory (exec.Options.HandOff):
// unless SLUICE_PIPE=plain.
func handOff() bool { return os.Getenv("SLUICE_PIPE") != "plain" }

// outputStage is how a pipeline that ends in a stream writes it: as Arrow
// IPC, or as a table when stdout is a terminal.
func outputStage(stdout io.Writer) exec.Stage {
	if w := termWidth(stdout); w > 0 {
		return exec.ShowTable(stdout, exec.ShowOptions{MaxRows: 100, Width: w})
	}
	return exec.WriteIPC(stdout)
}

// termWidth is the width of the terminal w writes to, or 0 when w is not
// a terminal.
func termWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
		return width
	}
	return 80
}

// stageError classifies a pipeline's error for the exit code: a mistake
// in how it was written is a usage error; a reader that closed our
// stdout (head downstream) is no error.
func stageError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EPIPE):
		return nil
	case errors.Is(err, exec.ErrInvalid):
		var ue usageError
		if errors.As(err, &ue) {
			return err
		}
		return usageError{err}
	}
	return err
}

func isPipe(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && (fi.Mode()&os.ModeNamedPipe != 0 || fi.Mode().IsRegular())
}

// quietPipes makes a write to a closed pipe an EPIPE error rather than a
// fatal signal, so a stage whose reader stopped early (head) ends quietly,
// and grows the pipes so stages exchange batches in fewer wakeups.
func quietPipes(stdin io.Reader, stdout io.Writer) {
	ignoreSIGPIPE()
	for _, x := range []any{stdin, stdout} {
		if f, ok := x.(*os.File); ok {
			growPipe(f)
		}
	}
}
