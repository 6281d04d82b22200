package scan

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/internal/arrowtest"
	"github.com/sluice-data/sluice/store"
)

// readAny scans data as a one-file dataset and checks that it either
// reads or fails with one line naming the file, within 20s, leaving no
// Arrow memory behind; a panic fails the test too. It returns the rows
// read, or -1 for a clean failure.
func readAny(t *testing.T, data []byte) int64 {
	t.Helper()
	mem := arrowtest.LeakChecked(t)
	type result struct {
		rows int64
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		rows, err := readData(data, mem)
		ch <- result{rows, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.rows
	case <-time.After(20 * time.Second):
		t.Fatalf("reading a %d-byte file took over 20s", len(data))
		return 0
	}
}

func readData(data []byte, mem memory.Allocator) (int64, error) {
	st := store.New(store.NewMemDriver(), "mem://fuzz/")
	if _, err := st.Put(context.Background(), "f/x.parquet", bytes.NewReader(data), store.WriteOptions{}); err != nil {
		return 0, err
	}
	ctx := context.Background()
	clean := func(err error) error {
		msg := err.Error()
		if !strings.HasPrefix(msg, "scan mem://fuzz/f/x.parquet: ") || strings.Contains(msg, "\n") {
			return fmt.Errorf("not one line naming the file: %q", msg)
		}
		return nil
	}
	ds, err := Open(ctx, st, "f/x.parquet", Options{BatchRows: 100, Memory: 8 << 20, Mem: mem})
	if err != nil {
		return -1, clean(err)
	}
	s := ds.Scan(ctx)
	defer s.Close()
	var rows int64
	for s.Next() {
		rows += s.Batch().NumRows()
		s.Batch().Release()
	}
	if err := s.Err(); err != nil {
		return -1, clean(err)
	}
	return rows, nil
}

// smallFile is a valid Parquet file of the generated lineitem table,
// a few row groups of a few hundred rows.
func smallFile(t testing.TB) []byte {
	_, files := genStore(t, "lineitem", gen.Options{Rows: 1000, Files: 1, Seed: 9, RowGroupRows: 300})
	return files[0]
}

// TestTruncated: every prefix of a file fails cleanly (its footer is gone).
func TestTruncated(t *testing.T) {
	data := smallFile(t)
	step := max(len(data)/300, 1)
	for n := 0; n < len(data); n += step {
		if rows := readAny(t, data[:n]); rows != -1 {
			t.Fatalf("truncated to %d of %d bytes, read %d rows", n, len(data), rows)
		}
	}
	if rows := readAny(t, data); rows != 1000 {
		t.Fatalf("whole file: %d rows", rows)
	}
}

// TestCorruptFooter flips each byte of the footer in turn (and sets it to
// 0xff): each read succeeds or fails cleanly, never panics.
func TestCorruptFooter(t *testing.T) {
	data := smallFile(t)
	flen := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	start := len(data) - 8 - flen
	failed := 0
	step := max((len(data)-start)/400, 1)
	for i := start; i < len(data); i += step {
		for _, v := range []byte{data[i] ^ 0xff, 0xff, 0} {
			c := bytes.Clone(data)
			c[i] = v
			if readAny(t, c) < 0 {
				failed++
			}
		}
	}
	t.Logf("%d of %d corrupt footers failed cleanly, the rest read", failed, 3*((len(data)-start+step-1)/step))
}

// FuzzScanFile feeds corrupt and truncated Parquet files to a scan.
func FuzzScanFile(f *testing.F) {
	// Small seeds: the fuzzer minimises what it finds by re-running it.
	st := memStore("seed")
	small := put(f, st, "a.parquet", 0, 50, 20, nil)
	f.Add(small)
	f.Add(small[:len(small)/2])
	f.Add(small[len(small)-100:])
	// Some of the Parquet format project's files, when they are there.
	if root, err := filepath.Abs("../../shared/testdata/parquet-testing/data"); err == nil {
		for _, name := range []string{"alltypes_plain.parquet", "nested_lists.snappy.parquet", "dict-page-offset-zero.parquet",
			"nullable.impala.parquet", "datapage_v2.snappy.parquet", "rle_boolean_encoding.parquet",
			"hadoop_lz4_compressed.parquet", "non_hadoop_lz4_compressed.parquet"} {
			if b, err := os.ReadFile(filepath.Join(root, name)); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		readAny(t, data)
	})
}
