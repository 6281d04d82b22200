package iceberg

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/store"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"s3a://b/wh/t/data/f.parquet": "s3://b/wh/t/data/f.parquet",
		"s3n://b/f.parquet":           "s3://b/f.parquet",
		"s3://b/f.parquet":            "s3://b/f.parquet",
		"file:/tmp/wh/f.parquet":      "/tmp/wh/f.parquet",
		"file:///tmp/wh/f.parquet":    "/tmp/wh/f.parquet",
		// Writers escape partition values in names; the name is as written.
		"file:/tmp/wh/ts=10%3A00/f.parquet": "/tmp/wh/ts=10%3A00/f.parquet",
		"/tmp/wh/f.parquet":                 "/tmp/wh/f.parquet",
		"gs://b/f.parquet":                  "gs://b/f.parquet",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]bool{
		"s3://b/t/metadata/v3.metadata.json":                               true,
		"s3://b/t/metadata/00002-1b1ad64c-4b6f-4d1b-9a1b.metadata.json":    true,
		"s3://b/t/metadata/00002-1b1ad64c-4b6f-4d1b-9a1b.gz.metadata.json": true,
		"s3://b/t/metadata/v3.metadata.json.gz":                            true,
		"s3://b/t/":                                                        false,
		"s3://b/t/metadata/snap-1.avro":                                    false,
		"./metadata.json":                                                  false,
	} {
		if got := IsMetadataURL(in); got != want {
			t.Errorf("IsMetadataURL(%q) = %v", in, got)
		}
	}
}

// TestOpenMetadata: format 1's single schema and spec; a table without
// a snapshot; the highest version when there is no hint; refusals.
func TestOpenMetadata(t *testing.T) {
	ctx := context.Background()
	buckets := store.NewMemBuckets()
	open := func(ctx context.Context, url string) (*store.Store, string, error) {
		return store.Open(ctx, url, store.Options{MemBuckets: buckets})
	}
	put := func(url, body string) {
		st, key, err := open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, key, bytes.NewReader([]byte(body)), store.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	v1 := `{"format-version": 1, "location": "s3://b/t", "schema": {"type": "struct", "fields": [
		{"id": 1, "name": "a", "required": true, "type": "long"},
		{"id": 2, "name": "d", "required": false, "type": "decimal(10, 2)"},
		{"id": 3, "name": "s", "required": false, "type": {"type": "struct", "fields": []}}]},
		"partition-spec": [], "current-snapshot-id": -1}`
	put("mem://w/t/metadata/v1.metadata.json", v1)
	put("mem://w/t/metadata/v2.metadata.json", strings.Replace(v1, `"current-snapshot-id": -1`, `"current-snapshot-id": 5,
		"snapshots": [{"snapshot-id": 5, "timestamp-ms": 1, "manifests": ["s3://b/t/metadata/m.avro"]}]`, 1))
	tbl, err := Open(ctx, open, "mem://w/t/metadata/v1.metadata.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Snapshot != nil || len(tbl.Schema.Fields) != 3 || !tbl.unpartitioned(0) {
		t.Fatalf("format 1 table: %+v", tbl)
	}
	if tasks, err := tbl.Plan(ctx, open, nil); err != nil || tasks != nil {
		t.Errorf("a table without a snapshot planned %v, %v", tasks, err)
	}
	if sc, err := ArrowSchema(tbl.Schema.Fields[:2]); err != nil || sc.Field(1).Type.String() != "decimal(10, 2)" || sc.Field(0).Nullable {
		t.Errorf("Arrow schema %v, %v", sc, err)
	}
	if _, err := ArrowSchema(tbl.Schema.Fields); err == nil || !strings.Contains(err.Error(), "column s") {
		t.Errorf("a nested column read as %v", err)
	}
	// No hint: the highest version, which lists its manifests inline.
	if _, err := Open(ctx, open, "mem://w/t", Options{}); err == nil || !strings.Contains(err.Error(), "v2.metadata.json: snapshot 5 lists its manifests inline") {
		t.Errorf("the highest version without a hint: %v", err)
	}
	// The highest version wins over a hint that lags behind it.
	put("mem://w/t/metadata/version-hint.text", "1\n")
	if _, err := Open(ctx, open, "mem://w/t/", Options{}); err == nil || !strings.Contains(err.Error(), "v2.metadata.json") {
		t.Errorf("a hint behind the highest version: %v", err)
	}
	// Only a hint (as a store that cannot list would offer it).
	put("mem://w/u/metadata/version-hint.text", "one")
	if _, err := Open(ctx, open, "mem://w/u/", Options{}); err == nil || !strings.Contains(err.Error(), `holds "one"`) {
		t.Errorf("a hint that is no number: %v", err)
	}
	put("mem://w/h/metadata/version-hint.text", "1")
	put("mem://w/h/metadata/v-one.metadata.json", v1)
	if _, err := Open(ctx, open, "mem://w/h/", Options{}); store.KindOf(err) != store.KindNotFound || !strings.Contains(err.Error(), "h/metadata/v1.metadata.json") {
		t.Errorf("a hint to a version not there: %v", err)
	}
	if _, err := Open(ctx, open, "mem://w/none/", Options{}); store.KindOf(err) != store.KindNotFound || !strings.Contains(err.Error(), "not an Iceberg table") {
		t.Errorf("no table: %v", err)
	}
	put("mem://w/n/metadata/v1.metadata.json", `{"format-version": 2, "schemas": [null], "current-schema-id": 0}`)
	if _, err := Open(ctx, open, "mem://w/n/", Options{}); err == nil || !strings.Contains(err.Error(), "no current schema") {
		t.Errorf("a null schema: %v", err)
	}
	put("mem://w/v9/metadata/v1.metadata.json", strings.Replace(v1, `"format-version": 1`, `"format-version": 9`, 1))
	if _, err := Open(ctx, open, "mem://w/v9/metadata/v1.metadata.json", Options{}); err == nil || !strings.Contains(err.Error(), "format version 9") {
		t.Errorf("format 9: %v", err)
	}
}
