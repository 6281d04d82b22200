package cli

import (
	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/plan"
)

// parquetOptions checks the Parquet options of what writes a file (plan.BindParquet's
// flags); what is the flag's owner, for messages.
func parquetOptions(w *plan.Write, what string) (format.Options, error) {
	o := format.Options{Compression: w.Compression, RowGroupRows: w.RowGroupRows}
	if w.RowGroupRows <= 0 {
		return o, usagef("%s--row-group-rows %d: want at least 1", what, w.RowGroupRows)
	}
	if err := format.CheckCompression(w.Compression); err != nil {
		return o, usagef("%s--compression: %v", what, err)
	}
	return o, nil
}
