package plan

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/internal/size"
	"github.com/sluice-data/sluice/sim"
)

// SortKey is a column to order by and its direction.
type SortKey struct {
	Column string `json:"column"`
	Desc   bool   `json:"desc,omitempty"`
}

// Rename is one column's old and new name.
type Rename struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// Scan reads Parquet datasets, or objects of any format sluice reads.
type Scan struct {
	URLs    []string `json:"urls"`
	Columns []string `json:"columns,omitempty"`
	Filter  string   `json:"filter,omitempty"`
	Dict    []string `json:"dict,omitempty"`
	// BatchRows is the most rows in a batch (default 65536).
	BatchRows int `json:"batch_rows,omitempty"`
	// Memory is the scan's budget in bytes; 0: the scan's default.
	Memory      int64 `json:"memory,omitempty"`
	Concurrency int   `json:"concurrency,omitempty"`
	// Arrival hands batches on as they are decoded (--order arrival).
	Arrival bool `json:"arrival,omitempty"`
	// Sim is a link model the scan reads through (see sim.Parse).
	Sim string `json:"sim,omitempty"`
	// Stats prints the scan's figures at its end.
	Stats     bool   `json:"stats,omitempty"`
	Int96Unit string `json:"int96_unit,omitempty"`
	// Snapshot and AsOf choose the snapshot of an Iceberg table read (a
	// snapshot id; a time in RFC 3339); neither: the current one.
	Snapshot int64  `json:"snapshot,omitempty"`
	AsOf     string `json:"as_of,omitempty"`
	// Catalog is an Iceberg REST catalog's URI: the URLs are then tables
	// in it (NAMESPACE.TABLE).
	Catalog string `json:"catalog,omitempty"`
}

// DefaultBatchRows is a scan's batch size when none is given.
const DefaultBatchRows = 64 << 10

// FromCSV reads CSV with a header line, from URLs or the standard input.
type FromCSV struct {
	URLs  []string          `json:"urls,omitempty"`
	Types map[string]string `json:"types,omitempty"`
}

// Select keeps columns in the order given. With Exprs, Columns[i] is
// the name of the value of expression Exprs[i], or, where that is empty,
// an input column kept as it is.
type Select struct {
	Columns []string `json:"columns"`
	Exprs   []string `json:"exprs,omitempty"`
}

// Extend adds the values of expressions as columns (or replaces the
// columns of those names) and keeps the rest: Exprs[i] named Columns[i].
type Extend struct {
	Columns []string `json:"columns"`
	Exprs   []string `json:"exprs"`
}

type Drop struct {
	Columns []string `json:"columns"`
}

type RenameColumns struct {
	Pairs []Rename `json:"pairs"`
}

type Filter struct {
	Expr string `json:"expr"`
}

type SumBy struct {
	Keys   []string `json:"keys"`
	Values []string `json:"values"`
}

// AggBy computes aggregates per group; Aggs is their list in the
// expression language (sum(x), count(), ... as NAME).
type AggBy struct {
	Keys []string `json:"keys"`
	Aggs string   `json:"aggs"`
}

type CountBy struct {
	Keys []string `json:"keys"`
}

// Distinct keeps one row of each distinct value of On (every column when
// On is empty): the first in dataset order.
type Distinct struct {
	On []string `json:"on,omitempty"`
}

type Sort struct {
	Keys []SortKey `json:"keys"`
	// Memory is the bytes of batches held before spilling; zero: the
	// run's budget (exec.Options.Memory, run --memory), so that a
	// budget given to a run or a job's workers bounds its sorts.
	Memory  int64  `json:"memory,omitempty"`
	TempDir string `json:"tmp,omitempty"`
}

type Top struct {
	N    int64     `json:"n"`
	Keys []SortKey `json:"keys"`
}

type Head struct {
	N int64 `json:"n"`
}

// Merge merges sorted inputs: the stream so far (unless it is first) and
// the objects URLs name.
type Merge struct {
	Keys []SortKey `json:"keys"`
	URLs []string  `json:"urls,omitempty"`
}

// Shuffle is an exchange: under fan-out, Parts reducers each get one
// hash part of the rows by Keys.
type Shuffle struct {
	Keys  []string `json:"keys"`
	Parts int      `json:"parts"`
}

// MaxParts bounds a shuffle's parts.
const MaxParts = 100000

type Partition struct {
	N      int      `json:"n"`
	Keys   []string `json:"keys"`
	Out    string   `json:"out"`
	Format string   `json:"format"`
}

type Write struct {
	URL string `json:"url"`
	// Format is the format's name; empty: told by the URL's suffix.
	Format       string `json:"format,omitempty"`
	Compression  string `json:"compression"`
	RowGroupRows int64  `json:"row_group_rows"`
}

type ToCSV struct{}

// Show prints the stream as a table; as a command of its own, the files
// URLs name instead.
type Show struct {
	Rows int      `json:"rows"`
	URLs []string `json:"urls,omitempty"`
}

func (*Scan) Name() string          { return "scan" }
func (*FromCSV) Name() string       { return "from-csv" }
func (*Select) Name() string        { return "select" }
func (*Drop) Name() string          { return "drop" }
func (*Extend) Name() string        { return "extend" }
func (*RenameColumns) Name() string { return "rename" }
func (*Filter) Name() string        { return "filter" }
func (*SumBy) Name() string         { return "sum-by" }
func (*AggBy) Name() string         { return "agg-by" }
func (*CountBy) Name() string       { return "count-by" }
func (*Distinct) Name() string      { return "distinct" }
func (*Sort) Name() string          { return "sort" }
func (*Top) Name() string           { return "top" }
func (*Head) Name() string          { return "head" }
func (*Merge) Name() string         { return "merge" }
func (*Shuffle) Name() string       { return "shuffle" }
func (*Partition) Name() string     { return "partition" }
func (*Write) Name() string         { return "write" }
func (*ToCSV) Name() string         { return "to-csv" }
func (*Show) Name() string          { return "show" }

// PerBatch says s maps each batch on its own, in any order: a fan-out
// runs it in the map tasks.
func PerBatch(s Stage) bool {
	switch s := s.(type) {
	case *Select, *Drop, *RenameColumns, *Filter, *Let, *Extend:
		return true
	case *Join:
		// The others send the right rows that matched nothing once, at
		// the end.
		return s.How != "right" && s.How != "full"
	}
	return false
}

// GroupKeys are the key columns of an aggregation (sum-by, agg-by,
// count-by), whose groups come out in key order; ok is false for other
// stages.
func GroupKeys(s Stage) (keys []string, ok bool) {
	switch a := s.(type) {
	case *SumBy:
		return a.Keys, true
	case *AggBy:
		return a.Keys, true
	case *Agg:
		return nil, true
	case *CountBy:
		return a.Keys, true
	}
	return nil, false
}

// Distributive says s gives over a stream what it gives over the
// concatenation, in order, of its outputs over consecutive pieces of that
// stream (head, top): a fan-out runs it on every piece and once more over
// their outputs.
func Distributive(s Stage) bool {
	switch s.(type) {
	case *Head, *Top, *Distinct:
		// distinct: the first row of a key in the pieces' outputs, in
		// order, is its first row in the stream.
		return true
	}
	return false
}

func join(names []string) string { return strings.Join(names, ",") }

func keysString(keys []SortKey) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k.Column
		if k.Desc {
			parts[i] += ":desc"
		}
	}
	return strings.Join(parts, ",")
}

func (s *Scan) words() (flags, args []string) {
	var w []string
	add := func(flag, v string) { w = append(w, "--"+flag, v) }
	if len(s.Columns) > 0 {
		add("columns", join(s.Columns))
	}
	if s.Filter != "" {
		add("filter", s.Filter)
	}
	if len(s.Dict) > 0 {
		add("dict", join(s.Dict))
	}
	if s.BatchRows != DefaultBatchRows {
		add("batch-rows", strconv.Itoa(s.BatchRows))
	}
	if s.Memory != 0 {
		add("memory", size.Format(s.Memory))
	}
	if s.Concurrency != 0 {
		add("concurrency", strconv.Itoa(s.Concurrency))
	}
	if s.Arrival {
		add("order", "arrival")
	}
	if s.Sim != "" {
		add("sim", s.Sim)
	}
	if s.Stats {
		w = append(w, "--stats")
	}
	if s.Int96Unit != "ns" {
		add("int96-unit", s.Int96Unit)
	}
	if s.Snapshot != 0 {
		add("snapshot", strconv.FormatInt(s.Snapshot, 10))
	}
	if s.AsOf != "" {
		add("as-of", s.AsOf)
	}
	if s.Catalog != "" {
		add("catalog", s.Catalog)
	}
	return w, s.URLs
}

func (s *FromCSV) words() (flags, args []string) {
	if len(s.Types) > 0 {
		var t []string
		for name, typ := range s.Types {
			t = append(t, name+"="+typ)
		}
		slices.Sort(t)
		flags = []string{"--types", join(t)}
	}
	return flags, s.URLs
}

func (s *Select) words() (flags, args []string) {
	if s.Exprs == nil {
		return nil, []string{join(s.Columns)}
	}
	return nil, []string{itemsText(s.Columns, s.Exprs)}
}
func (s *Extend) words() (flags, args []string) { return nil, []string{itemsText(s.Columns, s.Exprs)} }
func (s *Drop) words() (flags, args []string)   { return nil, []string{join(s.Columns)} }
func (s *RenameColumns) words() (flags, args []string) {
	parts := make([]string, len(s.Pairs))
	for i, p := range s.Pairs {
		parts[i] = p.Old + "=" + p.New
	}
	return nil, []string{join(parts)}
}
func (s *Filter) words() (flags, args []string)  { return nil, []string{s.Expr} }
func (s *SumBy) words() (flags, args []string)   { return nil, []string{join(s.Keys), join(s.Values)} }
func (s *AggBy) words() (flags, args []string)   { return nil, []string{join(s.Keys), s.Aggs} }
func (s *CountBy) words() (flags, args []string) { return nil, []string{join(s.Keys)} }
func (s *Sort) words() (flags, args []string) {
	flags = []string{"--by", keysString(s.Keys)}
	if s.Memory != 0 {
		flags = append(flags, "--memory", size.Format(s.Memory))
	}
	if s.TempDir != "" {
		flags = append(flags, "--tmp", s.TempDir)
	}
	return flags, nil
}
func (s *Top) words() (flags, args []string) {
	return []string{"--by", keysString(s.Keys)}, []string{strconv.FormatInt(s.N, 10)}
}
func (s *Distinct) words() (flags, args []string) {
	if len(s.On) > 0 {
		flags = []string{"--on", join(s.On)}
	}
	return flags, nil
}
func (s *Head) words() (flags, args []string) { return nil, []string{strconv.FormatInt(s.N, 10)} }
func (s *Merge) words() (flags, args []string) {
	return []string{"--by", keysString(s.Keys)}, s.URLs
}
func (s *Shuffle) words() (flags, args []string) {
	return []string{"--by", join(s.Keys), "--to", strconv.Itoa(s.Parts)}, nil
}
func (s *Partition) words() (flags, args []string) {
	return []string{"--by", join(s.Keys), "--out", s.Out, "--format", s.Format}, []string{strconv.Itoa(s.N)}
}
func (s *Write) words() (flags, args []string) {
	if s.Format != "" {
		flags = append(flags, "--format", s.Format)
	}
	if s.Compression != "snappy" {
		flags = append(flags, "--compression", s.Compression)
	}
	if s.RowGroupRows != format.ParquetRowGroupRows {
		flags = append(flags, "--row-group-rows", strconv.FormatInt(s.RowGroupRows, 10))
	}
	return flags, []string{s.URL}
}
func (s *ToCSV) words() (flags, args []string) { return nil, nil }
func (s *Show) words() (flags, args []string) {
	if s.Rows != 100 {
		flags = []string{"--rows", strconv.Itoa(s.Rows)}
	}
	return flags, s.URLs
}

// names checks a list of column names.
func names(what string, list []string) error {
	if len(list) == 0 {
		return invalidf("%s: no column names", what)
	}
	for _, n := range list {
		if strings.TrimSpace(n) == "" {
			return invalidf("%s: an empty column name", what)
		}
	}
	return nil
}

func sortKeysCheck(what string, keys []SortKey) error {
	if len(keys) == 0 {
		return invalidf("%s: --by is required", what)
	}
	for _, k := range keys {
		if strings.TrimSpace(k.Column) == "" {
			return invalidf("%s --by: an empty column name", what)
		}
	}
	return nil
}

func urls(what string, list []string, need bool) error {
	if need && len(list) == 0 {
		return invalidf("%s: no URL given", what)
	}
	for _, u := range list {
		if u == "" {
			return invalidf("%s: an empty URL", what)
		}
	}
	return nil
}

func (s *Scan) check() error {
	switch {
	case s.BatchRows <= 0:
		return invalidf("scan --batch-rows %d: want at least 1", s.BatchRows)
	case s.Concurrency < 0:
		return invalidf("scan --concurrency %d: want 0 (the number of cores) or more", s.Concurrency)
	case s.Memory != 0 && s.Memory < 1<<20:
		return invalidf("scan --memory %d: want at least 1MiB", s.Memory)
	}
	switch s.Int96Unit {
	case "ns", "us", "ms", "s":
	default:
		return invalidf("scan --int96-unit %q: want ns, us, ms or s", s.Int96Unit)
	}
	if s.AsOf != "" {
		if _, err := s.AsOfTime(); err != nil {
			return invalidf("scan --as-of %q: want a time such as 2026-12-01T10:00:00Z or 2026-12-01", s.AsOf)
		}
		if s.Snapshot != 0 {
			return invalidf("scan --snapshot and --as-of: give one")
		}
	}
	if s.Columns != nil {
		if err := names("scan --columns", s.Columns); err != nil {
			return err
		}
	}
	if s.Dict != nil {
		if err := names("scan --dict", s.Dict); err != nil {
			return err
		}
	}
	if s.Filter != "" {
		if _, err := expr.Parse(s.Filter); err != nil {
			return invalidf("scan --filter: %v", err)
		}
	}
	if s.Sim != "" {
		if _, err := sim.Parse(s.Sim); err != nil {
			return invalidf("scan --sim: %v", err)
		}
	}
	return urls("scan", s.URLs, true)
}

func (s *FromCSV) check() error {
	for name, typ := range s.Types {
		switch typ {
		case "int64", "float64", "bool", "date32", "timestamp", "string":
		default:
			return invalidf("from-csv --types %s=%s: want int64, float64, bool, date32, timestamp or string", name, typ)
		}
	}
	return urls("from-csv", s.URLs, false)
}

func (s *Select) check() error {
	if err := names("select", s.Columns); err != nil {
		return err
	}
	if s.Exprs == nil {
		return nil
	}
	return exprs("select", s.Columns, s.Exprs, false)
}
func (s *Extend) check() error {
	if err := names("extend", s.Columns); err != nil {
		return err
	}
	return exprs("extend", s.Columns, s.Exprs, true)
}
func (s *Drop) check() error { return names("drop", s.Columns) }
func (s *RenameColumns) check() error {
	if len(s.Pairs) == 0 {
		return invalidf("rename: nothing to rename")
	}
	for _, p := range s.Pairs {
		if p.Old == "" || p.New == "" {
			return invalidf("rename: %q: want OLD=NEW", p.Old+"="+p.New)
		}
	}
	return nil
}
func (s *Filter) check() error {
	if _, err := expr.Parse(s.Expr); err != nil {
		return invalidf("filter: %v", err)
	}
	return nil
}
func (s *SumBy) check() error {
	if err := names("sum-by", s.Keys); err != nil {
		return err
	}
	return names("sum-by", s.Values)
}
func (s *AggBy) check() error {
	if err := names("agg-by", s.Keys); err != nil {
		return err
	}
	if _, err := expr.ParseList(AggText(s.Aggs)); err != nil {
		return invalidf("agg-by: %v", err)
	}
	return nil
}
func (s *CountBy) check() error { return names("count-by", s.Keys) }
func (s *Sort) check() error {
	if s.Memory != 0 && s.Memory < 1<<20 {
		return invalidf("sort --memory %d: want at least 1MiB", s.Memory)
	}
	return sortKeysCheck("sort", s.Keys)
}
func (s *Top) check() error {
	if s.N < 0 {
		return invalidf("top: %d is not a row count", s.N)
	}
	return sortKeysCheck("top", s.Keys)
}
func (s *Distinct) check() error {
	if s.On == nil {
		return nil
	}
	return names("distinct --on", s.On)
}
func (s *Head) check() error {
	if s.N < 0 {
		return invalidf("head: %d is not a row count", s.N)
	}
	return nil
}
func (s *Merge) check() error {
	if err := sortKeysCheck("merge", s.Keys); err != nil {
		return err
	}
	return urls("merge", s.URLs, false)
}
func (s *Shuffle) check() error {
	if s.Parts < 1 || s.Parts > MaxParts {
		return invalidf("shuffle: the number of parts (--to) must be 1..%d, got %d", MaxParts, s.Parts)
	}
	return names("shuffle --by", s.Keys)
}
func (s *Partition) check() error {
	switch {
	case s.N < 1:
		return invalidf("partition: %d is not a number of partitions", s.N)
	case s.Out == "":
		return invalidf("partition: --by and --out are required")
	}
	if _, err := format.Parse(s.Format); err != nil {
		return invalidf("partition --format: %v", err)
	}
	return names("partition --by", s.Keys)
}
func (s *Write) check() error {
	if s.URL == "" {
		return invalidf("write: no URL given")
	}
	if s.Format != "" {
		if _, err := format.Parse(s.Format); err != nil {
			return invalidf("write --format: %v", err)
		}
	}
	if s.RowGroupRows <= 0 {
		return invalidf("write --row-group-rows %d: want at least 1", s.RowGroupRows)
	}
	if err := format.CheckCompression(s.Compression); err != nil {
		return invalidf("write --compression: %v", err)
	}
	return nil
}
func (s *ToCSV) check() error { return nil }
func (s *Show) check() error {
	if s.Rows < 0 {
		return invalidf("show --rows %d: want 0 (all) or more", s.Rows)
	}
	return urls("show", s.URLs, false)
}

// list splits comma-separated names across arguments.
func list(what string, args ...string) ([]string, error) {
	var out []string
	for _, a := range args {
		for _, s := range strings.Split(a, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				return nil, invalidf("%s: an empty name in %q", what, a)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// sortKeys parses KEYS for --by: names, each optionally name:desc or
// name:asc; desc reverses those without a suffix.
func sortKeys(stage, by string, desc bool) ([]SortKey, error) {
	if by == "" {
		return nil, invalidf("%s: --by is required", stage)
	}
	cols, err := list(stage+" --by", by)
	if err != nil {
		return nil, err
	}
	keys := make([]SortKey, len(cols))
	for i, n := range cols {
		k := SortKey{Column: n, Desc: desc}
		if c, dir, ok := strings.Cut(n, ":"); ok && (dir == "desc" || dir == "asc") {
			k = SortKey{Column: c, Desc: dir == "desc"}
		}
		keys[i] = k
	}
	return keys, nil
}

func rowCount(stage, s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, invalidf("%s: %q is not a row count", stage, s)
	}
	return n, nil
}

// sizeValue is a pflag value of a byte count written as 16MiB.
type sizeValue struct{ n *int64 }

func (v sizeValue) String() string {
	if v.n == nil || *v.n == 0 {
		return ""
	}
	return size.Format(*v.n)
}
func (v sizeValue) Set(s string) error {
	n, err := size.Parse(s)
	if err != nil {
		return err
	}
	if n < 1<<20 {
		return errors.New("want at least 1MiB")
	}
	*v.n = n
	return nil
}
func (sizeValue) Type() string { return "size" }

// checked returns s when its arguments are in their domain.
func checked(s Stage) (Stage, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s, nil
}

// BindScan declares a scan's flags on fs, bound to s, with their
// defaults set; the scan command of the CLI shares them.
func BindScan(fs *pflag.FlagSet, s *Scan) {
	fs.Func("columns", "comma-separated columns to read, in that order (default: all)", func(v string) (err error) {
		s.Columns = nil
		if strings.TrimSpace(v) != "" {
			s.Columns, err = list("--columns", v)
		}
		return err
	})
	fs.StringVar(&s.Filter, "filter", "", `keep the rows for which an expression is true (see sluice filter --help), e.g. "l_shipdate <= '1998-09-02' and l_shipmode in ('AIR', 'RAIL')"`)
	fs.Func("dict", "comma-separated string columns to read as dictionary arrays (for few distinct values: less to decode, pipe and group; in sluice run, the string keys of an aggregation after the scan are read so without it)", func(v string) (err error) {
		s.Dict, err = list("--dict", v)
		return err
	})
	fs.IntVar(&s.BatchRows, "batch-rows", DefaultBatchRows, "most rows in a record batch")
	fs.Var(sizeValue{&s.Memory}, "memory", "memory the scan holds: bytes fetched ahead of decoding and decoding's buffers (sluice scan stays within about this + 64 MiB, writing Parquet aside; default 512MiB, in sluice run over a local store what the row groups decoded at once need)")
	fs.IntVar(&s.Concurrency, "concurrency", 0, "row groups decoded at once (default: the number of cores)")
	fs.Func("order", "batch order: arrival (as decoded) or dataset (default: dataset)", func(v string) error {
		switch v {
		case "arrival", "dataset":
			s.Arrival = v == "arrival"
			return nil
		}
		return errors.New("want arrival or dataset")
	})
	fs.StringVar(&s.Sim, "sim", "", "read through a modelled link, and write -o's object through its latency and bandwidth (sluice help sim): a profile (s3) or ttfb=15ms,stream=90MiB/s,...")
	fs.BoolVar(&s.Stats, "stats", false, "print scan and fetch statistics to stderr at the end")
	fs.StringVar(&s.Int96Unit, "int96-unit", "ns", "unit of INT96 timestamps (Spark, Impala): ns holds 1677-2262; us, ms or s hold the dates beyond")
	fs.Int64Var(&s.Snapshot, "snapshot", 0, "an Iceberg table's snapshot to read, by id (default: the current one)")
	fs.StringVar(&s.AsOf, "as-of", "", "read the Iceberg table's snapshot current at this time (RFC 3339, or a date: UTC midnight)")
	fs.StringVar(&s.Catalog, "catalog", "", "an Iceberg REST catalog's URI (http[s]://HOST/PATH[?warehouse=W]); URLs are then its tables, NAMESPACE.TABLE (token: SLUICE_ICEBERG_TOKEN, or SLUICE_ICEBERG_CREDENTIAL=ID:SECRET)")
}

// AsOfTime is AsOf as a time: RFC 3339, or a date (midnight UTC).
func (s *Scan) AsOfTime() (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s.AsOf); err == nil {
		return t, nil
	}
	return time.Parse(time.DateOnly, s.AsOf)
}

// itemsText writes the items of select or extend as they parse back:
// "a, x * 2 as y".
func itemsText(cols, exprs []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		if exprs[i] == "" {
			parts[i] = expr.QuoteName(c)
		} else {
			parts[i] = exprs[i] + " as " + expr.QuoteName(c)
		}
	}
	return strings.Join(parts, ", ")
}

// exprs checks the expressions of select or extend (all of them named
// when every is true).
func exprs(stage string, cols, exprs []string, every bool) error {
	if len(exprs) != len(cols) {
		return invalidf("%s: %d expressions for %d columns", stage, len(exprs), len(cols))
	}
	for i, e := range exprs {
		if e == "" {
			if every {
				return invalidf("%s: no expression for column %q", stage, cols[i])
			}
			continue
		}
		if _, err := expr.Parse(e); err != nil {
			return invalidf("%s: %v", stage, err)
		}
	}
	return nil
}

// items parses the arguments of select or extend: column names, or
// expressions each followed by "as NAME" (which extend requires). A
// select of names alone gives exprs nil; names that are no expression
// ("trip distance", "pickup-date") are read as select always read them.
func items(stage string, args []string, named bool) (cols, exprs []string, err error) {
	text := strings.Join(args, " ")
	parsed, perr := expr.ParseList(text)
	if !named && (perr != nil || slices.ContainsFunc(parsed, unnamedExpr)) && plainNames(args) {
		cols, err := list(stage, args...)
		return cols, nil, err
	}
	if perr != nil {
		return nil, nil, invalidf("%s: %v", stage, perr)
	}
	computed := false
	for _, it := range parsed {
		if it.As == "" {
			c, ok := it.Node.(*expr.Column)
			if !ok || named {
				return nil, nil, invalidf("%s: %q needs a name: write %s as NAME", stage, it.Text, it.Text)
			}
			cols, exprs = append(cols, c.Name), append(exprs, "")
			continue
		}
		computed = true
		cols, exprs = append(cols, it.As), append(exprs, it.Text)
	}
	if !computed {
		exprs = nil
	}
	return cols, exprs, nil
}

func unnamedExpr(it expr.Item) bool {
	_, col := it.Node.(*expr.Column)
	return it.As == "" && !col
}

// plainNames says the comma-separated words of args read as column names
// rather than as an expression: no operator but a hyphen, and that only
// in a name without spaces (pickup-date, not a - b).
func plainNames(args []string) bool {
	for _, a := range args {
		for _, s := range strings.Split(a, ",") {
			s = strings.TrimSpace(s)
			if strings.ContainsAny(s, "()+*/%|'\"<>=!`") || strings.Contains(s, "-") && strings.ContainsAny(s, " \t") {
				return false
			}
		}
	}
	return true
}
