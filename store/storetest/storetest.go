// Package storetest is the conformance suite every store driver passes. The
// in-memory driver is the reference; file, the embedded S3 endpoint and a
// real MinIO run the same tests.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	mrand "math/rand/v2"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/store"
	"golang.org/x/sync/errgroup"
)

// Run runs the suite. open returns a store the suite may write into; every
// test works under its own fresh prefix and deletes what it wrote.
func Run(t *testing.T, open func(t *testing.T) *store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, st *store.Store, prefix string)
	}{
		{"RoundTrip", testRoundTrip},
		{"Multipart", testMultipart},
		{"Ranges", testRanges},
		{"EmptyObject", testEmptyObject},
		{"IfMatch", testIfMatch},
		{"List", testList},
		{"NotFound", testNotFound},
		{"AbortLeavesNothing", testAbort},
		{"CancelLeavesNothing", testCancel},
		{"Overwrite", testOverwrite},
		{"Delete", testDelete},
		{"InvalidKeys", testInvalidKeys},
		{"ReaderAtConcurrent", testReaderAt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := open(t)
			var rnd [6]byte
			_, _ = rand.Read(rnd[:])
			prefix := "conformance-" + hex.EncodeToString(rnd[:]) + "/"
			t.Cleanup(func() { cleanup(t, st, prefix) })
			tc.fn(t, st, prefix)
		})
	}
}

func cleanup(t *testing.T, st *store.Store, prefix string) {
	ctx := context.Background()
	objs, err := st.List(ctx, prefix)
	if err != nil {
		t.Errorf("cleanup list: %v", err)
		return
	}
	for _, o := range objs {
		if err := st.Delete(ctx, o.Key); err != nil {
			t.Errorf("cleanup delete: %v", err)
		}
	}
}

func data(n int, seed uint64) []byte {
	r := mrand.New(mrand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func put(t *testing.T, st *store.Store, key string, b []byte, opts store.WriteOptions) {
	t.Helper()
	n, err := st.Put(context.Background(), key, bytes.NewReader(b), opts)
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	if n != int64(len(b)) {
		t.Fatalf("put %s: wrote %d of %d bytes", key, n, len(b))
	}
}

func read(t *testing.T, st *store.Store, key string, r store.Range) ([]byte, store.ObjectInfo) {
	t.Helper()
	rc, info, err := st.ReadRange(context.Background(), key, r, store.ReadOptions{})
	if err != nil {
		t.Fatalf("read %s %+v: %v", key, r, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s %+v body: %v", key, r, err)
	}
	return b, info
}

func testRoundTrip(t *testing.T, st *store.Store, prefix string) {
	key := prefix + "a/b/obj.bin"
	want := data(100_000, 1)
	put(t, st, key, want, store.WriteOptions{})
	got, info := read(t, st, key, store.All())
	if !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, differ from the %d written", len(got), len(want))
	}
	if info.Size != int64(len(want)) || info.ETag == "" {
		t.Fatalf("read info = %+v, want size %d and an ETag", info, len(want))
	}
	st2, err := st.Stat(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if st2.Size != info.Size || st2.ETag != info.ETag || st2.Key != key {
		t.Fatalf("stat = %+v, read info = %+v", st2, info)
	}
	all, err := st.ReadAll(context.Background(), key)
	if err != nil || !bytes.Equal(all, want) {
		t.Fatalf("ReadAll: err %v, equal %v", err, bytes.Equal(all, want))
	}
}

func testMultipart(t *testing.T, st *store.Store, prefix string) {
	key := prefix + "big.bin"
	// 5 MiB is S3's smallest part; three and a bit parts.
	const part = 5 << 20
	want := data(3*part+12345, 2)
	put(t, st, key, want, store.WriteOptions{PartSize: part, Concurrency: 2})
	got, info := read(t, st, key, store.All())
	if !bytes.Equal(got, want) {
		t.Fatalf("multipart object read back differs (%d vs %d bytes)", len(got), len(want))
	}
	if info.Size != int64(len(want)) {
		t.Fatalf("size %d, want %d", info.Size, len(want))
	}
	mid, _ := read(t, st, key, store.Range{Off: part - 10, Len: 20})
	if !bytes.Equal(mid, want[part-10:part+10]) {
		t.Fatal("range across a part boundary differs")
	}
}

func testRanges(t *testing.T, st *store.Store, prefix string) {
	key := prefix + "ranges.bin"
	want := data(10_000, 3)
	put(t, st, key, want, store.WriteOptions{})
	n := int64(len(want))
	cases := []struct {
		name string
		r    store.Range
		want []byte
	}{
		{"head", store.Range{Off: 0, Len: 10}, want[:10]},
		{"middle", store.Range{Off: 1234, Len: 4321}, want[1234 : 1234+4321]},
		{"to end", store.Range{Off: 9000, Len: -1}, want[9000:]},
		{"past end clipped", store.Range{Off: 9990, Len: 100}, want[9990:]},
		{"suffix", store.Suffix(100), want[n-100:]},
		{"suffix longer than object", store.Suffix(20_000), want},
		{"start at end", store.Range{Off: n, Len: 10}, nil},
		{"start past end", store.Range{Off: n + 5, Len: -1}, nil},
	}
	for _, c := range cases {
		got, info := read(t, st, key, c.r)
		if !bytes.Equal(got, c.want) {
			t.Errorf("%s: got %d bytes, want %d", c.name, len(got), len(c.want))
		}
		if info.Size != n {
			t.Errorf("%s: info size %d, want object size %d", c.name, info.Size, n)
		}
	}
}

func testEmptyObject(t *testing.T, st *store.Store, prefix string) {
	key := prefix + "empty"
	put(t, st, key, nil, store.WriteOptions{})
	got, info := read(t, st, key, store.All())
	if len(got) != 0 || info.Size != 0 {
		t.Fatalf("empty object read %d bytes, size %d", len(got), info.Size)
	}
	objs, err := st.List(context.Background(), prefix)
	if err != nil || len(objs) != 1 || objs[0].Size != 0 {
		t.Fatalf("list of one empty object: %+v, %v", objs, err)
	}
}

func testIfMatch(t *testing.T, st *store.Store, prefix string) {
	ctx := context.Background()
	key := prefix + "pinned"
	put(t, st, key, data(1000, 4), store.WriteOptions{})
	info, err := st.Stat(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	rc, _, err := st.ReadRange(ctx, key, store.Range{Off: 10, Len: 10}, store.ReadOptions{IfMatch: info.ETag})
	if err != nil {
		t.Fatalf("read with the current ETag: %v", err)
	}
	rc.Close()
	put(t, st, key, data(1000, 5), store.WriteOptions{})
	info2, err := st.Stat(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if info2.ETag == info.ETag {
		t.Fatalf("ETag %s did not change when the object was replaced", info.ETag)
	}
	_, _, err = st.ReadRange(ctx, key, store.Range{Off: 10, Len: 10}, store.ReadOptions{IfMatch: info.ETag})
	if !errors.Is(err, store.ErrPrecondition) {
		t.Fatalf("read with a stale ETag: err = %v, want ErrPrecondition", err)
	}
}

func testList(t *testing.T, st *store.Store, prefix string) {
	ctx := context.Background()
	keys := []string{"x/1", "x/2", "x/sub/3", "xy", "y/4"}
	for i, k := range keys {
		put(t, st, prefix+k, data(10*(i+1), uint64(i)), store.WriteOptions{})
	}
	check := func(p string, want []string) {
		t.Helper()
		objs, err := st.List(ctx, prefix+p)
		if err != nil {
			t.Fatalf("list %q: %v", p, err)
		}
		var got []string
		for _, o := range objs {
			got = append(got, strings.TrimPrefix(o.Key, prefix))
			if o.ETag == "" {
				t.Errorf("list %q: %s has no ETag", p, o.Key)
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("list %q = %v, want %v", p, got, want)
		}
	}
	check("", keys)
	check("x", []string{"x/1", "x/2", "x/sub/3", "xy"})
	check("x/", []string{"x/1", "x/2", "x/sub/3"})
	check("x/s", []string{"x/sub/3"})
	check("nothing", nil)
	objs, _ := st.List(ctx, prefix+"x/2")
	if len(objs) != 1 || objs[0].Size != 20 {
		t.Fatalf("list x/2 = %+v, want one object of 20 bytes", objs)
	}
	// Stopping a walk early returns the callback's error.
	stop := errors.New("stop")
	n := 0
	err := st.Walk(ctx, prefix, func(store.ObjectInfo) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("walk stopped by callback: err %v after %d calls", err, n)
	}
}

func testNotFound(t *testing.T, st *store.Store, prefix string) {
	ctx := context.Background()
	key := prefix + "missing"
	if _, err := st.Stat(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("stat missing: %v", err)
	}
	if _, _, err := st.ReadRange(ctx, key, store.All(), store.ReadOptions{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("read missing: %v", err)
	}
	if err := st.Delete(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete missing: %v", err)
	}
	if _, err := st.Stat(ctx, key); err != nil && strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
}

func assertAbsent(t *testing.T, st *store.Store, prefix, key string) {
	t.Helper()
	if _, err := st.Stat(context.Background(), key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("%s is visible after a failed write (stat err %v)", key, err)
	}
	objs, err := st.List(context.Background(), prefix)
	if err != nil || len(objs) != 0 {
		t.Fatalf("list after a failed write: %+v, %v", objs, err)
	}
}

func testAbort(t *testing.T, st *store.Store, prefix string) {
	for _, size := range []int{1000, 11 << 20} {
		key := prefix + "aborted"
		w, err := st.NewWriter(context.Background(), key, store.WriteOptions{PartSize: 5 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data(size, 6)); err != nil {
			t.Fatal(err)
		}
		if err := w.Abort(); err != nil {
			t.Fatalf("abort: %v", err)
		}
		assertAbsent(t, st, prefix, key)
	}
}

func testCancel(t *testing.T, st *store.Store, prefix string) {
	for _, size := range []int{1000, 11 << 20} {
		ctx, cancel := context.WithCancel(context.Background())
		key := prefix + "cancelled"
		w, err := st.NewWriter(ctx, key, store.WriteOptions{PartSize: 5 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data(size, 7)); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := w.Close(); err == nil {
			t.Fatal("Close after cancel succeeded")
		}
		assertAbsent(t, st, prefix, key)
	}
}

func testOverwrite(t *testing.T, st *store.Store, prefix string) {
	key := prefix + "obj"
	first := data(2000, 8)
	put(t, st, key, first, store.WriteOptions{})
	// A failed overwrite keeps the old object.
	w, err := st.NewWriter(context.Background(), key, store.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(data(500, 9))
	_ = w.Abort()
	got, _ := read(t, st, key, store.All())
	if !bytes.Equal(got, first) {
		t.Fatal("aborted overwrite changed the object")
	}
	second := data(3000, 10)
	put(t, st, key, second, store.WriteOptions{})
	got, _ = read(t, st, key, store.All())
	if !bytes.Equal(got, second) {
		t.Fatal("overwrite not visible")
	}
}

func testDelete(t *testing.T, st *store.Store, prefix string) {
	ctx := context.Background()
	put(t, st, prefix+"d/1", data(10, 11), store.WriteOptions{})
	put(t, st, prefix+"d/2", data(10, 12), store.WriteOptions{})
	if err := st.Delete(ctx, prefix+"d/1"); err != nil {
		t.Fatal(err)
	}
	objs, err := st.List(ctx, prefix)
	if err != nil || len(objs) != 1 || objs[0].Key != prefix+"d/2" {
		t.Fatalf("after delete: %+v, %v", objs, err)
	}
}

func testInvalidKeys(t *testing.T, st *store.Store, prefix string) {
	ctx := context.Background()
	for _, key := range []string{"../escape", prefix + "../../escape", "/abs", ""} {
		if _, err := st.NewWriter(ctx, key, store.WriteOptions{}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("write %q: err = %v, want ErrInvalid", key, err)
		}
		if _, _, err := st.ReadRange(ctx, key, store.All(), store.ReadOptions{}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("read %q: err = %v, want ErrInvalid", key, err)
		}
	}
	if _, err := st.List(ctx, "../"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("list ../: err = %v, want ErrInvalid", err)
	}
}

func testReaderAt(t *testing.T, st *store.Store, prefix string) {
	key := prefix + "ra"
	want := data(1<<20, 13)
	put(t, st, key, want, store.WriteOptions{})
	ra, err := st.NewReaderAt(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Size() != int64(len(want)) {
		t.Fatalf("size %d", ra.Size())
	}
	var g errgroup.Group
	for i := range 16 {
		g.Go(func() error {
			off := int64(i) * 65536
			p := make([]byte, 65536+100)
			n, err := ra.ReadAt(p, off)
			end := min(off+int64(len(p)), int64(len(want)))
			if n != int(end-off) || !bytes.Equal(p[:n], want[off:end]) {
				return errors.New("ReadAt returned wrong bytes")
			}
			if end == int64(len(want)) && err != io.EOF {
				return errors.New("short ReadAt at the end must return io.EOF")
			}
			if end < int64(len(want)) && err != nil {
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if n, err := ra.ReadAt(make([]byte, 1), int64(len(want))); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt at size: %d, %v", n, err)
	}
}
