package scanbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/store"
)

// completeMarker is written after the last file of a generated dataset;
// its name starts with "_" so scan skips it, like _SUCCESS.
const completeMarker = "_SCANBENCH_COMPLETE"

// Lineitem returns the file:// URL of a generated lineitem dataset of
// rows rows in files files (seed 1) under cacheDir, generating it first
// unless an earlier call completed it: a dataset of a GiB takes tens of
// seconds to write, and every run of the benchmark reads the same one.
// A directory left half-written by an interrupted call is regenerated.
func Lineitem(ctx context.Context, cacheDir string, rows int64, files int, log func(string)) (string, error) {
	dir, err := filepath.Abs(filepath.Join(cacheDir, fmt.Sprintf("lineitem-%d-rows-%d-files", rows, files)))
	if err != nil {
		return "", err
	}
	url := "file://" + dir + "/"
	if _, err := os.Stat(filepath.Join(dir, completeMarker)); err == nil {
		return url, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if log != nil {
		log(fmt.Sprintf("generating lineitem, %d rows in %d files, into %s (once; later runs reuse it)", rows, files, dir))
	}
	st, _, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		return "", err
	}
	defer st.Close()
	if _, err := gen.Lineitem(ctx, st, "", gen.Options{Rows: rows, Files: files, Seed: 1}); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, completeMarker), nil, 0o644); err != nil {
		return "", err
	}
	return url, nil
}
