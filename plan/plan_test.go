package plan

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

var pipelines = []string{
	"scan ./taxi --columns pickup_date,trip_distance | sum-by pickup_date trip_distance | top 9 --by trip_distance --desc | show",
	`scan ./lineitem | filter "l_shipdate <= date '1998-09-02'" | agg-by l_returnflag,l_linestatus 'sum(l_quantity), mean(l_discount), count()' | show --rows 5`,
	"scan s3://b/li/ ./x.parquet --dict l_returnflag --batch-rows 1000 --memory 64MiB --concurrency 3 --order arrival --sim s3 --stats --int96-unit us --filter 'a > 1' | head 10",
	"scan ./t | select a,b | drop c | rename a=x,b=y | count-by x | to-csv",
	"scan ./t | sort --by a,b:desc --memory 1MiB --tmp /tmp/s | write --format parquet --compression zstd --row-group-rows 100 ./o.bin",
	"scan ./t | shuffle --by k --to 8 | sort --by k --desc | head 3",
	"from-csv --types zip=string,age=int64 a.csv b.csv | partition 4 --by user --out s3://b/x/ --format parquet",
	"merge --by k ./a.arrow ./b/ | merge --by k:desc ./c.arrow | write x.arrows",
	`scan 'odd dir/with space' | filter "s = 'it''s' and t like '%|%'" | write 'out|put.csv'`,
	"from-csv",
	`scan ./t | distinct | distinct --on a,b | agg-by k 'count(distinct x), median(y), quantile(y, 0.9) as p90, stddev(y)' | show`,
	`scan ./li | select 'l_orderkey, "odd name", l_extendedprice * (1 - l_discount) as revenue, k as "new name"' | extend "case when revenue > 10 then 'big' else upper(k) end as size, cast(d as varchar) || '!' as s" | to-csv`,
	`scan ./t | select 'trip distance' | extend "date_trunc('month', d) + interval '1' month as m" | head 1`,
	`scan ./li | join (scan ./o --filter "o_orderdate < date '1995-03-15'" | select o_orderkey,o_orderdate) --on l_orderkey=o_orderkey | count-by o_orderdate`,
	"scan ./li | join ./part --on l_partkey=p_partkey,k --how left --where 'l_suppkey <> s_suppkey' --prefix r_ --memory 64MiB | join (scan ./s | join (scan ./n) --on n --how anti) --on s --how semi | show",
	`scan ./t | exec -- awk -F, '$2 > 1 { print }' | exec --in csv --out jsonl --schema a=int64,b=string --timeout 1m30s --side-effects -- python3 -u s.py --flag | exec sort -r | show`,
}

func TestRoundTrip(t *testing.T) {
	for _, text := range pipelines {
		p, err := Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		printed := p.String()
		q, err := Parse(printed)
		if err != nil {
			t.Fatalf("%s printed as %s: %v", text, printed, err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Errorf("%s printed as %s reads back differently:\n%#v\n%#v", text, printed, p.Stages, q.Stages)
		}
		if again := q.String(); again != printed {
			t.Errorf("printed twice differently: %s / %s", printed, again)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Decode(b, false)
		if err != nil {
			t.Fatalf("%s: %s: %v", text, b, err)
		}
		if !reflect.DeepEqual(p, r) {
			t.Errorf("%s: JSON %s reads back differently:\n%#v\n%#v", text, b, p.Stages, r.Stages)
		}
	}
}

func TestParseTypes(t *testing.T) {
	p, err := Parse("scan ./x --columns a,b --memory 64MiB | sort --by a,b:desc --desc | top 3 --by a:asc | shuffle --by k --to 4 | head 7")
	if err != nil {
		t.Fatal(err)
	}
	want := []Stage{
		&Scan{URLs: []string{"./x"}, Columns: []string{"a", "b"}, Memory: 64 << 20, BatchRows: DefaultBatchRows, Int96Unit: "ns"},
		&Sort{Keys: []SortKey{{"a", true}, {"b", true}}},
		&Top{N: 3, Keys: []SortKey{{"a", false}}},
		&Shuffle{Keys: []string{"k"}, Parts: 4},
		&Head{N: 7},
	}
	if !reflect.DeepEqual(p.Stages, want) {
		t.Fatalf("got %#v", p.Stages)
	}
	if !PerBatch(&Filter{}) || !PerBatch(&Extend{}) || PerBatch(&Head{}) || !Distributive(&Top{}) || Distributive(&Sort{}) {
		t.Error("stage properties")
	}
	if k, ok := GroupKeys(&CountBy{Keys: []string{"x"}}); !ok || k[0] != "x" {
		t.Error("GroupKeys")
	}
}

func TestParseErrors(t *testing.T) {
	for text, want := range map[string]string{
		"":                                    "no stages given",
		"scan x |":                            "empty stage at character 9",
		"scan 'x":                             "unterminated ' quote at character 6",
		"nope x":                              `unknown stage "nope"`,
		"head 3":                              "the first stage must be a source",
		"scan x | scan y":                     "scan reads data: it must be the first stage",
		"scan x | to-csv | head 1":            "to-csv writes no stream: it must be the last stage",
		"scan x | head -1":                    "unknown shorthand flag",
		"scan x | head many":                  `head: "many" is not a row count`,
		"scan x | head":                       "head takes at least 1 argument(s), got 0",
		"scan x | head 1 2":                   "head takes 1 argument(s), got 2",
		"scan x | sort":                       "sort: --by is required",
		"scan x | sort --by a --memory 1KiB":  "want at least 1MiB",
		"scan x | filter 'a >'":               "filter:",
		"scan x | shuffle --by k":             "shuffle: --by KEYS and --to R (at least 1) are required",
		"scan x | shuffle --by k --to 100001": "must be 1..100000",
		"scan x | show y":                     "show takes no file inside a pipeline",
		"merge --by k":                        "merge: name the sorted inputs",
		"scan x --order sideways":             "want arrival or dataset",
		"scan x -o y":                         "end it with write",
		"scan x | select a,,b":                "an empty name",
		"scan x | rename a":                   `rename: "a": want OLD=NEW`,
		"scan x | write y --compression no":   "write --compression",
		"scan x | agg-by k 'sum('":            "agg-by:",
		"scan x --sim bogus=1":                "scan --sim",
		"scan x | distinct --on ''":           "distinct --on: an empty name",
		"scan x | distinct y":                 "distinct",
		"scan x | agg-by k 'count(distinct'":  "agg-by:",
		"scan x | exec":                       "exec: no program given",
		"scan x | exec --in xml -- cat":       `exec --in "xml": want arrows, csv, jsonl`,
		"scan x | exec --out parquet -- cat":  `exec --out "parquet"`,
		"scan x | exec --schema a -- cat":     `exec --schema "a": want name=type`,
		"scan x | exec --schema a=int -- cat": "exec --schema a=int: want a type of",
		"scan x | exec --timeout soon -- cat": "exec: invalid argument",
	} {
		_, err := Parse(text)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want an invalid-pipeline error with %q", text, err, want)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	for b, want := range map[string]string{
		`{"version":2,"stages":[{"stage":"scan","urls":["x"]}]}`:                                                          "plan version 2: this sluice reads version 1",
		`{"version":1,"stages":[{"stage":"scan","urls":["x"],"batch_rows":1,"int96_unit":"ns"},{"stage":"frobnicate"}]}`:  `unknown stage "frobnicate"`,
		`{"version":1,"stages":[{"stage":"head","n":1}]}`:                                                                 "the first stage must be a source",
		`{"version":1,"stages":[{"stage":"scan","urls":["x"],"batch_rows":1,"int96_unit":"ns"},{"stage":"head","n":-1}]}`: "not a row count",
		`{"version":1,"stages":[{"stage":"scan","urls":["x"],"batch_rows":1,"int96_unit":"ns","extra":1}]}`:               `unknown field "extra"`,
		`{"version":1,"stages":[]}`:  "no stages given",
		`{"version":1,"stages":[3]}`: "stage 1 is not an object",
		`{"version":1} {}`:           "data after the value",
		`[]`:                         "plan:",
	} {
		_, err := Decode([]byte(b), false)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Decode(%s) = %v, want %q", b, err, want)
		}
	}
	// A stage command's plan reads a stream it is given: no source.
	if _, err := Decode([]byte(`{"version":1,"stages":[{"stage":"head","n":1}]}`), true); err != nil {
		t.Error(err)
	}
}

func FuzzParse(f *testing.F) {
	withWrap(f) // a stage with sub-pipelines
	for _, p := range pipelines {
		f.Add(p)
	}
	f.Add(`scan x | wrap --n 3 (scan 'y z' --filter "a = ')'" | wrap (scan w | head 1)) | show`)
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse(text)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: %v is not an invalid-pipeline error", text, err)
			}
			return
		}
		q, err := Parse(p.String())
		if err != nil {
			t.Fatalf("%q printed as %q: %v", text, p.String(), err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("%q printed as %q reads back differently", text, p.String())
		}
	})
}

func FuzzDecode(f *testing.F) {
	for _, text := range pipelines {
		p, err := Parse(text)
		if err != nil {
			f.Fatal(err)
		}
		b, _ := json.Marshal(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b, false)
		if err != nil {
			return
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Decode(out, false)
		if err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("%s re-encoded as %s: %v", b, out, err)
		}
	})
}

func TestSplit(t *testing.T) {
	got, err := split(`scan a\ b --columns "x,y" | filter "s = 'a|b' and t = \"q\"" |show`)
	if err != nil {
		t.Fatal(err)
	}
	want := []rawStage{{words: []string{"scan", "a b", "--columns", "x,y"}}, {words: []string{"filter", `s = 'a|b' and t = "q"`}}, {words: []string{"show"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"", "scan x ||", "| show", "scan 'x"} {
		if _, err := split(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// wrap stands for a stage with a sub-pipeline (a join's other side): the
// parser, printer and JSON form carry sub-pipelines for any such stage.
type wrap struct {
	Other *Plan `json:"other"`
	N     int64 `json:"n,omitempty"`
}

func (*wrap) Name() string { return "wrap" }
func (w *wrap) words() (flags, args []string) {
	if w.N != 0 {
		flags = []string{"--n", strconv.FormatInt(w.N, 10)}
	}
	return flags, nil
}
func (w *wrap) check() error {
	if w.Other == nil {
		return invalidf("wrap: no sub-pipeline")
	}
	return nil
}
func (w *wrap) subPlans() []*Plan { return []*Plan{w.Other} }

func withWrap(t testing.TB) {
	saved := defs
	defs = append(append([]*Def(nil), defs...), &Def{
		Name: "wrap", Kind: KindTransform,
		Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
			w := &wrap{}
			fs.Int64Var(&w.N, "n", 0, "a number")
			return func([]string) (Stage, error) { return w, nil }
		},
		Subs: func(st Stage, subs []*Plan) (Stage, error) {
			if len(subs) != 1 {
				return nil, invalidf("wrap takes one sub-pipeline, got %d", len(subs))
			}
			st.(*wrap).Other = subs[0]
			return st, nil
		},
		zero: func() Stage { return &wrap{} },
	})
	t.Cleanup(func() { defs = saved })
}

func TestSubPipelines(t *testing.T) {
	withWrap(t)
	text := `scan x | wrap --n 3 (scan 'y z' --filter "a = ')'" | wrap (scan w | head 1) | filter 'b > 1') | show`
	p, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	w, ok := p.Stages[1].(*wrap)
	if !ok || w.N != 3 || len(w.Other.Stages) != 3 || w.Other.Stages[0].(*Scan).Filter != "a = ')'" {
		t.Fatalf("parsed %#v", p.Stages[1])
	}
	inner := w.Other.Stages[1].(*wrap).Other
	if h, ok := inner.Stages[1].(*Head); !ok || h.N != 1 {
		t.Fatalf("the sub-pipeline's own sub-pipeline: %#v", inner.Stages)
	}
	q, err := Parse(p.String())
	if err != nil || !reflect.DeepEqual(p, q) {
		t.Fatalf("printed as %s: %v", p.String(), err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Decode(b, false)
	if err != nil || !reflect.DeepEqual(p, r) {
		t.Fatalf("JSON %s: %v", b, err)
	}
	for text, want := range map[string]string{
		"scan x | wrap (scan y":           "unclosed ( at character 15",
		"scan x | wrap (head 1)":          "the first stage must be a source",
		"scan x | wrap":                   "wrap: no sub-pipeline",
		"scan x | wrap (scan y) (scan z)": "wrap takes one sub-pipeline, got 2",
		"scan x | wrap (scan y | nope)":   `unknown stage "nope"`,
		`scan x | wrap (scan y \)`:        "unclosed (",
		"scan x | filter (a > 1)":         "", // parentheses are words of stages without sub-pipelines
	} {
		_, err := Parse(text)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("Parse(%q) = %v, want %q", text, err, want)
		}
	}
	deep := "scan x"
	for range maxDepth + 2 {
		deep = "scan x | wrap (" + deep + ")"
	}
	if _, err := Parse(deep); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("too deep: %v", err)
	}
	if _, err := Decode([]byte(`{"version":1,"stages":[{"stage":"scan","urls":["x"],"batch_rows":1,"int96_unit":"ns"},{"stage":"wrap","other":{"version":1,"stages":[{"stage":"head","n":1}]}}]}`), false); err == nil || !strings.Contains(err.Error(), "wrap: the first stage must be a source") {
		t.Errorf("a JSON sub-pipeline without a source: %v", err)
	}
}

func TestJoinArguments(t *testing.T) {
	p, err := Parse("scan ./li | join ./o --on a=b,k --how full")
	if err != nil {
		t.Fatal(err)
	}
	j := p.Stages[1].(*Join)
	if j.How != "full" || !reflect.DeepEqual(j.Left, []string{"a", "k"}) || !reflect.DeepEqual(j.Right, []string{"b", "k"}) {
		t.Fatalf("parsed %#v", j)
	}
	if sc, ok := j.Other.Stages[0].(*Scan); !ok || !reflect.DeepEqual(sc.URLs, []string{"./o"}) || sc.BatchRows != DefaultBatchRows {
		t.Fatalf("a URL is read with scan and its defaults: %#v", j.Other.Stages[0])
	}
	// As a command, the other side is one argument: pipeline text or a URL.
	for arg, first := range map[string]string{
		"scan ./o | filter 'x > 1'":   "scan",
		"(scan ./o | head 3)":         "scan",
		"s3://b/orders/":              "scan",
		"merge --by k ./a.arrow ./b/": "merge",
	} {
		st, err := joinDef.Build([]string{arg, "--on", "k"})
		if err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		if got := st.(*Join).Other.Stages[0].Name(); got != first {
			t.Errorf("%s: the other side starts with %s", arg, got)
		}
	}
	for text, want := range map[string]string{
		"scan x | join --on k":                        "join: no other side",
		"scan x | join (scan y)":                      "--on KEYS is required",
		"scan x | join (scan y) --on k --how up":      `--how "up": one of inner`,
		"scan x | join (scan y) ./z --on k":           "one other side",
		"scan x | join (scan y) --on a=":              "write KEY or LEFT=RIGHT",
		"scan x | join (scan y) --on k --where 'a >'": "join --where",
		"scan x | join (head 1) --on k":               "first stage must be a source",
	} {
		if _, err := Parse(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", text, err, want)
		}
	}
}

func TestSelectExtendItems(t *testing.T) {
	p, err := Parse(`scan ./t | select a,b | select 'a, b * 2 as c' | extend "upper(k) as k, 1 as one" | select pickup-date,'trip distance' case`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Stage{
		&Select{Columns: []string{"a", "b"}},
		&Select{Columns: []string{"a", "c"}, Exprs: []string{"", "b * 2"}},
		&Extend{Columns: []string{"k", "one"}, Exprs: []string{"upper(k)", "1"}},
		&Select{Columns: []string{"pickup-date", "trip distance", "case"}},
	}
	if !reflect.DeepEqual(p.Stages[1:], want) {
		t.Errorf("got %#v", p.Stages[1:])
	}
	for text, msg := range map[string]string{
		"scan ./t | select a +":           `select: at position 4 of "a +": expected a value, found the end`,
		"scan ./t | select 'a, b * 2'":    `select: "b * 2" needs a name: write b * 2 as NAME`,
		"scan ./t | extend a":             `extend: "a" needs a name: write a as NAME`,
		"scan ./t | extend 'nope(1 as x'": `extend: at position 8 of "nope(1 as x": expected , or ) in the arguments of nope, found "as"`,
		"scan ./t | extend 'x + as y'":    `extend: at position 5 of "x + as y": expected a value, found the keyword "as" (quote a column with that name: "as")`,
	} {
		_, err := Parse(text)
		if err == nil || !strings.Contains(err.Error(), msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %s", text, err, msg)
		}
	}
}

func TestTakesInput(t *testing.T) {
	for _, c := range []struct {
		words []string
		piped bool
		want  bool
	}{
		{[]string{"filter", "a > 1"}, false, true},
		{[]string{"to-csv"}, true, true},
		{[]string{"show"}, false, true},
		{[]string{"show", "q.arrow"}, true, false}, // reads its files
		{[]string{"merge", "--by", "k", "a.arrow"}, true, true},
		{[]string{"merge", "--by", "k", "a.arrow"}, false, false},
		{[]string{"from-csv", "a.csv"}, true, false},
	} {
		d := Lookup(c.words[0])
		st, err := d.Build(c.words[1:])
		if err != nil {
			t.Fatalf("%v: %v", c.words, err)
		}
		if got := d.TakesInput(st, c.piped); got != c.want {
			t.Errorf("%v, piped %v: TakesInput = %v, want %v", c.words, c.piped, got, c.want)
		}
	}
}

func TestExecFromTheNetworkIsRefused(t *testing.T) {
	for text, has := range map[string]bool{
		"scan x | head 1":                                    false,
		"scan x | exec -- cat | show":                        true,
		"scan x | join (scan y | exec -- cat) --on k | show": true,
	} {
		p, err := Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		err = RefuseExec(p, "a Flight request")
		if has != (err != nil) || has && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "exec: refused in a pipeline from a Flight request")) {
			t.Errorf("%s: %v", text, err)
		}
	}
	st, _ := Lookup("exec").Build([]string{"--side-effects", "--", "cat"})
	if !SideEffects(st) || !PerPiece(st) || PerBatch(st) {
		t.Errorf("exec --side-effects: %#v", st)
	}
}
