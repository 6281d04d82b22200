package scan

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/sluice-data/sluice/expr"
)

// condExcluded reports whether a row group's statistics, or its file's
// partition values, prove that no term of c holds on any of its rows.
func condExcluded(c boundCond, f *fileInfo, rg *metadata.RowGroupMetaData) bool {
	for _, t := range c {
		if t.part >= 0 {
			if partHolds(t, f.parts[t.part]) {
				return false
			}
		} else if !rowGroupExcluded(t, f.md, rg) {
			return false
		}
	}
	return true
}

// rowGroupExcluded reports whether the statistics of a row group prove
// that no row satisfies t. Only statistics arrow-go itself trusts
// (ColumnChunkMetaData.StatsSet, which knows the writers with broken
// ones) of a top-level, non-repeated column are used, and only where the
// literal and the statistics mean the same thing (signed integers, dates,
// timestamps in the file's unit, floats without NaN, strings compared as
// bytes); anything else keeps the row group.
func rowGroupExcluded(t *boundTerm, md *metadata.FileMetaData, rg *metadata.RowGroupMetaData) (excluded bool) {
	nullTest := t.Op == expr.OpIsNull || t.Op == expr.OpNotNull
	if !t.hasStat && !t.isTime && !nullTest {
		return false
	}
	defer func() {
		if recover() != nil { // malformed statistics bytes
			excluded = false
		}
	}()
	leaf := md.Schema.ColumnIndexByName(t.Column)
	if leaf < 0 || leaf >= rg.NumColumns() {
		return false
	}
	col := md.Schema.Column(leaf)
	if len(col.ColumnPath()) != 1 || col.MaxRepetitionLevel() != 0 {
		return false
	}
	cc, err := rg.ColumnChunk(leaf)
	if err != nil {
		return false
	}
	if ok, err := cc.StatsSet(); !ok || err != nil {
		return false
	}
	st, err := cc.Statistics()
	if err != nil || st == nil {
		return false
	}
	if t.Op == expr.OpIsNull {
		return st.HasNullCount() && st.NullCount() == 0
	}
	if st.HasNullCount() && rg.NumRows() > 0 && st.NullCount() >= rg.NumRows() {
		return true // all null: no comparison holds, nor is not null
	}
	if nullTest {
		return false
	}
	if !st.HasMinMax() {
		return false
	}
	lit := t.stat
	var lo, hi statVal
	lt := col.LogicalType()
	intOK := func() bool {
		if t.isTime {
			var unit schema.TimeUnitType
			switch ts := lt.(type) {
			case schema.TimestampLogicalType:
				unit = ts.TimeUnit()
			case *schema.TimestampLogicalType:
				unit = ts.TimeUnit()
			default:
				return false
			}
			v, ok := instantIn(t.instant, arrowUnit(unit))
			lit = statVal{kind: kInt, i: v}
			return ok
		}
		switch l := lt.(type) {
		case nil, schema.NoLogicalType, *schema.NoLogicalType, schema.DateLogicalType, *schema.DateLogicalType:
			return true
		case schema.IntLogicalType:
			return l.IsSigned()
		case *schema.IntLogicalType:
			return l.IsSigned()
		}
		return false
	}
	switch s := st.(type) {
	case *metadata.Int32Statistics:
		if !intOK() {
			return false
		}
		lo, hi = statVal{kind: kInt, i: int64(s.Min())}, statVal{kind: kInt, i: int64(s.Max())}
	case *metadata.Int64Statistics:
		if !intOK() {
			return false
		}
		lo, hi = statVal{kind: kInt, i: s.Min()}, statVal{kind: kInt, i: s.Max()}
	case *metadata.Float32Statistics:
		if t.isTime {
			return false
		}
		lo, hi = statVal{kind: kFloat, f: float64(s.Min())}, statVal{kind: kFloat, f: float64(s.Max())}
	case *metadata.Float64Statistics:
		if t.isTime {
			return false
		}
		lo, hi = statVal{kind: kFloat, f: s.Min()}, statVal{kind: kFloat, f: s.Max()}
	case *metadata.ByteArrayStatistics:
		if t.isTime {
			return false
		}
		switch lt.(type) {
		case nil, schema.NoLogicalType, *schema.NoLogicalType, schema.StringLogicalType, *schema.StringLogicalType:
		default:
			return false
		}
		lo, hi = statVal{kind: kBytes, b: s.Min()}, statVal{kind: kBytes, b: s.Max()}
	default:
		return false
	}
	if lo.kind == kFloat && (math.IsNaN(lo.f) || math.IsNaN(hi.f)) {
		return false
	}
	return excludes(t.Op, lit, lo, hi, t.isFloat || lo.kind == kFloat)
}

func arrowUnit(u schema.TimeUnitType) arrow.TimeUnit {
	switch u {
	case schema.TimeUnitMillis:
		return arrow.Millisecond
	case schema.TimeUnitMicros:
		return arrow.Microsecond
	}
	return arrow.Nanosecond
}
