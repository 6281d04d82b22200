// Package format is sluice's one output layer: it chooses an output
// format by a name's suffix or by name (a --format flag), and writes
// Arrow record batches in it to any io.Writer or, committed only at the
// end, to an object in a store. Every command and stage that writes a
// file (sluice scan -o, get -o, the write and partition stages) goes
// through it, so they accept the same suffixes and write the same bytes
// for the same batches.
//
//	format    suffixes                 what is written
//	arrow     .arrow .feather .ipc     Arrow IPC file
//	arrows    .arrows                  Arrow IPC stream
//	parquet   .parquet .pq             Parquet: statistics, the Arrow schema stored, and
//	                                   Options' compression (snappy) and row-group size;
//	                                   the columns of a row group encoded in parallel
//	csv       .csv                     CSV with a header line, nulls as empty fields
//	jsonl     .jsonl .ndjson           JSON lines: one object a row, keys in column order
//
// Only the Arrow IPC file can list its batches in an order other than
// the one they were written in (WriteAt): its footer lists them by a
// key. The IPC file, CSV and JSON lines hold dictionary columns as their
// values (a file holds one dictionary a column; each batch's may differ);
// the IPC stream and Parquet keep them.
//
// Nothing written is complete before Close returns nil. After an error,
// or on Abort, no ending (footer, end-of-stream marker) is written, so a
// reader of what did reach the writer sees a broken file, never a short
// one that looks whole; an Object is not there at all.
//
// format does not read (package scan reads Parquet; exec reads the
// others) and knows nothing of datasets or pipelines. It sits above
// store and below exec and collect.
package format
