package iceberg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/twmb/avro/ocf"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/store"
)

// DataFile is one data file of a snapshot.
type DataFile struct {
	// Path is the file's location as the table records it (position
	// deletes name it so); URL is the store URL for it.
	Path    string `json:"path"`
	URL     string `json:"url"`
	Records int64  `json:"records"`
	Size    int64  `json:"size"`
	// SpecID and Partition are the partition spec the file was written
	// under and its partition values by partition field name.
	SpecID    int32          `json:"spec_id"`
	Partition map[string]any `json:"partition,omitempty"`
	// Identity is the values of its identity partition fields, by
	// their column's field id, in Iceberg's single-value binary form
	// (nil: null): a file that lacks such a column (one a migration or
	// add_files brought in) holds that value in every row.
	Identity map[int][]byte `json:"identity,omitempty"`
	// Sequence is the file's data sequence number: deletes of a later
	// sequence number apply to it.
	Sequence int64 `json:"sequence"`
	// Lower and Upper are the column bounds the writer recorded, by
	// field id, in Iceberg's single-value binary form; NullCounts and
	// ValueCounts its counts.
	Lower       map[int][]byte `json:"lower,omitempty"`
	Upper       map[int][]byte `json:"upper,omitempty"`
	NullCounts  map[int]int64  `json:"null_counts,omitempty"`
	ValueCounts map[int]int64  `json:"value_counts,omitempty"`
	// NaNCounts are the NaN values of float columns, by field id (the
	// bounds leave NaN out).
	NaNCounts map[int]int64 `json:"nan_counts,omitempty"`
}

// DeleteFile is a file of deleted rows.
type DeleteFile struct {
	URL string `json:"url"`
	// Equality is set for an equality delete file, whose rows are the
	// values of FieldIDs that delete every older row equal to them;
	// otherwise it holds positions (file_path, pos).
	Equality bool  `json:"equality,omitempty"`
	FieldIDs []int `json:"field_ids,omitempty"`
	Sequence int64 `json:"sequence"`
	Records  int64 `json:"records"`
}

// Task is one data file to read and the deletes that apply to it.
type Task struct {
	File    DataFile     `json:"file"`
	Deletes []DeleteFile `json:"deletes,omitempty"`
}

// manifestReaders is how many manifests are read at once.
const manifestReaders = 16

// manifestFile is what planning reads of a manifest list's entry.
type manifestFile struct {
	Path     string
	SpecID   int32
	Sequence int64 // 0 in format 1
}

// manifestEntry is what planning reads of a manifest's entry.
type manifestEntry struct {
	Status      int32  // 0 existing, 1 added, 2 deleted
	Sequence    *int64 // nil: the manifest's (an entry it added)
	Content     int32  // 0 data, 1 position deletes, 2 equality deletes
	Path        string
	Format      string
	Partition   map[string]any
	Records     int64
	Size        int64
	ValueCounts map[int]int64
	NullCounts  map[int]int64
	NaNCounts   map[int]int64
	Lower       map[int][]byte
	Upper       map[int][]byte
	EqualityIDs []int
}

// readAvro decodes every datum of the Avro container file b, a record,
// with read. Records are read as maps, since the fields a writer wrote
// vary with the format version and the writer.
func readAvro[T any](b []byte, read func(avroRecord) (T, error)) (_ []T, err error) {
	r, err := ocf.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []T
	for {
		var m map[string]any
		err := r.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		v, err := read(avroRecord(m))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// avroRecord is a decoded Avro record, read field by field; a field of
// the wrong type is an error, one the writer left out is its zero.
type avroRecord map[string]any

func (r avroRecord) long(name string) (int64, bool, error) {
	switch v := r[name].(type) {
	case nil:
		return 0, false, nil
	case int32:
		return int64(v), true, nil
	case int64:
		return v, true, nil
	}
	return 0, false, fmt.Errorf("field %s is %T, not a number", name, r[name])
}

func (r avroRecord) str(name string) (string, error) {
	switch v := r[name].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	return "", fmt.Errorf("field %s is %T, not a string", name, r[name])
}

func (r avroRecord) record(name string) (avroRecord, error) {
	switch v := r[name].(type) {
	case nil:
		return avroRecord{}, nil
	case map[string]any:
		return avroRecord(v), nil
	}
	return nil, fmt.Errorf("field %s is %T, not a record", name, r[name])
}

// idMap reads one of Iceberg's maps keyed by field id, which Avro holds
// as an array of key-value records, with value reading each value.
func idMap[V any](r avroRecord, name string, value func(any) (V, bool)) (map[int]V, error) {
	switch v := r[name].(type) {
	case nil:
		return nil, nil
	case []any:
		m := make(map[int]V, len(v))
		for _, e := range v {
			kv, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("field %s holds %T, not key-value records", name, e)
			}
			k, ok, err := avroRecord(kv).long("key")
			if err != nil || !ok {
				return nil, fmt.Errorf("field %s: a key that is not a field id", name)
			}
			val, ok := value(kv["value"])
			if !ok {
				return nil, fmt.Errorf("field %s: a value of the wrong type (%T)", name, kv["value"])
			}
			m[int(k)] = val
		}
		return m, nil
	}
	return nil, fmt.Errorf("field %s is %T, not an array", name, r[name])
}

func readManifestFile(r avroRecord) (manifestFile, error) {
	var m manifestFile
	var err error
	if m.Path, err = r.str("manifest_path"); err != nil {
		return m, err
	}
	if m.Path == "" {
		return m, errors.New("an entry without manifest_path")
	}
	spec, _, err := r.long("partition_spec_id")
	if err != nil {
		return m, err
	}
	m.SpecID = int32(spec)
	m.Sequence, _, err = r.long("sequence_number")
	return m, err
}

func readManifestEntry(r avroRecord) (manifestEntry, error) {
	var e manifestEntry
	status, _, err := r.long("status")
	if err != nil {
		return e, err
	}
	e.Status = int32(status)
	if seq, ok, err := r.long("sequence_number"); err != nil {
		return e, err
	} else if ok {
		e.Sequence = &seq
	}
	d, err := r.record("data_file")
	if err != nil {
		return e, err
	}
	content, _, err := d.long("content")
	if err != nil {
		return e, err
	}
	e.Content = int32(content)
	if e.Path, err = d.str("file_path"); err != nil {
		return e, err
	}
	if e.Path == "" {
		return e, errors.New("an entry without file_path")
	}
	if e.Format, err = d.str("file_format"); err != nil {
		return e, err
	}
	p, err := d.record("partition")
	if err != nil {
		return e, err
	}
	e.Partition = p
	if e.Records, _, err = d.long("record_count"); err != nil {
		return e, err
	}
	if e.Size, _, err = d.long("file_size_in_bytes"); err != nil {
		return e, err
	}
	long := func(v any) (int64, bool) {
		n, ok, err := avroRecord{"v": v}.long("v")
		return n, ok && err == nil
	}
	raw := func(v any) ([]byte, bool) { b, ok := v.([]byte); return b, ok }
	if e.ValueCounts, err = idMap(d, "value_counts", long); err != nil {
		return e, err
	}
	if e.NullCounts, err = idMap(d, "null_value_counts", long); err != nil {
		return e, err
	}
	if e.NaNCounts, err = idMap(d, "nan_value_counts", long); err != nil {
		return e, err
	}
	if e.Lower, err = idMap(d, "lower_bounds", raw); err != nil {
		return e, err
	}
	if e.Upper, err = idMap(d, "upper_bounds", raw); err != nil {
		return e, err
	}
	switch ids := d["equality_ids"].(type) {
	case nil:
	case []any:
		for _, id := range ids {
			n, ok := long(id)
			if !ok {
				return e, fmt.Errorf("field equality_ids holds %T", id)
			}
			e.EqualityIDs = append(e.EqualityIDs, int(n))
		}
	default:
		return e, fmt.Errorf("field equality_ids is %T, not an array", ids)
	}
	return e, nil
}

// Plan lists the snapshot's data files, in the order of its manifest list
// and its manifests, each with the delete files that apply to it (the
// Iceberg spec's rules: a position delete to the files of its partition
// with a sequence number not above its own, an equality delete to those
// of its partition, or of every partition when it is unpartitioned, with
// a lower one). keep, when set, leaves out the data files it refuses (a
// filter proved none of their rows can pass).
func (t *Table) Plan(ctx context.Context, open store.Opener, keep func(DataFile) bool) ([]Task, error) {
	if t.Snapshot == nil {
		return nil, nil
	}
	list, err := readAll(ctx, open, URL(t.Snapshot.ManifestList))
	if err != nil {
		return nil, err
	}
	manifests, err := readAvro(list, readManifestFile)
	if err != nil {
		return nil, fmt.Errorf("iceberg: manifest list %s: %w", t.Snapshot.ManifestList, err)
	}
	entries := make([][]manifestEntry, len(manifests))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(manifestReaders)
	for i, m := range manifests {
		g.Go(func() error {
			b, err := readAll(gctx, open, URL(m.Path))
			if err != nil {
				return err
			}
			if entries[i], err = readAvro(b, readManifestEntry); err != nil {
				return fmt.Errorf("iceberg: manifest %s: %w", m.Path, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	var tasks []Task
	var deletes []DeleteFile
	var deleteParts []partition
	for i, es := range entries {
		m := manifests[i]
		for _, e := range es {
			if e.Status == 2 {
				continue // deleted in this snapshot
			}
			// An entry added by its manifest's snapshot may leave its
			// sequence number to the manifest's (format 2 inheritance).
			seq := m.Sequence
			if e.Sequence != nil {
				seq = *e.Sequence
			}
			df := &e
			switch df.Content {
			case 0:
				if df.Format != "PARQUET" {
					return nil, fmt.Errorf("iceberg: %s is %s; this sluice reads Parquet data files", df.Path, df.Format)
				}
				f := DataFile{
					Path: df.Path, URL: URL(df.Path), Records: df.Records, Size: df.Size,
					SpecID: m.SpecID, Partition: df.Partition, Sequence: seq,
					Lower: df.Lower, Upper: df.Upper,
					NullCounts: df.NullCounts, ValueCounts: df.ValueCounts, NaNCounts: df.NaNCounts,
				}
				if f.Identity, err = t.identity(m.SpecID, df.Partition); err != nil {
					return nil, fmt.Errorf("iceberg: manifest %s: %s: %w", m.Path, df.Path, err)
				}
				if keep == nil || keep(f) {
					tasks = append(tasks, Task{File: f})
				}
			case 1, 2:
				if df.Format != "PARQUET" {
					// Deletion vectors (format 3) are Puffin blobs.
					return nil, fmt.Errorf("iceberg: delete file %s is %s; this sluice reads Parquet delete files", df.Path, df.Format)
				}
				d := DeleteFile{URL: URL(df.Path), Sequence: seq, Records: df.Records}
				if df.Content == 2 {
					d.Equality = true
					d.FieldIDs = df.EqualityIDs
					if len(d.FieldIDs) == 0 {
						return nil, fmt.Errorf("iceberg: equality delete file %s names no fields", df.Path)
					}
				}
				deletes = append(deletes, d)
				deleteParts = append(deleteParts, partition{spec: m.SpecID, values: df.Partition})
			default:
				return nil, fmt.Errorf("iceberg: manifest %s: an entry of content %d", m.Path, df.Content)
			}
		}
	}
	for i := range tasks {
		f := &tasks[i].File
		for j, d := range deletes {
			p := deleteParts[j]
			switch {
			case d.Equality && d.Sequence > f.Sequence && (t.unpartitioned(p.spec) || p.matches(f)):
			case !d.Equality && d.Sequence >= f.Sequence && p.matches(f):
			default:
				continue
			}
			tasks[i].Deletes = append(tasks[i].Deletes, d)
		}
	}
	return tasks, nil
}

// partition is a partition of one spec.
type partition struct {
	spec   int32
	values map[string]any
}

func (p partition) matches(f *DataFile) bool {
	if p.spec != f.SpecID || len(p.values) != len(f.Partition) {
		return false
	}
	for k, v := range p.values {
		w, ok := f.Partition[k]
		if !ok || !reflect.DeepEqual(v, w) {
			return false
		}
	}
	return true
}

func (t *Table) unpartitioned(id int32) bool {
	s, ok := t.specs[id]
	return !ok || s.unpartitioned()
}

// identity is the values of a data file's identity partition fields
// (see DataFile.Identity), from its partition tuple.
func (t *Table) identity(specID int32, values map[string]any) (map[int][]byte, error) {
	var out map[int][]byte
	for _, pf := range t.specs[specID].Fields {
		v, ok := values[pf.Name]
		if pf.Transform != "identity" || !ok {
			continue
		}
		f, ok := t.Field(pf.SourceID)
		if !ok {
			continue // a column dropped since, read by no one
		}
		if out == nil {
			out = map[int][]byte{}
		}
		if v == nil {
			out[f.ID] = nil
			continue
		}
		b, err := avroValue(f.Type, v)
		if err != nil {
			return nil, fmt.Errorf("partition value %s: %w", pf.Name, err)
		}
		out[f.ID] = b
	}
	return out, nil
}
