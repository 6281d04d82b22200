package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/format"
)

// writeFlags are the Parquet options of what writes a file (sluice scan
// -o, the write stage): package format's Options.
type writeFlags struct {
	compression  string
	rowGroupRows int64
}

func (w *writeFlags) register(fs *pflag.FlagSet, who string) {
	fs.StringVar(&w.compression, "compression", "snappy", who+"Parquet compression: "+strings.Join(format.Compressions, ", "))
	fs.Int64Var(&w.rowGroupRows, "row-group-rows", format.ParquetRowGroupRows, who+"most rows in a Parquet row group")
}

// options checks the flags; what is the flag's owner, for messages.
func (w *writeFlags) options(what string) (format.Options, error) {
	o := format.Options{Compression: w.compression, RowGroupRows: w.rowGroupRows}
	if w.rowGroupRows <= 0 {
		return o, usagef("%s--row-group-rows %d: want at least 1", what, w.rowGroupRows)
	}
	if err := format.CheckCompression(w.compression); err != nil {
		return o, usagef("%s--compression: %v", what, err)
	}
	return o, nil
}
