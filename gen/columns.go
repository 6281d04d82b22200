package gen

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// dictColumn is a string column with a handful of values known up front.
// It is written as an Arrow dictionary array, so the Parquet encoder takes
// the dictionary whole and encodes the indices, instead of hashing every
// value (which in arrow-go also allocates per value). Readers see a plain
// string column: the Arrow schema is not stored in the file.
type dictColumn struct {
	typ  *arrow.DictionaryType
	dict arrow.Array
	idx  *array.Int8Builder
}

func newDictColumn(mem memory.Allocator, values []string) *dictColumn {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.AppendValues(values, nil)
	return &dictColumn{typ: dictOf(arrow.BinaryTypes.String), dict: b.NewArray(), idx: array.NewInt8Builder(mem)}
}

func dictOf(t arrow.DataType) *arrow.DictionaryType {
	return &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: t}
}

// array returns a dictionary array over idx; the caller releases it.
func (c *dictColumn) array(idx []int8) arrow.Array {
	c.idx.AppendValues(idx, nil)
	indices := c.idx.NewArray()
	defer indices.Release()
	// Every batch shares one dictionary: pqarrow keeps dictionary
	// encoding only while the dictionary stays the same. Statistics still
	// cover just the values used (TestLineitemTinyBatches).
	return array.NewDictionaryArray(c.typ, indices, c.dict)
}

func (c *dictColumn) release() {
	c.dict.Release()
	c.idx.Release()
}

// writeSchema is s with the fields of dictionary columns retyped as the
// arrays the generator builds for them.
func writeSchema(s *arrow.Schema, dict map[string]bool) *arrow.Schema {
	fields := s.Fields()
	for i, f := range fields {
		if dict[f.Name] {
			fields[i].Type = dictOf(f.Type)
		}
	}
	return arrow.NewSchema(fields, nil)
}

// releaseAll releases the arrays of a batch once the record holds them.
func releaseAll(cols []arrow.Array) {
	for _, c := range cols {
		c.Release()
	}
}

// column is the array of vals, built with b (which is then empty again).
func column[T any](b interface {
	AppendValues([]T, []bool)
	NewArray() arrow.Array
}, vals []T) arrow.Array {
	b.AppendValues(vals, nil)
	return b.NewArray()
}
