// Package arrowtest holds helpers shared by tests that compare Arrow data
// produced along different paths (scan, Flight, IPC and Parquet files).
package arrowtest

import (
	"fmt"
	"hash/fnv"

	"github.com/apache/arrow-go/v18/arrow"
)

// Checksum hashes every value of every row, in row order, whatever the
// batch boundaries: two paths that deliver the same rows in the same
// order give the same Checksum.
type Checksum struct {
	Rows int64
	H    uint64
}

// Add folds in the rows of rec.
func (c *Checksum) Add(rec arrow.RecordBatch) {
	h := fnv.New64a()
	for r := 0; r < int(rec.NumRows()); r++ {
		h.Reset()
		for _, col := range rec.Columns() {
			fmt.Fprintf(h, "%s\x00", col.ValueStr(r))
		}
		c.H = c.H*1099511628211 ^ h.Sum64()
		c.Rows++
	}
}

func (c Checksum) String() string { return fmt.Sprintf("%d rows, checksum %016x", c.Rows, c.H) }
