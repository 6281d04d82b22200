// Package iceberg reads Apache Iceberg tables: it reads a table's
// metadata file, chooses a snapshot, and plans the snapshot's data files
// with the delete files that apply to each. The data files themselves are
// read by package scan (see exec's scan stage), their columns matched to
// the table's by Iceberg field id, so renamed, added, dropped and
// promoted columns read as the table's schema says.
//
// It does not link apache/iceberg-go: its packages initialise Avro
// schemas and a substrait registry at start (2 ms and 10 MB of resident
// binary for the root package, half a second for table), which every
// sluice stage process and fanned-out task would pay. The table metadata
// is JSON, and manifests are Avro container files read with twmb/avro;
// what planning needs of them is read here, and tests check the result
// against iceberg-go's own reading.
package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-data/sluice/store"
)

// ErrNoSnapshot is matched by Open's error when the table has no
// snapshot of the id, or at the time, asked for.
var ErrNoSnapshot = errors.New("no such snapshot")

// ErrInvalid is matched by errors in what was asked (no such snapshot,
// a malformed table name), as opposed to what was read.
var ErrInvalid = errors.New("invalid request")

// noSnapshot is an error that matches ErrNoSnapshot and ErrInvalid.
type noSnapshot struct{ error }

func (e noSnapshot) Is(target error) bool { return target == ErrNoSnapshot || target == ErrInvalid }

// invalid is an error that matches ErrInvalid.
type invalid struct{ error }

func (e invalid) Is(target error) bool { return target == ErrInvalid }

// Options choose the snapshot to read. The zero value reads the current
// one.
type Options struct {
	// SnapshotID, when not zero, is the snapshot to read.
	SnapshotID int64
	// AsOf, when not zero, reads the snapshot that was current at that
	// time (the table's snapshot log).
	AsOf time.Time
}

// Table is an Iceberg table at one snapshot.
type Table struct {
	// URL is the metadata file read.
	URL string
	// Location is the table's base location, as its metadata says.
	Location string
	// Schema is the table's current schema, or, for a snapshot asked for
	// by id or time, the one it was written under.
	Schema *Schema
	// Snapshot is the snapshot read; nil for a table without one (no
	// rows).
	Snapshot *Snapshot

	formatVersion int
	specs         map[int32]spec
	schemas       []*Schema // every schema the table has had
}

// Snapshot is one snapshot of a table.
type Snapshot struct {
	ID           int64
	Sequence     int64
	Time         time.Time
	ManifestList string
}

// metadata is what planning reads of a table metadata file (format
// versions 1 to 3).
type metadata struct {
	FormatVersion     int         `json:"format-version"`
	Location          string      `json:"location"`
	CurrentSchemaID   *int        `json:"current-schema-id"`
	Schemas           []*Schema   `json:"schemas"`
	Schema            *Schema     `json:"schema"` // format 1
	Specs             []spec      `json:"partition-specs"`
	Spec              []specField `json:"partition-spec"` // format 1: spec 0
	CurrentSnapshotID *int64      `json:"current-snapshot-id"`
	Snapshots         []struct {
		ID           int64    `json:"snapshot-id"`
		Sequence     int64    `json:"sequence-number"`
		TimestampMs  int64    `json:"timestamp-ms"`
		ManifestList string   `json:"manifest-list"`
		Manifests    []string `json:"manifests"` // format 1, before manifest lists
		SchemaID     *int     `json:"schema-id"`
	} `json:"snapshots"`
	SnapshotLog []struct {
		ID          int64 `json:"snapshot-id"`
		TimestampMs int64 `json:"timestamp-ms"`
	} `json:"snapshot-log"`
}

// IsMetadataURL says whether url names a table metadata file
// (vN.metadata.json or <uuid>.metadata.json, gzipped or not).
func IsMetadataURL(url string) bool {
	base := path.Base(url)
	return strings.HasSuffix(base, ".metadata.json") || strings.HasSuffix(base, ".metadata.json.gz") || strings.HasSuffix(base, ".gz.metadata.json")
}

// Open reads the table whose metadata file url names, or, when url is
// the table's location, the metadata file its metadata/version-hint.text
// names (else the highest vN.metadata.json there), and chooses the
// snapshot opts asks for.
func Open(ctx context.Context, open store.Opener, url string, opts Options) (*Table, error) {
	if opts.SnapshotID != 0 && !opts.AsOf.IsZero() {
		return nil, noSnapshot{errors.New("iceberg: a snapshot id and a time: give one")}
	}
	if !IsMetadataURL(url) {
		var err error
		if url, err = currentMetadata(ctx, open, url); err != nil {
			return nil, err
		}
	}
	b, err := readAll(ctx, open, url)
	if err != nil {
		return nil, err
	}
	return fromMetadata(url, b, opts)
}

// Load opens the table url names: a table of the REST catalog at
// catalog (configured from the environment, CatalogFromEnv) when that is
// set, else a metadata file or a table's location read through open.
func Load(ctx context.Context, open store.Opener, catalog, url string, opts Options) (*Table, error) {
	if catalog != "" {
		return CatalogFromEnv(catalog).Load(ctx, url, opts)
	}
	return Open(ctx, open, url, opts)
}

// fromMetadata is the table whose metadata file (at url) holds b, at
// the snapshot opts asks for.
func fromMetadata(url string, b []byte, opts Options) (*Table, error) {
	if opts.SnapshotID != 0 && !opts.AsOf.IsZero() {
		return nil, noSnapshot{errors.New("iceberg: a snapshot id and a time: give one")}
	}
	var md metadata
	if err := json.Unmarshal(b, &md); err != nil {
		return nil, fmt.Errorf("iceberg: %s: not table metadata: %v", url, err)
	}
	if md.FormatVersion < 1 || md.FormatVersion > 3 {
		return nil, fmt.Errorf("iceberg: %s: format version %d; this sluice reads 1 to 3", url, md.FormatVersion)
	}
	schemas := slices.DeleteFunc(md.Schemas, func(s *Schema) bool { return s == nil })
	if len(schemas) == 0 && md.Schema != nil {
		schemas = []*Schema{md.Schema}
	}
	t := &Table{URL: url, Location: md.Location, formatVersion: md.FormatVersion, specs: map[int32]spec{}, schemas: schemas}
	for _, s := range md.Specs {
		t.specs[s.ID] = s
	}
	if len(md.Specs) == 0 {
		t.specs[0] = spec{Fields: md.Spec}
	}
	schemaByID := func(id int) *Schema {
		for _, s := range schemas {
			if s.ID == id {
				return s
			}
		}
		return nil
	}
	switch {
	case md.CurrentSchemaID != nil:
		t.Schema = schemaByID(*md.CurrentSchemaID)
	case len(schemas) > 0:
		t.Schema = schemas[len(schemas)-1]
	}
	if t.Schema == nil {
		return nil, fmt.Errorf("iceberg: %s: no current schema", url)
	}

	id := int64(-1)
	if md.CurrentSnapshotID != nil {
		id = *md.CurrentSnapshotID
	}
	switch {
	case opts.SnapshotID != 0:
		id = opts.SnapshotID
	case !opts.AsOf.IsZero():
		id = -1
		at := opts.AsOf.UnixMilli()
		for _, l := range md.SnapshotLog {
			if l.TimestampMs <= at {
				id = l.ID
			}
		}
		if id == -1 {
			first := "it has no snapshot log"
			if len(md.SnapshotLog) > 0 {
				first = "its first snapshot is of " + time.UnixMilli(md.SnapshotLog[0].TimestampMs).UTC().Format(time.RFC3339Nano)
			}
			return nil, noSnapshot{fmt.Errorf("iceberg: %s: no snapshot was current at %s (%s)", url, opts.AsOf.UTC().Format(time.RFC3339Nano), first)}
		}
	}
	if id == -1 && opts.SnapshotID == 0 {
		return t, nil // no snapshot yet: no rows
	}
	var ids []string
	for _, s := range md.Snapshots {
		ids = append(ids, strconv.FormatInt(s.ID, 10))
		if s.ID != id {
			continue
		}
		if s.ManifestList == "" {
			return nil, fmt.Errorf("iceberg: %s: snapshot %d lists its manifests inline (format 1 before manifest lists), which this sluice does not read", url, id)
		}
		t.Snapshot = &Snapshot{ID: s.ID, Sequence: s.Sequence, Time: time.UnixMilli(s.TimestampMs), ManifestList: s.ManifestList}
		// A snapshot asked for is read with the schema it was written
		// under (time travel, as Spark and Trino read it); the current
		// one with the current schema, so a column dropped or renamed
		// since shows as the table now is.
		if travel := opts.SnapshotID != 0 || !opts.AsOf.IsZero(); travel && s.SchemaID != nil {
			if sc := schemaByID(*s.SchemaID); sc != nil {
				t.Schema = sc
			}
		}
		return t, nil
	}
	return nil, noSnapshot{fmt.Errorf("iceberg: %s: no snapshot %d (snapshots: %s)", url, id, strings.Join(ids, ", "))}
}

// currentMetadata finds the metadata file of the table at location, as
// Hadoop-style catalogs leave it: a version is committed by creating its
// metadata/vN.metadata.json, so the highest N is current (as Java's
// reader, which reads the hint and then looks for later versions, finds
// it); metadata/version-hint.text serves a store that cannot list.
func currentMetadata(ctx context.Context, open store.Opener, location string) (string, error) {
	dir := strings.TrimSuffix(location, "/") + "/metadata/"
	st, prefix, err := open(ctx, dir)
	if err != nil {
		return "", err
	}
	if objs, err := st.List(ctx, prefix); err == nil {
		if _, key := InListing(strings.TrimSuffix(prefix, "metadata/"), objs); key != "" {
			return st.URL(key), nil
		}
	}
	hint, herr := readAll(ctx, open, dir+"version-hint.text")
	if herr == nil {
		v := strings.TrimSpace(string(hint))
		if _, err := strconv.Atoi(v); err == nil {
			return dir + "v" + v + ".metadata.json", nil
		}
		return "", fmt.Errorf("iceberg: %sversion-hint.text holds %q, not a version number", dir, v)
	}
	if store.KindOf(herr) != store.KindNotFound {
		return "", herr
	}
	return "", &store.Error{Op: "open", URL: location, Kind: store.KindNotFound,
		Err: errors.New("not an Iceberg table: no metadata/vN.metadata.json or metadata/version-hint.text under it (name a table's metadata file)")}
}

// InListing says whether objs, the objects under root, are an Iceberg
// table's (root holds metadata/version-hint.text or a
// metadata/*.metadata.json), and gives the key of its current metadata
// file: metadata/vN.metadata.json of the highest N ("" when there is
// none), as currentMetadata chooses it.
func InListing(root string, objs []store.ObjectInfo) (table bool, latest string) {
	best := -1
	for _, o := range objs {
		rel, ok := strings.CutPrefix(o.Key, root+"metadata/")
		if !ok || strings.Contains(rel, "/") {
			continue
		}
		table = table || rel == "version-hint.text" || strings.HasSuffix(rel, ".metadata.json")
		v, ok := strings.CutPrefix(rel, "v")
		if !ok {
			continue
		}
		v, ok = strings.CutSuffix(v, ".metadata.json")
		if n, err := strconv.Atoi(v); ok && err == nil && n > best {
			best, latest = n, o.Key
		}
	}
	return table, latest
}

// readAll reads the whole object at url.
func readAll(ctx context.Context, open store.Opener, url string) ([]byte, error) {
	st, key, err := open(ctx, url)
	if err != nil {
		return nil, err
	}
	return st.ReadAll(ctx, key)
}

// URL is the store URL of a path in a table's metadata. Iceberg writers
// record absolute locations: s3://, s3a:// and s3n:// (Hadoop's names
// for S3), gs://, abfs[s]://, file:/ and file:///, or a plain absolute
// path.
func URL(p string) string {
	for _, pre := range []string{"s3a://", "s3n://"} {
		if rest, ok := strings.CutPrefix(p, pre); ok {
			return "s3://" + rest
		}
	}
	if rest, ok := strings.CutPrefix(p, "file:"); ok {
		// file:/a/b (as Hadoop writes it) and file:///a/b are the path
		// /a/b, taken as it is: writers escape partition values in file
		// names (%3A), and a URL's path would be unescaped.
		if r, ok := strings.CutPrefix(rest, "//"); ok {
			rest = r
		}
		return rest
	}
	return p
}

// Field is the field of id in the snapshot's schema, or else in the
// latest other schema that has it: an equality delete may compare a
// column dropped since.
func (t *Table) Field(id int) (Field, bool) {
	if f, ok := t.Schema.FieldByID(id); ok {
		return f, true
	}
	for i := len(t.schemas) - 1; i >= 0; i-- {
		if f, ok := t.schemas[i].FieldByID(id); ok {
			return f, true
		}
	}
	return Field{}, false
}

// StableNames says whether each of names has named one field (one id)
// in every schema the table has had. A data file's column of such a name
// is then that field, whichever schema the file was written under, so
// the file's statistics under that name are the field's.
func (t *Table) StableNames(names []string) bool {
	for _, name := range names {
		id := -1
		for _, s := range t.schemas {
			f, ok := s.FieldByName(name)
			if !ok {
				continue
			}
			if id >= 0 && f.ID != id {
				return false
			}
			id = f.ID
		}
	}
	return true
}

// Schema is a table schema's top-level columns.
type Schema struct {
	ID     int     `json:"schema-id"`
	Fields []Field `json:"fields"`
}

// Field is a top-level column of a schema.
type Field struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Required bool   `json:"required"`
	Type     Type   `json:"type"`
	// InitialDefault is the value (format 3, in Iceberg's JSON
	// single-value form) a data file written before the column was added
	// holds in it; absent, such a file holds nulls. See Default.
	InitialDefault json.RawMessage `json:"initial-default,omitempty"`
}

// Type is a column's Iceberg type as the metadata spells a primitive one
// ("long", "decimal(10, 2)", "fixed[16]", "timestamptz"), or "struct",
// "list" or "map" for a nested one.
type Type string

func (t *Type) UnmarshalJSON(b []byte) error {
	var name string
	if json.Unmarshal(b, &name) == nil {
		*t = Type(name)
		return nil
	}
	var nested struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &nested); err != nil || nested.Type == "" {
		return fmt.Errorf("a type that is neither a name nor a nested type: %.40s", b)
	}
	*t = Type(nested.Type)
	return nil
}

// FieldByID is the column of id.
func (s *Schema) FieldByID(id int) (Field, bool) {
	i := slices.IndexFunc(s.Fields, func(f Field) bool { return f.ID == id })
	if i < 0 {
		return Field{}, false
	}
	return s.Fields[i], true
}

// Select is the columns named, in that order, or every column for nil;
// missing is the first name the schema lacks.
func (s *Schema) Select(columns []string) (fields []Field, missing string) {
	if columns == nil {
		return s.Fields, ""
	}
	for _, c := range columns {
		f, ok := s.FieldByName(c)
		if !ok {
			return nil, c
		}
		fields = append(fields, f)
	}
	return fields, ""
}

// Names are the schema's column names, in order.
func (s *Schema) Names() []string {
	names := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
	}
	return names
}

// FieldByName is the column of name.
func (s *Schema) FieldByName(name string) (Field, bool) {
	i := slices.IndexFunc(s.Fields, func(f Field) bool { return f.Name == name })
	if i < 0 {
		return Field{}, false
	}
	return s.Fields[i], true
}

// spec is a partition spec: what planning needs is whether it
// partitions at all, and which of its fields are a column's values
// (identity).
type spec struct {
	ID     int32       `json:"spec-id"`
	Fields []specField `json:"fields"`
}

// specField is a partition field: the column it is of (SourceID), its
// name in a data file's partition tuple, its transform.
type specField struct {
	SourceID  int    `json:"source-id"`
	Name      string `json:"name"`
	Transform string `json:"transform"`
}

// unpartitioned says whether the spec puts every row in one partition.
func (s spec) unpartitioned() bool {
	for _, f := range s.Fields {
		if f.Transform != "void" {
			return false
		}
	}
	return true
}
