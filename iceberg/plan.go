package iceberg

import (
	"bytes"
	"context"
	"fmt"
	"reflect"

	ice "github.com/apache/iceberg-go"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/store"
)

// DataFile is one data file of a snapshot.
type DataFile struct {
	// Path is the file's location as the table records it (position
	// deletes name it so); URL is the store URL for it.
	Path    string
	URL     string
	Records int64
	Size    int64
	// SpecID and Partition are the partition spec the file was written
	// under and its partition values by partition field id.
	SpecID    int32
	Partition map[int]any
	// Sequence is the file's data sequence number: deletes of a later
	// sequence number apply to it.
	Sequence int64
	// Lower and Upper are the column bounds the writer recorded, by
	// field id, in Iceberg's single-value binary form; NullCounts and
	// ValueCounts its counts.
	Lower, Upper            map[int][]byte
	NullCounts, ValueCounts map[int]int64
}

// DeleteFile is a file of deleted rows.
type DeleteFile struct {
	URL string
	// Equality is set for an equality delete file, whose rows are the
	// values of FieldIDs that delete every older row equal to them;
	// otherwise it holds positions (file_path, pos).
	Equality bool
	FieldIDs []int
	Sequence int64
	Records  int64
}

// Task is one data file to read and the deletes that apply to it.
type Task struct {
	File    DataFile
	Deletes []DeleteFile
}

// manifestReaders is how many manifests are read at once.
const manifestReaders = 16

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
	manifests, err := ice.ReadManifestList(bytes.NewReader(list))
	if err != nil {
		return nil, fmt.Errorf("iceberg: manifest list %s: %w", t.Snapshot.ManifestList, err)
	}
	entries := make([][]ice.ManifestEntry, len(manifests))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(manifestReaders)
	for i, m := range manifests {
		g.Go(func() error {
			b, err := readAll(gctx, open, URL(m.FilePath()))
			if err != nil {
				return err
			}
			es, err := ice.ReadManifest(m, bytes.NewReader(b), true)
			if err != nil {
				return fmt.Errorf("iceberg: manifest %s: %w", m.FilePath(), err)
			}
			entries[i] = es
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	var tasks []Task
	var deletes []DeleteFile
	var deleteParts []partition
	for _, es := range entries {
		for _, e := range es {
			df := e.DataFile()
			format := df.FileFormat()
			switch df.ContentType() {
			case ice.EntryContentData:
				if format != ice.ParquetFile {
					return nil, fmt.Errorf("iceberg: %s is %s; this sluice reads Parquet data files", df.FilePath(), format)
				}
				f := DataFile{
					Path: df.FilePath(), URL: URL(df.FilePath()), Records: df.Count(), Size: df.FileSizeBytes(),
					SpecID: df.SpecID(), Partition: df.Partition(), Sequence: e.SequenceNum(),
					Lower: df.LowerBoundValues(), Upper: df.UpperBoundValues(),
					NullCounts: df.NullValueCounts(), ValueCounts: df.ValueCounts(),
				}
				if keep == nil || keep(f) {
					tasks = append(tasks, Task{File: f})
				}
			case ice.EntryContentPosDeletes, ice.EntryContentEqDeletes:
				if format != ice.ParquetFile {
					// Deletion vectors (format 3) are Puffin blobs.
					return nil, fmt.Errorf("iceberg: delete file %s is %s; this sluice reads Parquet delete files", df.FilePath(), format)
				}
				d := DeleteFile{URL: URL(df.FilePath()), Sequence: e.SequenceNum(), Records: df.Count()}
				if df.ContentType() == ice.EntryContentEqDeletes {
					d.Equality, d.FieldIDs = true, df.EqualityFieldIDs()
					if len(d.FieldIDs) == 0 {
						return nil, fmt.Errorf("iceberg: equality delete file %s names no fields", df.FilePath())
					}
				}
				deletes = append(deletes, d)
				deleteParts = append(deleteParts, partition{spec: df.SpecID(), values: df.Partition()})
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
	values map[int]any
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

func (t *Table) unpartitioned(spec int32) bool {
	s, ok := t.specOf(spec)
	return !ok || s.IsUnpartitioned()
}
