package iceberg_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/store"
)

// v1 is a new table's metadata: a schema, no snapshot yet. v2 is the same
// table after two appends, a column added by the second (schema 1).
const (
	v1 = `{"format-version": 2, "location": "mem://warehouse/db/events",
 "current-schema-id": 0,
 "schemas": [{"schema-id": 0, "type": "struct", "fields": [
   {"id": 1, "name": "id", "required": true, "type": "long"},
   {"id": 2, "name": "at", "required": false, "type": "timestamptz"}]}],
 "partition-specs": [{"spec-id": 0, "fields": []}],
 "snapshots": []}`
	v2 = `{"format-version": 2, "location": "mem://warehouse/db/events",
 "current-schema-id": 1,
 "schemas": [{"schema-id": 0, "type": "struct", "fields": [
   {"id": 1, "name": "id", "required": true, "type": "long"},
   {"id": 2, "name": "at", "required": false, "type": "timestamptz"}]},
  {"schema-id": 1, "type": "struct", "fields": [
   {"id": 1, "name": "id", "required": true, "type": "long"},
   {"id": 2, "name": "at", "required": false, "type": "timestamptz"},
   {"id": 3, "name": "price", "required": false, "type": "decimal(10, 2)"}]}],
 "partition-specs": [{"spec-id": 0, "fields": []}],
 "current-snapshot-id": 22,
 "snapshots": [
  {"snapshot-id": 11, "sequence-number": 1, "timestamp-ms": 1796083200000, "schema-id": 0,
   "manifest-list": "mem://warehouse/db/events/metadata/snap-11.avro"},
  {"snapshot-id": 22, "sequence-number": 2, "timestamp-ms": 1796256000000, "schema-id": 1,
   "manifest-list": "mem://warehouse/db/events/metadata/snap-22.avro"}],
 "snapshot-log": [
  {"snapshot-id": 11, "timestamp-ms": 1796083200000},
  {"snapshot-id": 22, "timestamp-ms": 1796256000000}]}`
)

// Open a table by its location (the highest metadata/vN.metadata.json) or
// by a metadata file, at its current snapshot, one by id or one current
// at a time, and read the schema of the snapshot chosen. Here the table
// is in a mem:// store; s3://, gs://, az:// and file:// tables open alike.
func ExampleOpen() {
	ctx := context.Background()
	buckets := store.NewMemBuckets()
	open := func(ctx context.Context, url string) (*store.Store, string, error) {
		return store.Open(ctx, url, store.Options{MemBuckets: buckets})
	}
	st, _, err := open(ctx, "mem://warehouse/")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	for key, body := range map[string]string{"db/events/metadata/v1.metadata.json": v1, "db/events/metadata/v2.metadata.json": v2} {
		if _, err := st.Put(ctx, key, strings.NewReader(body), store.WriteOptions{}); err != nil {
			log.Fatal(err)
		}
	}

	t, err := iceberg.Open(ctx, open, "mem://warehouse/db/events", iceberg.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.URL, iceberg.IsMetadataURL(t.URL))
	fmt.Printf("current snapshot %d (sequence %d), %s\n", t.Snapshot.ID, t.Snapshot.Sequence, t.Snapshot.Time.UTC().Format(time.RFC3339))
	for _, f := range t.Schema.Fields {
		fmt.Printf("  field %d %s %s required=%v\n", f.ID, f.Name, f.Type, f.Required)
	}
	schema, err := iceberg.ArrowSchema(t.Schema.Fields)
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range schema.Fields() {
		fmt.Printf("  arrow %s: %s (field id %d)\n", f.Name, f.Type, iceberg.FieldID(f))
	}

	old, err := iceberg.Open(ctx, open, t.URL, iceberg.Options{AsOf: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("as of 2026-12-02: snapshot %d, %d fields\n", old.Snapshot.ID, len(old.Schema.Fields))
	_, err = iceberg.Open(ctx, open, t.URL, iceberg.Options{SnapshotID: 33})
	fmt.Println(errors.Is(err, iceberg.ErrNoSnapshot), err)

	// A table without a snapshot has no rows: nothing to plan.
	empty, err := iceberg.Open(ctx, open, "mem://warehouse/db/events/metadata/v1.metadata.json", iceberg.Options{})
	if err != nil {
		log.Fatal(err)
	}
	tasks, err := empty.Plan(ctx, open, nil)
	fmt.Println(empty.Snapshot == nil, len(tasks), err)

	// Writers record absolute locations; URL makes them store URLs.
	fmt.Println(iceberg.URL("s3a://bucket/db/events/data/00000-0.parquet"))
	// Output:
	// mem://warehouse/db/events/metadata/v2.metadata.json true
	// current snapshot 22 (sequence 2), 2026-12-03T00:00:00Z
	//   field 1 id long required=true
	//   field 2 at timestamptz required=false
	//   field 3 price decimal(10, 2) required=false
	//   arrow id: int64 (field id 1)
	//   arrow at: timestamp[us, tz=UTC] (field id 2)
	//   arrow price: decimal(10, 2) (field id 3)
	// as of 2026-12-02: snapshot 11, 2 fields
	// true iceberg: mem://warehouse/db/events/metadata/v2.metadata.json: no snapshot 33 (snapshots: 11, 22)
	// true 0 <nil>
	// s3://bucket/db/events/data/00000-0.parquet
}
