package transfer_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluice-data/sluice/fetch"
	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/transfer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture puts objects of several sizes under p/ in st: empty, small, and
// one of three windows and a bit, so that one object is many ranges.
func fixture(t *testing.T, st *store.Store) map[string][]byte {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	files := map[string][]byte{
		"p/empty":        {},
		"p/a.txt":        []byte("hello"),
		"p/sub/big.bin":  make([]byte, 3*transfer.Window+12345),
		"p/sub/_SUCCESS": {},
	}
	for i := range files["p/sub/big.bin"] {
		files["p/sub/big.bin"][i] = byte(r.Uint32())
	}
	for k, v := range files {
		if _, err := st.Put(t.Context(), k, bytes.NewReader(v), store.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

func openStores(t *testing.T) map[string]*store.Store {
	t.Helper()
	stores := map[string]*store.Store{}
	for _, url := range []string{"mem://transfer/", "file://" + t.TempDir() + "/"} {
		st, _, err := store.Open(t.Context(), url, store.Options{MemBuckets: store.NewMemBuckets()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores[url[:3]] = st
	}
	return stores
}

// TestCopy copies a prefix between memory and file stores both ways,
// under a budget smaller than one object, and checks every byte, the
// layout below the prefix, and that progress counted every byte once.
func TestCopy(t *testing.T) {
	ctx := t.Context()
	for _, dir := range [][2]string{{"mem", "fil"}, {"fil", "mem"}} {
		t.Run(dir[0]+"-to-"+dir[1], func(t *testing.T) {
			stores := openStores(t)
			src, dst := stores[dir[0]], stores[dir[1]]
			files := fixture(t, src)
			r, err := store.Resolve(ctx, src, "p")
			if err != nil {
				t.Fatal(err)
			}
			jobs := transfer.Jobs(r, "q/", false)
			var counted atomic.Int64
			const budget = 4 << 20
			_, err = transfer.Copy(ctx, src, dst, jobs, transfer.Options{
				Fetch:    fetch.Options{Memory: budget, Mem: mempool.New(budget)},
				Progress: func(n int64) { counted.Add(n) },
			})
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			for k, want := range files {
				got, err := dst.ReadAll(ctx, "q/"+k[len("p/"):])
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s: %d bytes differ from the %d of the source", k, len(got), len(want))
				}
				total += int64(len(want))
			}
			if counted.Load() != total {
				t.Errorf("progress counted %d bytes of %d", counted.Load(), total)
			}
		})
	}
}

// TestJobs names destinations: one object to a name or into a
// directory, a prefix's or glob's objects by their path below its root.
func TestJobs(t *testing.T) {
	one := store.Objects{Root: "a/", One: true, List: []store.ObjectInfo{{Key: "a/x.bin"}}}
	prefix := store.Objects{Root: "a/", List: []store.ObjectInfo{{Key: "a/x.bin"}, {Key: "a/s/y.bin"}}}
	for _, c := range []struct {
		src   store.Objects
		dst   string
		isDir bool
		want  []string
	}{
		{one, "b.bin", false, []string{"b.bin"}},
		{one, "b/", false, []string{"b/x.bin"}},
		{one, "b", true, []string{"b/x.bin"}},
		{one, "", false, []string{"x.bin"}},
		{prefix, "b", false, []string{"b/x.bin", "b/s/y.bin"}},
		{prefix, "", false, []string{"x.bin", "s/y.bin"}},
	} {
		var got []string
		for _, j := range transfer.Jobs(c.src, c.dst, c.isDir) {
			got = append(got, j.Dst)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Jobs(%v, %q, %v) = %q, want %q", c.src.List, c.dst, c.isDir, got, c.want)
		}
	}
}

// TestCopyRefusesItself: copying an object onto itself is refused before
// anything is read or written.
func TestCopyRefusesItself(t *testing.T) {
	st := openStores(t)["mem"]
	fixture(t, st)
	info, err := st.Stat(t.Context(), "p/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, err = transfer.Copy(t.Context(), st, st, []transfer.Job{{Src: info, Dst: "p/a.txt"}}, transfer.Options{})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("copy onto itself: %v, want ErrInvalid", err)
	}
}

// TestCat streams objects in the order given, whatever the order the
// ranges arrive in.
func TestCat(t *testing.T) {
	ctx := t.Context()
	for name, st := range openStores(t) {
		files := fixture(t, st)
		order := []string{"p/sub/big.bin", "p/empty", "p/a.txt", "p/sub/big.bin"}
		var objs []store.ObjectInfo
		var want []byte
		for _, k := range order {
			o, err := st.Stat(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			objs = append(objs, o)
			want = append(want, files[k]...)
		}
		var out bytes.Buffer
		var counted int64
		if _, err := transfer.Cat(ctx, &out, st, objs, transfer.Options{Progress: func(n int64) { counted += n }}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), want) || counted != int64(len(want)) {
			t.Errorf("%s: cat gave %d bytes (progress %d), want the %d in order", name, out.Len(), counted, len(want))
		}
	}
}

// TestCopyCancelled leaves no object behind that was not whole.
func TestCopyCancelled(t *testing.T) {
	stores := openStores(t)
	src, dst := stores["mem"], stores["fil"]
	files := fixture(t, src)
	r, err := store.Resolve(t.Context(), src, "p/")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var once atomic.Bool
	_, err = transfer.Copy(ctx, src, dst, transfer.Jobs(r, "q", false), transfer.Options{Progress: func(int64) {
		if once.CompareAndSwap(false, true) {
			cancel()
		}
	}})
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("copy: %v, want canceled", err)
	}
	left, err := dst.List(t.Context(), "q/")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range left {
		if want := files["p/"+o.Key[len("q/"):]]; o.Size != int64(len(want)) {
			t.Errorf("%s: %d bytes left of %d", o.Key, o.Size, len(want))
		}
	}
}

// TestCatSources writes sources from two stores, one store's met twice,
// in the order given, and sums the plans' statistics.
func TestCatSources(t *testing.T) {
	ctx := t.Context()
	stores := openStores(t)
	mem, fil := stores["mem"], stores["fil"]
	files := fixture(t, mem)
	fixture(t, fil)
	source := func(st *store.Store, keys ...string) transfer.Source {
		s := transfer.Source{Store: st}
		for _, k := range keys {
			o, err := st.Stat(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			s.List = append(s.List, o)
		}
		return s
	}
	sources := []transfer.Source{
		source(mem, "p/a.txt"), source(mem, "p/sub/big.bin"), source(fil, "p/a.txt", "p/empty"), source(mem, "p/a.txt"),
	}
	var want []byte
	for _, k := range []string{"p/a.txt", "p/sub/big.bin", "p/a.txt", "p/empty", "p/a.txt"} {
		want = append(want, files[k]...)
	}
	var out bytes.Buffer
	stats, err := transfer.CatSources(ctx, &out, sources, transfer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("gave %d bytes, want the %d in order", out.Len(), len(want))
	}
	if stats.BytesFetched != int64(len(want)) {
		t.Errorf("statistics count %d bytes fetched, want %d", stats.BytesFetched, len(want))
	}
}
