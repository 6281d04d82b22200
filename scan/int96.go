package scan

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/thrift/lib/go/thrift"
)

// INT96 is the deprecated timestamp of Impala and Spark: nanoseconds of
// the day and a Julian day. arrow-go always reads it as nanoseconds since
// the epoch, which cannot hold dates past 2262 that Spark (microseconds)
// writes happily (int96_from_spark.parquet: 9999-12-31 and year 290000).
// Options.Int96Unit offers a coarser unit, as pyarrow's
// coerce_int96_timestamp_unit does. With it, a second copy of the footer
// in which every INT96 column is a 12-byte FIXED_LEN_BYTE_ARRAY (the same
// bytes on disk, plain or dictionary encoded) is what arrow-go decodes
// from, and finish turns those bytes into timestamps of the unit.

// hasInt96 reports whether any top-level column is a flat INT96 leaf.
func hasInt96(md *metadata.FileMetaData) bool {
	root := md.Schema.Root()
	for i := range root.NumFields() {
		if p, ok := root.Field(i).(*schema.PrimitiveNode); ok && p.PhysicalType() == parquet.Types.Int96 && p.RepetitionType() != parquet.Repetitions.Repeated {
			return true
		}
	}
	return false
}

// isInt96 reports whether the top-level column name is a flat INT96 leaf.
func isInt96(md *metadata.FileMetaData, name string) bool {
	root := md.Schema.Root()
	i := root.FieldIndexByName(name)
	if i < 0 {
		return false
	}
	p, ok := root.Field(i).(*schema.PrimitiveNode)
	return ok && p.PhysicalType() == parquet.Types.Int96 && p.RepetitionType() != parquet.Repetitions.Repeated
}

// int96Footer rewrites footer bytes so every INT96 leaf is a 12-byte
// FIXED_LEN_BYTE_ARRAY, in the schema and in each column chunk.
func int96Footer(meta []byte) (*metadata.FileMetaData, error) {
	fmd, err := decodeFooter(meta)
	if err != nil {
		return nil, err
	}
	const int96, flba = 3, 7 // parquet.thrift Type
	if sch := fmd.field(fmdSchema); sch != nil {
		for i := range sch.elems {
			e := &sch.elems[i]
			if t := e.field(1); t != nil && t.i == int96 {
				t.i = flba
				e.drop(2)
				e.fields = append(e.fields, tfield{id: 2, v: tvalue{typ: thrift.I32, i: 12}})
				sortFields(e)
			}
		}
	}
	if rgs := fmd.field(4); rgs != nil {
		for i := range rgs.elems {
			cols := rgs.elems[i].field(1)
			if cols == nil {
				continue
			}
			for j := range cols.elems {
				if cm := cols.elems[j].field(3); cm != nil {
					if t := cm.field(1); t != nil && t.i == int96 {
						t.i = flba
					}
				}
			}
		}
	}
	out, err := encodeFooter(fmd, len(meta))
	if err != nil {
		return nil, err
	}
	return parseRaw(out)
}

// sortFields orders a struct's fields by id, as the compact protocol's
// field deltas expect of a writer.
func sortFields(v *tvalue) {
	f := v.fields
	for i := 1; i < len(f); i++ {
		for j := i; j > 0 && f[j].id < f[j-1].id; j-- {
			f[j], f[j-1] = f[j-1], f[j]
		}
	}
}

// int96Type is the Arrow type of an INT96 column read in unit.
func int96Type(unit arrow.TimeUnit) arrow.DataType {
	return &arrow.TimestampType{Unit: unit, TimeZone: "UTC"}
}

// withInt96Unit changes the type of a schema's flat INT96 columns from
// arrow-go's nanoseconds to unit.
func withInt96Unit(md *metadata.FileMetaData, sc *arrow.Schema, unit arrow.TimeUnit) *arrow.Schema {
	root := md.Schema.Root()
	fields := sc.Fields()
	changed := false
	for i := range root.NumFields() {
		p, ok := root.Field(i).(*schema.PrimitiveNode)
		if !ok || p.PhysicalType() != parquet.Types.Int96 || p.RepetitionType() == parquet.Repetitions.Repeated {
			continue
		}
		for k := range fields {
			if fields[k].Name == p.Name() {
				fields[k].Type = int96Type(unit)
				changed = true
			}
		}
	}
	if !changed {
		return sc
	}
	meta := sc.Metadata()
	return arrow.NewSchema(fields, &meta)
}

const julianEpoch = 2440588 // Julian day of 1970-01-01

// int96Array turns 12-byte INT96 values into timestamps of unit.
func int96Array(mem memory.Allocator, in *array.FixedSizeBinary, unit arrow.TimeUnit) arrow.Array {
	b := array.NewTimestampBuilder(mem, int96Type(unit).(*arrow.TimestampType))
	defer b.Release()
	b.Reserve(in.Len())
	perSec := int64(math.Pow10(3 * int(unit))) // s, ms, us, ns
	for i := range in.Len() {
		if in.IsNull(i) {
			b.AppendNull()
			continue
		}
		v := in.Value(i)
		nanos := int64(binary.LittleEndian.Uint64(v[:8]))
		days := int64(int32(binary.LittleEndian.Uint32(v[8:12]))) - julianEpoch
		// Wrapping int64 arithmetic, as pyarrow's and Spark's: Spark stores
		// dates far in the future with a day count and nanoseconds that
		// only come back to its microseconds this way (year 290000 in
		// int96_from_spark.parquet).
		ts := days*86400*perSec + nanos/(1e9/perSec)
		b.Append(arrow.Timestamp(ts))
	}
	return b.NewArray()
}
