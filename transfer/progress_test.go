package transfer_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/transfer"
)

// TestProgressCountsWhatTheStoreTook: Copy's progress counts bytes once
// the destination holds them, not once they sit in an upload's buffer. The
// copy is stopped the moment progress first hears of any bytes: whatever
// it heard of must then be in the destination.
func TestProgressCountsWhatTheStoreTook(t *testing.T) {
	ctx := t.Context()
	srv := embeddedBucket(t, "bkt")
	dst, _, err := store.Open(ctx, "s3://bkt/", store.Options{Endpoint: srv.Endpoint, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	src, _, err := store.Open(ctx, "mem://cp-progress/", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	data := bytes.Repeat([]byte("sluice"), 500_000) // 3 MB: one request, below a part
	if _, err := src.Put(ctx, "x.bin", bytes.NewReader(data), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	info, err := src.Stat(ctx, "x.bin")
	if err != nil {
		t.Fatal(err)
	}

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var counted int64
	progress := func(n int64) {
		counted += n // one object: one writer calls this
		cancel()
	}
	_, err = transfer.Copy(cctx, src, dst, []transfer.Job{{Src: info, Dst: "x.bin"}}, transfer.Options{Progress: progress})
	var have int64
	if got, serr := dst.Stat(ctx, "x.bin"); serr == nil {
		have = got.Size
	} else if !errors.Is(serr, store.ErrNotFound) {
		t.Fatal(serr)
	}
	if counted != have {
		t.Errorf("progress counted %d bytes; the destination holds %d (copy: %v)", counted, have, err)
	}
}
