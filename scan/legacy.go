package scan

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/thrift/lib/go/thrift"
)

// Files written by other tools that arrow-go (v18.8) refuses or misreads
// although the Parquet format's compatibility rules say how to read them,
// as DuckDB and pyarrow do. Rather than carry a fork of arrow-go, the
// footer's Thrift bytes are rewritten into an equivalent schema arrow-go
// understands before it parses them; column data is untouched, and only
// names and annotations change, never repetitions (so every definition
// and repetition level means what the writer meant):
//
//   - a logical type newer than arrow-go's list (an id it does not know)
//     panics its parser; the format says a reader ignores it and reads the
//     physical type, so the annotation is dropped.
//   - the legacy two-level list rule: in a LIST whose repeated group is
//     named "array" (or NAME_tuple) and is itself annotated LIST, the
//     repeated group is the element, a list (old_list_structure.parquet:
//     [[1,2],[3,4]] as list<list<int32>>). arrow-go makes it a struct of
//     one list field; renaming the group lets arrow-go take its repeated
//     child as the element, which is a list.
//   - a MAP whose keys are optional (Presto/Hive wrote such files) is
//     refused by arrow-go ("MAP keys must be required"); an Arrow map's
//     keys cannot be null, so it is read as what it is on disk, a list of
//     key/value structs.
//
// The rewrite runs only for footers that need it: a parse that panicked,
// or a parsed schema in which legacySchema finds one of the patterns.

// Thrift field ids of parquet.thrift (FileMetaData, SchemaElement,
// LogicalType) used by the rewrite.
const (
	fmdSchema = 2

	seRepetition = 3
	seName       = 4
	seChildren   = 5
	seConverted  = 6
	seLogical    = 10

	repeated = 2 // FieldRepetitionType.REPEATED
	required = 0

	convMap         = 1 // ConvertedType.MAP
	convMapKeyValue = 2
	convList        = 3

	logicalMap  = 2 // LogicalType's union members
	logicalList = 3
	// maxKnownLogical is the highest LogicalType member arrow-go v18.8
	// knows (GEOGRAPHY); 9 is unused by the format.
	maxKnownLogical = 18
)

// tvalue is one Thrift value of any type, kept to be written back.
type tvalue struct {
	typ    thrift.TType
	i      int64
	d      float64
	b      bool
	s      []byte
	fields []tfield // struct
	etype  thrift.TType
	elems  []tvalue // list, set; map as key, value, key, value...
	vtype  thrift.TType
}

type tfield struct {
	id int16
	v  tvalue
}

func (v *tvalue) field(id int16) *tvalue {
	for i := range v.fields {
		if v.fields[i].id == id {
			return &v.fields[i].v
		}
	}
	return nil
}

func (v *tvalue) drop(id int16) {
	out := v.fields[:0]
	for _, f := range v.fields {
		if f.id != id {
			out = append(out, f)
		}
	}
	v.fields = out
}

const maxThriftDepth = 64

func readValue(ctx context.Context, p thrift.TProtocol, t thrift.TType, depth int) (tvalue, error) {
	v := tvalue{typ: t}
	if depth > maxThriftDepth {
		return v, errors.New("nested too deeply")
	}
	var err error
	switch t {
	case thrift.BOOL:
		v.b, err = p.ReadBool(ctx)
	case thrift.BYTE:
		var x int8
		x, err = p.ReadByte(ctx)
		v.i = int64(x)
	case thrift.I16:
		var x int16
		x, err = p.ReadI16(ctx)
		v.i = int64(x)
	case thrift.I32:
		var x int32
		x, err = p.ReadI32(ctx)
		v.i = int64(x)
	case thrift.I64:
		v.i, err = p.ReadI64(ctx)
	case thrift.DOUBLE:
		v.d, err = p.ReadDouble(ctx)
	case thrift.STRING:
		v.s, err = p.ReadBinary(ctx)
	case thrift.STRUCT:
		if _, err = p.ReadStructBegin(ctx); err != nil {
			return v, err
		}
		for {
			_, ft, id, err := p.ReadFieldBegin(ctx)
			if err != nil {
				return v, err
			}
			if ft == thrift.STOP {
				break
			}
			fv, err := readValue(ctx, p, ft, depth+1)
			if err != nil {
				return v, err
			}
			v.fields = append(v.fields, tfield{id: id, v: fv})
			if err := p.ReadFieldEnd(ctx); err != nil {
				return v, err
			}
		}
		err = p.ReadStructEnd(ctx)
	case thrift.LIST, thrift.SET:
		var n int
		if t == thrift.LIST {
			v.etype, n, err = p.ReadListBegin(ctx)
		} else {
			v.etype, n, err = p.ReadSetBegin(ctx)
		}
		if err != nil {
			return v, err
		}
		for range n {
			e, err := readValue(ctx, p, v.etype, depth+1)
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
		if t == thrift.LIST {
			err = p.ReadListEnd(ctx)
		} else {
			err = p.ReadSetEnd(ctx)
		}
	case thrift.MAP:
		var n int
		v.etype, v.vtype, n, err = p.ReadMapBegin(ctx)
		if err != nil {
			return v, err
		}
		for range n {
			k, err := readValue(ctx, p, v.etype, depth+1)
			if err != nil {
				return v, err
			}
			e, err := readValue(ctx, p, v.vtype, depth+1)
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, k, e)
		}
		err = p.ReadMapEnd(ctx)
	default:
		err = fmt.Errorf("unknown thrift type %d", t)
	}
	return v, err
}

func writeValue(ctx context.Context, p thrift.TProtocol, v tvalue) error {
	switch v.typ {
	case thrift.BOOL:
		return p.WriteBool(ctx, v.b)
	case thrift.BYTE:
		return p.WriteByte(ctx, int8(v.i))
	case thrift.I16:
		return p.WriteI16(ctx, int16(v.i))
	case thrift.I32:
		return p.WriteI32(ctx, int32(v.i))
	case thrift.I64:
		return p.WriteI64(ctx, v.i)
	case thrift.DOUBLE:
		return p.WriteDouble(ctx, v.d)
	case thrift.STRING:
		return p.WriteBinary(ctx, v.s)
	case thrift.STRUCT:
		if err := p.WriteStructBegin(ctx, ""); err != nil {
			return err
		}
		for _, f := range v.fields {
			if err := p.WriteFieldBegin(ctx, "", f.v.typ, f.id); err != nil {
				return err
			}
			if err := writeValue(ctx, p, f.v); err != nil {
				return err
			}
			if err := p.WriteFieldEnd(ctx); err != nil {
				return err
			}
		}
		if err := p.WriteFieldStop(ctx); err != nil {
			return err
		}
		return p.WriteStructEnd(ctx)
	case thrift.LIST, thrift.SET:
		var err error
		if v.typ == thrift.LIST {
			err = p.WriteListBegin(ctx, v.etype, len(v.elems))
		} else {
			err = p.WriteSetBegin(ctx, v.etype, len(v.elems))
		}
		if err != nil {
			return err
		}
		for _, e := range v.elems {
			if err := writeValue(ctx, p, e); err != nil {
				return err
			}
		}
		if v.typ == thrift.LIST {
			return p.WriteListEnd(ctx)
		}
		return p.WriteSetEnd(ctx)
	case thrift.MAP:
		if err := p.WriteMapBegin(ctx, v.etype, v.vtype, len(v.elems)/2); err != nil {
			return err
		}
		for _, e := range v.elems {
			if err := writeValue(ctx, p, e); err != nil {
				return err
			}
		}
		return p.WriteMapEnd(ctx)
	}
	return fmt.Errorf("unknown thrift type %d", v.typ)
}

// rewriteLegacy rewrites footer bytes as the comment at the top says. It
// reports whether anything changed.
func rewriteLegacy(meta []byte) ([]byte, bool, error) {
	fmd, err := decodeFooter(meta)
	if err != nil {
		return nil, false, err
	}
	sch := fmd.field(fmdSchema)
	if sch == nil || sch.typ != thrift.LIST {
		return nil, false, errors.New("no schema")
	}
	if !patchSchema(sch.elems) {
		return meta, false, nil
	}
	out, err := encodeFooter(fmd, len(meta))
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// decodeFooter reads footer bytes (a compact-protocol FileMetaData) as a
// generic Thrift value, for rewriting.
func decodeFooter(meta []byte) (tvalue, error) {
	in := thrift.NewTMemoryBufferLen(len(meta))
	in.Write(meta)
	return readValue(context.Background(), thrift.NewTCompactProtocolConf(in, footerConf()), thrift.STRUCT, 0)
}

// footerConf bounds a footer's Thrift message as reading it bounds its
// length.
func footerConf() *thrift.TConfiguration {
	return &thrift.TConfiguration{MaxMessageSize: maxFooter + 1}
}

// encodeFooter writes fmd back as footer bytes; size is what they are
// expected to take.
func encodeFooter(fmd tvalue, size int) ([]byte, error) {
	t := thrift.NewTMemoryBufferLen(size)
	if err := writeValue(context.Background(), thrift.NewTCompactProtocolConf(t, footerConf()), fmd); err != nil {
		return nil, err
	}
	return t.Bytes(), nil
}

func i64Of(v *tvalue) int64 {
	if v == nil {
		return -1
	}
	return v.i
}

// unionMember is the field id set in a union (a LogicalType), or -1.
func unionMember(v *tvalue) int16 {
	if v == nil || v.typ != thrift.STRUCT || len(v.fields) == 0 {
		return -1
	}
	return v.fields[0].id
}

func annotated(e *tvalue, conv int64, logical int16) bool {
	return i64Of(e.field(seConverted)) == conv || unionMember(e.field(seLogical)) == logical
}

// patchSchema applies the rules to the flattened schema (depth first,
// each group followed by its num_children children).
func patchSchema(elems []tvalue) bool {
	changed := false
	for i := range elems {
		e := &elems[i]
		if lt := e.field(seLogical); lt != nil {
			if m := unionMember(lt); m < 1 || m > maxKnownLogical || m == 9 {
				e.drop(seLogical)
				changed = true
			}
		}
	}
	// children[i] lists the indexes of element i's children.
	children := make([][]int, len(elems))
	var walk func(i int) int // returns the index after i's subtree
	walk = func(i int) int {
		n := int(max(i64Of(elems[i].field(seChildren)), 0))
		next := i + 1
		for range n {
			if next >= len(elems) {
				return next
			}
			children[i] = append(children[i], next)
			next = walk(next)
		}
		return next
	}
	if len(elems) > 0 {
		walk(0)
	}
	for i := range elems {
		g := &elems[i]
		if len(children[i]) != 1 {
			continue
		}
		r := &elems[children[i][0]]
		if i64Of(r.field(seRepetition)) != repeated {
			continue
		}
		name := nameOf(g)
		switch {
		case annotated(g, convList, logicalList):
			rn := nameOf(r)
			if len(children[children[i][0]]) == 1 && (rn == "array" || rn == name+"_tuple") && annotated(r, convList, logicalList) {
				r.field(seName).s = []byte("list")
				changed = true
			}
		case annotated(g, convMap, logicalMap):
			kv := children[children[i][0]]
			if len(kv) == 2 && i64Of(elems[kv[0]].field(seRepetition)) != required {
				setList(g)
				r.drop(seConverted)
				r.drop(seLogical)
				changed = true
			}
		}
	}
	return changed
}

func nameOf(e *tvalue) string {
	if n := e.field(seName); n != nil {
		return string(n.s)
	}
	return ""
}

// setList annotates a schema element as a LIST instead of a MAP.
func setList(e *tvalue) {
	if c := e.field(seConverted); c != nil {
		c.i = convList
	}
	if lt := e.field(seLogical); lt != nil {
		lt.fields = []tfield{{id: logicalList, v: tvalue{typ: thrift.STRUCT}}}
	}
}

// legacySchema reports whether a parsed schema has a pattern the rewrite
// changes: a LIST whose repeated "array" (or NAME_tuple) group is itself
// a LIST, or a MAP with optional keys.
func legacySchema(n schema.Node) bool {
	g, ok := n.(*schema.GroupNode)
	if !ok {
		return false
	}
	if g.NumFields() == 1 {
		if r, ok := g.Field(0).(*schema.GroupNode); ok && r.RepetitionType() == parquet.Repetitions.Repeated {
			isList := func(n schema.Node) bool {
				return n.ConvertedType() == schema.ConvertedTypes.List || n.LogicalType().Equals(schema.ListLogicalType{})
			}
			switch {
			case isList(g):
				if r.NumFields() == 1 && (r.Name() == "array" || r.Name() == g.Name()+"_tuple") && isList(r) {
					return true
				}
			case g.ConvertedType() == schema.ConvertedTypes.Map || g.LogicalType().Equals(schema.MapLogicalType{}):
				if r.NumFields() == 2 && r.Field(0).RepetitionType() != parquet.Repetitions.Required {
					return true
				}
			}
		}
	}
	for i := range g.NumFields() {
		if legacySchema(g.Field(i)) {
			return true
		}
	}
	return false
}
