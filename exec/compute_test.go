package exec

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/expr"
)

// TestSelectAndExtend: computed columns with select and extend, their
// types and nulls, over two batches, each row a batch's own.
func TestSelectAndExtend(t *testing.T) {
	mem := checkedMem(t)
	b1 := batch(t, mem, kvSchema, []any{"apple", 1, 1.5}, []any{"banana", 2, nil})
	defer b1.Release()
	b2 := batch(t, mem, kvSchema, []any{nil, 3, 2.0}, []any{"apricot", nil, -0.5})
	defer b2.Release()
	for _, c := range []struct {
		stage  Stage
		fields string
		want   []string
	}{
		{selectExprs(Computed{Name: "n"}, Computed{Name: "r", Expr: "x * (1 - n)"}, Computed{Name: "kk", Expr: "k"}),
			"n:int64 r:float64 kk:utf8",
			[]string{"1 0 apple", "2 (null) banana", "3 -4 (null)", "(null) (null) apricot"}},
		{Extend(Computed{Name: "u", Expr: "upper(k) || '!'"}, Computed{Name: "n", Expr: "coalesce(n, 0) * 10"}),
			"k:utf8 n:int64 x:float64 u:utf8",
			[]string{"apple 10 1.5 APPLE!", "banana 20 (null) BANANA!", "(null) 30 2 (null)", "apricot 0 -0.5 APRICOT!"}},
		{Extend(Computed{Name: "c", Expr: "case when x > 1 then 'big' when x is null then 'none' end"},
			Computed{Name: "d", Expr: "date '2020-01-31' + interval '1' month"}, Computed{Name: "b", Expr: "n > 1"}),
			"k:utf8 n:int64 x:float64 c:utf8 d:date32 b:bool",
			[]string{"apple 1 1.5 big 2020-02-29 false", "banana 2 (null) none 2020-02-29 true", "(null) 3 2 big 2020-02-29 true", "apricot (null) -0.5 (null) 2020-02-29 (null)"}},
		{Extend(Computed{Name: "t", Expr: "cast('2020-01-02 03:04:05' as timestamp)"}),
			"k:utf8 n:int64 x:float64 t:timestamp[ns, tz=UTC]",
			[]string{"apple 1 1.5 2020-01-02T03:04:05Z", "banana 2 (null) 2020-01-02T03:04:05Z", "(null) 3 2 2020-01-02T03:04:05Z", "apricot (null) -0.5 2020-01-02T03:04:05Z"}},
	} {
		var fields []string
		if err := Validate(kvSchema, []Stage{c.stage}, Options{}); err != nil {
			t.Fatal(err)
		}
		got, err := collectRows(t, mem, FromBatches(kvSchema, b1, b2), c.stage, &schemaSpy{f: func(s *arrow.Schema) {
			for _, f := range s.Fields() {
				fields = append(fields, f.Name+":"+f.Type.String())
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if s := strings.Join(fields, " "); s != c.fields {
			t.Errorf("%s: fields %s, want %s", c.stage.Name(), s, c.fields)
		}
		if strings.Join(got, ";") != strings.Join(c.want, ";") {
			t.Errorf("%s: got\n%q\nwant\n%q", c.stage.Name(), got, c.want)
		}
	}
}

// schemaSpy passes batches on and tells f the schema it binds to.
type schemaSpy struct{ f func(*arrow.Schema) }

func (s *schemaSpy) Name() string { return "spy" }

func (s *schemaSpy) bind(e *env, in *arrow.Schema) (*bound, error) {
	s.f(in)
	return &bound{name: "spy", out: in, mapper: passOn{}}, nil
}

type passOn struct{}

func (passOn) mapBatch(_ context.Context, in arrow.RecordBatch) (arrow.RecordBatch, error) {
	in.Retain()
	return in, nil
}

// TestComputeBadInput: mistakes are one line with the stage and the
// position, ErrInvalid, found before any batch.
func TestComputeBadInput(t *testing.T) {
	for _, c := range []struct {
		stage Stage
		msg   string
	}{
		{Extend(Computed{Name: "y", Expr: "nope(n)"}), `extend: at position 1 of "nope(n)": unknown function nope`},
		{Extend(Computed{Name: "y", Expr: "upper(n)"}), `extend: at position 7 of "upper(n)": argument 1 of upper must be a string, got an integer`},
		{selectExprs(Computed{Name: "y", Expr: "n +"}), `select: at position 4 of "n +": expected a value, found the end`},
		{selectExprs(Computed{Name: "y", Expr: "m + 1"}), `select: at position 1 of "m + 1": no column "m"`},
		{Extend(Computed{Name: "y", Expr: "interval '1' day"}), `extend: y is an interval, which a column cannot hold`},
		{selectExprs(Computed{Name: "n"}, Computed{Name: "n", Expr: "1"}), `select: column "n" named twice`},
	} {
		err := Validate(kvSchema, []Stage{c.stage}, Options{})
		var ee *expr.Error
		if strings.Contains(c.msg, "position") && !errors.As(err, &ee) {
			t.Errorf("%v is no *expr.Error", err)
		}
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v, want %s", err, c.msg)
		}
	}
}

// TestComputeColumnsUsed: select and extend read their expressions'
// columns; extend also what is read after it of the columns it keeps.
func TestComputeColumnsUsed(t *testing.T) {
	var out bytes.Buffer
	for _, c := range []struct {
		stages []Stage
		want   string
	}{
		{[]Stage{selectExprs(Computed{Name: "a"}, Computed{Name: "r", Expr: "p * (1 - d)"}), WriteIPC(&out)}, "a,p,d"},
		{[]Stage{Extend(Computed{Name: "r", Expr: "p * (1 - d)"}), Select("r", "k"), WriteIPC(&out)}, "p,d,k"},
		{[]Stage{Extend(Computed{Name: "p", Expr: "p * 2"}), Select("p"), WriteIPC(&out)}, "p"},
		{[]Stage{Extend(Computed{Name: "r", Expr: "p * 2"}), WriteIPC(&out)}, "(all)"},
	} {
		got := usedColumns(c.stages)
		s := "(all)"
		if got != nil {
			s = strings.Join(got, ",")
		}
		if s != c.want {
			t.Errorf("%v: %q, want %q", c.stages, s, c.want)
		}
	}
}
