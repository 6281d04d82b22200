//go:build duckdb_arrow

package main

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/duckdb/duckdb-go/v2"
)

// writeParquet reads the Arrow IPC file in into memory and times DuckDB
// writing it to out as Parquet, from an Arrow view of those batches.
func writeParquet(in, out, compression string, threads int) error {
	if out == "" {
		return fmt.Errorf("-write needs -out")
	}
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	recs, schema, err := readArrow(b)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	var rows int64
	for _, rec := range recs {
		rows += rec.NumRows()
	}
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	rr, err := array.NewRecordReader(schema, recs)
	if err != nil {
		return err
	}
	defer rr.Release()

	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if threads > 0 {
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET threads = %d", threads)); err != nil {
			return err
		}
	}
	var release func()
	err = conn.Raw(func(dc any) error {
		a, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		release, err = a.RegisterView(rr, "src")
		return err
	})
	if err != nil {
		return err
	}
	defer release()
	q := fmt.Sprintf("COPY src TO '%s' (FORMAT parquet, COMPRESSION %s)", strings.ReplaceAll(out, "'", "''"), compression)
	start := time.Now()
	if _, err := conn.ExecContext(ctx, q); err != nil {
		return err
	}
	elapsed := time.Since(start)
	fmt.Printf("rows %d\nelapsed %.6f\n", rows, elapsed.Seconds())
	return nil
}

// readArrow reads an Arrow IPC file, or an IPC stream, into memory.
func readArrow(b []byte) ([]arrow.RecordBatch, *arrow.Schema, error) {
	var recs []arrow.RecordBatch
	if bytes.HasPrefix(b, []byte("ARROW1")) {
		r, err := ipc.NewFileReader(bytes.NewReader(b))
		if err != nil {
			return nil, nil, err
		}
		defer r.Close()
		for i := range r.NumRecords() {
			rec, err := r.RecordBatch(i)
			if err != nil {
				return nil, nil, err
			}
			rec.Retain()
			recs = append(recs, rec)
		}
		return recs, r.Schema(), nil
	}
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	defer r.Release()
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	return recs, r.Schema(), r.Err()
}
