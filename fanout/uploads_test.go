package fanout

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"path"
	"testing"
	"time"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/internal/fanouthook"
	"github.com/sluice-data/sluice/internal/s3test"
	"github.com/sluice-data/sluice/store"
)

// An upload left under the job's prefix (an attempt killed while it
// wrote its output) is aborted when the job ends, as its objects are
// deleted: nothing of the job stays in the bucket, billed and unseen.
func TestJobAbortsItsUploads(t *testing.T) {
	endpoint, bucket := s3test.Bucket(t)
	t.Setenv("AWS_ENDPOINT_URL", endpoint)
	t.Setenv("AWS_REGION", "us-east-1")
	var b [6]byte
	rand.Read(b[:])
	base := "s3://" + bucket + "/fanout-uploads-" + hex.EncodeToString(b[:]) + "/"
	taxi := testData(t)
	p := mustPlan(t, "S "+taxi)
	opts := testOptions(base)
	opts.PieceBytes = 64 << 20

	// The orphan is written through a store of the test's own, which
	// outlives the job's.
	st, prefix, err := store.Open(context.Background(), base, store.Options{Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var orphan *store.Writer
	hooks := &fanouthook.Driver{AfterSpec: func(ctx context.Context, _ *store.Store, key string) {
		w, err := st.NewWriter(ctx, path.Dir(key)+"/p0/t00000-orphan.arrows", store.WriteOptions{PartSize: 5 << 20})
		if err != nil {
			t.Error(err)
			return
		}
		orphan = w
		if _, err := w.Write(bytes.Repeat([]byte{1}, 6<<20)); err != nil {
			t.Error(err)
		}
		// The first part's upload has begun once the store lists it (polled:
		// the writer tells no one).
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			n := 0
			st.ListUploads(ctx, path.Dir(key)+"/", func(store.Upload) error { n++; return nil })
			if n > 0 {
				return
			}
		}
		t.Error("the orphan upload never started")
	}}
	ctx := fanouthook.WithDriver(context.Background(), hooks)
	rows(t, func(env exec.Env) error { opts.Env = env; return Run(ctx, p, opts) })
	if orphan == nil {
		t.Fatal("the hook made no upload")
	}
	defer orphan.Abort()
	var left []string
	if err := st.ListUploads(context.Background(), prefix, func(u store.Upload) error { left = append(left, u.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	objs, _ := st.List(context.Background(), prefix)
	if len(left) != 0 || len(objs) != 0 {
		t.Fatalf("the job left uploads %q and %d objects", left, len(objs))
	}
}
