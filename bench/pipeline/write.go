package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/internal/arrowsize"
	"github.com/sluice-data/sluice/internal/measure"
)

// writeComparison is the Parquet write comparison: the same Arrow data
// (rows of lineitem, all columns, in memory) written as Parquet with
// snappy to a local file by sluice (package format, in this process)
// and by DuckDB (COPY ... TO ... (FORMAT parquet) from an Arrow view,
// in its helper), in alternating rounds of the same run. The times are
// of the write alone, after the data is in memory; the medians, their
// ratio and the median of the round-by-round ratios are printed, and
// the two files must read back the same, by sluice scan (its CSV of each,
// hashed) and by DuckDB (its helper's -digest).
func writeComparison(sluiceBin, duckBin, duckWhy, lineitem, tmp string, rows int64, runs int) error {
	src := filepath.Join(filepath.Dir(lineitem), fmt.Sprintf("%s-head-%d.arrow", filepath.Base(lineitem), rows))
	if _, err := os.Stat(src); err != nil {
		fmt.Fprintf(os.Stderr, "writing %d rows of %s to %s\n", rows, lineitem, src)
		cmd := exec.Command(sluiceBin, "run", fmt.Sprintf("scan %s | head %d | write %s.tmp.arrow", shellQuote(lineitem), rows, shellQuote(src)))
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("make %s: %w", src, err)
		}
		if err := os.Rename(src+".tmp.arrow", src); err != nil {
			return err
		}
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	r, err := ipc.NewFileReader(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	defer r.Close()
	var recs []arrow.RecordBatch
	var n, size int64
	for i := range r.NumRecords() {
		rec, err := r.RecordBatch(i)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		rec.Retain()
		recs = append(recs, rec)
		n += rec.NumRows()
		size += arrowsize.Record(rec)
	}
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	fmt.Printf("\nParquet write (snappy) of %d rows of lineitem, all %d columns, %.0f MiB of Arrow in memory, to local files (%s); %d runs, medians\n",
		n, r.Schema().NumFields(), float64(size)/(1<<20), tmp, runs)

	sluiceOut, duckOut := filepath.Join(tmp, "sluice.parquet"), filepath.Join(tmp, "duckdb.parquet")
	sluiceWrite := func() (float64, error) {
		f, err := os.Create(sluiceOut)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		start := time.Now()
		w, err := format.NewWriterOptions(f, format.Parquet, r.Schema(), memory.DefaultAllocator, format.Options{Compression: "snappy"})
		if err != nil {
			return 0, err
		}
		for _, rec := range recs {
			if err := w.Write(rec); err != nil {
				w.Abort()
				return 0, err
			}
		}
		if err := w.Close(); err != nil {
			return 0, err
		}
		return time.Since(start).Seconds(), nil
	}
	duckWrite := func() (float64, error) {
		_, out, err := measure.Run(exec.Command(duckBin, "-write", src, "-out", duckOut, "-compression", "snappy"))
		if err != nil {
			return 0, err
		}
		var secs float64
		if i := strings.LastIndex(out, "elapsed "); i >= 0 {
			fmt.Sscanf(out[i:], "elapsed %f", &secs)
		}
		return secs, nil
	}
	// Warm up (and the first write of each file), then alternate.
	if _, err := sluiceWrite(); err != nil {
		return fmt.Errorf("sluice: %w", err)
	}
	if duckBin == "" {
		fmt.Printf("DuckDB not measured: %s\n", duckWhy)
	} else if _, err := duckWrite(); err != nil {
		return fmt.Errorf("duckdb: %w", err)
	}
	var ss, ds, paired []float64
	for i := range runs {
		forms := []func() error{
			func() error {
				s, err := sluiceWrite()
				ss = append(ss, s)
				return err
			},
		}
		if duckBin != "" {
			forms = append(forms, func() error {
				d, err := duckWrite()
				ds = append(ds, d)
				return err
			})
		}
		for k := range forms {
			if err := forms[(i+k)%len(forms)](); err != nil {
				return err
			}
		}
		if duckBin != "" {
			paired = append(paired, ss[i]/ds[i])
		}
		runtime.GC()
	}
	med := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	mib := float64(size) / (1 << 20)
	st, _ := os.Stat(sluiceOut)
	s := med(ss)
	fmt.Printf("%-8s %9.3f s %8.1f MiB/s of Arrow   file %6.1f MiB   (runs %s)\n", "sluice", s, mib/s, float64(st.Size())/(1<<20), secs(ss))
	if duckBin == "" {
		return nil
	}
	dt, _ := os.Stat(duckOut)
	d := med(ds)
	fmt.Printf("%-8s %9.3f s %8.1f MiB/s of Arrow   file %6.1f MiB   (runs %s)\n", "duckdb", d, mib/d, float64(dt.Size())/(1<<20), secs(ds))
	fmt.Printf("sluice/DuckDB time: %.2f (round by round %.2f)\n", s/d, med(paired))
	a, err := csvDigest(sluiceBin, sluiceOut)
	if err != nil {
		return err
	}
	bd, err := csvDigest(sluiceBin, duckOut)
	if err != nil {
		return err
	}
	if a == bd {
		fmt.Println("read back by sluice scan: the two files hold the same rows")
	} else {
		fmt.Println("read back by sluice scan: the two files DIFFER")
	}
	a, err = duckDigest(duckBin, sluiceOut)
	if err != nil {
		return err
	}
	if bd, err = duckDigest(duckBin, duckOut); err != nil {
		return err
	}
	if a == bd {
		fmt.Printf("read back by DuckDB: the two files hold the same rows (%s)\n", strings.SplitN(a, "\n", 2)[0])
	} else {
		fmt.Println("read back by DuckDB: the two files DIFFER")
	}
	return nil
}

// duckDigest is DuckDB's count and hash of a Parquet file's rows (its
// helper's -digest), an independent reader of both files.
func duckDigest(duckBin, path string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(duckBin, "-digest", path)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("DuckDB read back %s: %v: %s", path, err, firstLine(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

func secs(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, " ")
}

// csvDigest hashes a Parquet file's rows as sluice reads them (CSV, in
// file order).
func csvDigest(sluiceBin, path string) (string, error) {
	h := sha256.New()
	cmd := exec.Command(sluiceBin, "run", fmt.Sprintf("scan %s | to-csv", shellQuote(path)))
	cmd.Stdout = h
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("read back %s: %v: %s", path, err, firstLine(errb.String()))
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}
