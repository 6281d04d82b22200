package scan

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/store"
)

// Objects lists what a pattern names as Open does (a glob's matches, the
// objects under a prefix, or the one object a key names), in key order,
// but keeping every visible object under a prefix, not only *.parquet:
// for readers of other formats.
func Objects(ctx context.Context, st *store.Store, pattern string) ([]store.ObjectInfo, error) {
	_, objs, err := listObjects(ctx, st, pattern, "")
	return objs, err
}

// listFiles resolves a pattern to the objects of a dataset, in key order,
// and the root that partition directories are read below. See the
// package documentation for the rules.
func listFiles(ctx context.Context, st *store.Store, pattern string) (root string, objs []store.ObjectInfo, err error) {
	return listObjects(ctx, st, pattern, ".parquet")
}

// listObjects is listFiles keeping, under a prefix, the objects whose
// names end in suffix ("" for all). What a pattern names is
// store.Resolve's one meaning; a dataset keeps fewer of a prefix's
// objects (dataFiles), never those a glob or a key names.
func listObjects(ctx context.Context, st *store.Store, pattern, suffix string) (root string, objs []store.ObjectInfo, err error) {
	r, err := store.Resolve(ctx, st, pattern)
	if err != nil || r.One || store.IsGlob(pattern) {
		return r.Root, r.List, err
	}
	if table, latest := iceberg.InListing(r.Root, r.List); suffix == ".parquet" && table {
		e := &IcebergTableError{URL: st.URL(r.Root)}
		if latest != "" {
			e.Metadata = st.URL(latest)
		}
		return r.Root, nil, e
	}
	return r.Root, dataFiles(r.Root, r.List, suffix), nil
}

// IcebergTableError is Open's refusal of a prefix that holds an Iceberg
// table: its Parquet files alone would show deleted rows and miss schema
// changes. URL is the table's location, for a reader of Iceberg tables;
// Metadata, when the listing showed one, its latest metadata file
// (metadata/vN.metadata.json of the highest N: a Hadoop-style table
// commits a version by creating that file), which saves a reader the
// round trips of finding it again.
type IcebergTableError struct{ URL, Metadata string }

func (e *IcebergTableError) Error() string {
	return fmt.Sprintf("%s is an Iceberg table (metadata/ holds its snapshots): its Parquet files alone would show deleted rows", e.URL)
}

// dataFiles keeps the objects under root whose names end in suffix,
// skipping any whose path below root has an element starting with "_" or
// "." (_SUCCESS, _metadata, _temporary/, .crc and other writers'
// bookkeeping).
func dataFiles(root string, objs []store.ObjectInfo, suffix string) []store.ObjectInfo {
	out := objs[:0]
	for _, o := range objs {
		rel := strings.TrimPrefix(o.Key, root)
		if !strings.HasSuffix(rel, suffix) {
			continue
		}
		hidden := false
		for _, el := range strings.Split(rel, "/") {
			if strings.HasPrefix(el, "_") || strings.HasPrefix(el, ".") {
				hidden = true
				break
			}
		}
		if !hidden {
			out = append(out, o)
		}
	}
	return out
}

// partCol is a column that comes from key=value directories.
type partCol struct {
	name string
	typ  arrow.DataType // Int64 or String
}

// partVal is one file's value of a partition column.
type partVal struct {
	null bool
	s    string
	i    int64
}

// hiveDefault is the directory value Hive and Spark write for null.
const hiveDefault = "__HIVE_DEFAULT_PARTITION__"

// partitions reads the key=value directories of each key below root.
// Every file must have the same keys in the same order. A column is int64
// when every value is a base-10 int64, else a string.
func partitions(root string, keys []string, urlOf func(string) string) ([]partCol, [][]partVal, error) {
	var names []string
	raw := make([][]string, len(keys))
	for i, key := range keys {
		rel := strings.TrimPrefix(key, root)
		els := strings.Split(rel, "/")
		var ks []string
		for _, el := range els[:len(els)-1] {
			k, v, ok := strings.Cut(el, "=")
			if !ok || k == "" {
				continue
			}
			if u, err := url.PathUnescape(k); err == nil {
				k = u
			}
			if u, err := url.PathUnescape(v); err == nil {
				v = u
			}
			ks = append(ks, k)
			raw[i] = append(raw[i], v)
		}
		if i == 0 {
			names = ks
			continue
		}
		if strings.Join(ks, "/") != strings.Join(names, "/") {
			return nil, nil, fmt.Errorf("scan %s: partition directories %s differ from %s in %s",
				urlOf(key), describeKeys(ks), describeKeys(names), urlOf(keys[0]))
		}
	}
	cols := make([]partCol, len(names))
	vals := make([][]partVal, len(keys))
	for i := range keys {
		vals[i] = make([]partVal, len(names))
	}
	for c, name := range names {
		isInt := true
		for i := range keys {
			v := raw[i][c]
			if v == hiveDefault {
				continue
			}
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				isInt = false
				break
			}
		}
		cols[c] = partCol{name: name, typ: arrow.BinaryTypes.String}
		if isInt {
			cols[c].typ = arrow.PrimitiveTypes.Int64
		}
		for i := range keys {
			v := raw[i][c]
			switch {
			case v == hiveDefault:
				vals[i][c] = partVal{null: true}
			case isInt:
				n, _ := strconv.ParseInt(v, 10, 64)
				vals[i][c] = partVal{i: n}
			default:
				vals[i][c] = partVal{s: v}
			}
		}
	}
	return cols, vals, nil
}

func describeKeys(ks []string) string {
	if len(ks) == 0 {
		return "(none)"
	}
	return strings.Join(ks, "=…/") + "=…"
}

// partHolds evaluates a term on a partition value; null satisfies no
// comparison.
func partHolds(t *boundTerm, v partVal) bool {
	switch t.Op {
	case expr.OpIsNull:
		return v.null
	case expr.OpNotNull:
		return !v.null
	}
	if v.null {
		return false
	}
	if !t.hasStat {
		return true // cannot decide here: keep the file
	}
	val := statVal{kind: kBytes, b: []byte(v.s)}
	if t.typ.ID() == arrow.INT64 {
		val = statVal{kind: kInt, i: v.i}
	}
	c, ok := compareStat(val, t.stat)
	if !ok {
		return true
	}
	switch t.Op {
	case expr.OpEq:
		return c == 0
	case expr.OpNe:
		return c != 0
	case expr.OpLt:
		return c < 0
	case expr.OpLe:
		return c <= 0
	case expr.OpGt:
		return c > 0
	}
	return c >= 0
}
