package scanbench

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// ScanResult is one timed scan.
type ScanResult struct {
	Elapsed time.Duration `json:"-"`
	Seconds float64       `json:"seconds"`
	// FirstBatchSeconds is scan's own time to its first batch, Open
	// included (scan.Stats.FirstBatch).
	FirstBatchSeconds float64 `json:"first_batch_seconds"`
	MiBps             float64 `json:"mib_s"` // file bytes of the dataset (or of the projection's chunks) per second
	// BytesNeeded and BytesFetched are scan's own: the footers and column
	// chunks it must read, and what came off the wire.
	BytesNeeded  int64      `json:"bytes_needed"`
	BytesFetched int64      `json:"bytes_fetched"`
	Requests     int64      `json:"requests"`
	Retries      int64      `json:"retries"`
	Hedges       int64      `json:"hedges"`
	Rows         int64      `json:"rows"`
	CPU          CPU        `json:"cpu"`
	Sum          *Checksum  `json:"-"`
	Stats        scan.Stats `json:"-"`
}

// runScan opens the dataset and scans it, releasing every batch, and
// summing it when sum is set.
func runScan(ctx context.Context, st *store.Store, pattern string, opts scan.Options, sum bool) (ScanResult, error) {
	start := time.Now()
	cpu := sampleCPU()
	ds, err := scan.Open(ctx, st, pattern, opts)
	if err != nil {
		return ScanResult{}, err
	}
	s := ds.Scan(ctx)
	var cs *Checksum
	if sum {
		cs = &Checksum{}
	}
	for s.Next() {
		b := s.Batch()
		if cs != nil {
			cs.Add(b)
		}
		b.Release()
	}
	s.Close()
	elapsed := time.Since(start)
	used := cpuSince(cpu)
	if err := s.Err(); err != nil {
		return ScanResult{}, err
	}
	stats := s.Stats()
	return ScanResult{
		Elapsed:           elapsed,
		Seconds:           elapsed.Seconds(),
		FirstBatchSeconds: stats.FirstBatch.Seconds(),
		BytesNeeded:       stats.BytesNeeded,
		BytesFetched:      stats.BytesFetched,
		Requests:          stats.Requests,
		Retries:           stats.Fetch.Retries,
		Hedges:            stats.Fetch.Hedges,
		Rows:              stats.Rows,
		CPU:               used,
		Sum:               cs,
		Stats:             stats,
	}, nil
}

// chunkBytes is what a projection of the dataset must read at the least:
// each file's footer (metadata, its length and the magic) and the column
// chunks of the named top-level columns (their total compressed size,
// dictionary page included). It is computed here from the footers,
// independently of scan's own accounting.
func chunkBytes(ctx context.Context, st *store.Store, objs []object, columns []string) (int64, error) {
	want := map[string]bool{}
	for _, c := range columns {
		want[c] = true
	}
	sizes := make([]int64, len(objs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, o := range objs {
		g.Go(func() error {
			md, footer, err := readFooter(gctx, st, o)
			if err != nil {
				return err
			}
			n := footer
			for rg := range md.NumRowGroups() {
				r := md.RowGroup(rg)
				for leaf := range md.Schema.NumColumns() {
					if !want[md.Schema.Column(leaf).ColumnPath()[0]] {
						continue
					}
					cc, err := r.ColumnChunk(leaf)
					if err != nil {
						return err
					}
					n += cc.TotalCompressedSize()
				}
			}
			sizes[i] = n
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	var total int64
	for _, n := range sizes {
		total += n
	}
	return total, nil
}

// readFooter reads a file's metadata and the size of its footer.
func readFooter(ctx context.Context, st *store.Store, o object) (*metadata.FileMetaData, int64, error) {
	tail, err := readRange(ctx, st, o.key, store.Range{Off: o.size - 8, Len: 8})
	if err != nil {
		return nil, 0, err
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if string(tail[4:]) != "PAR1" || n+8 > o.size {
		return nil, 0, fmt.Errorf("%s: not a Parquet file", st.URL(o.key))
	}
	b, err := readRange(ctx, st, o.key, store.Range{Off: o.size - 8 - n, Len: n})
	if err != nil {
		return nil, 0, err
	}
	md, err := metadata.NewFileMetaData(b, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", st.URL(o.key), err)
	}
	return md, n + 8, nil
}

func readRange(ctx context.Context, st *store.Store, key string, r store.Range) ([]byte, error) {
	rc, _, err := st.ReadRange(ctx, key, r, store.ReadOptions{})
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b := make([]byte, r.Len)
	_, err = io.ReadFull(rc, b)
	return b, err
}
