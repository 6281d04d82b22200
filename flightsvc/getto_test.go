package flightsvc

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/internal/arrowtest"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// TestGetTo fetches a dataset into each kind of output and reads back
// what a local scan reads: counted only, an Arrow IPC file in a store
// (fed in arrival order, listed in dataset order), and a stream on
// Stdout.
func TestGetTo(t *testing.T) {
	st := testStore(t)
	addr := startServer(t, []Root{{Store: st}}, ServerOptions{})
	want, _ := localScan(t, st, "taxi/", scan.Options{Columns: []string{"fare_amount"}})
	get := GetOptions{Columns: []string{"fare_amount"}, Parallel: 3}

	res, err := GetTo(t.Context(), addr, "taxi/", GetToOptions{GetOptions: get})
	if err != nil || res.Rows != want.Rows || res.Endpoints < 4 || res.Batches == 0 {
		t.Fatalf("counting: %+v, %v; want %d rows from at least 4 endpoints", res, err, want.Rows)
	}

	out, _, err := store.Open(t.Context(), "mem://getto-out/", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	open := func(ctx context.Context, url string) (*store.Store, string, error) {
		return out, strings.TrimPrefix(url, "mem://getto-out/"), nil
	}
	arrival := get
	arrival.Order = collect.Arrival
	// Progress: the planned rows first, then each batch's rows once written.
	planned, wrote, calls := int64(-2), int64(0), 0
	if _, err := GetTo(t.Context(), addr, "taxi/", GetToOptions{GetOptions: arrival, Output: "mem://getto-out/f.arrow", Format: format.IPCFile, OpenOutput: open,
		Started: func(rows int64) { planned = rows },
		Wrote: func(rows int64) {
			if planned == -2 {
				t.Error("a batch was reported before the planned rows")
			}
			wrote += rows
			calls++
		}}); err != nil {
		t.Fatal(err)
	}
	if planned != int64(want.Rows) || wrote != int64(want.Rows) || calls < 4 {
		t.Errorf("progress: planned %d rows, reported %d in %d calls; want %d, in a call a batch", planned, wrote, calls, want.Rows)
	}
	b, err := out.ReadAll(t.Context(), "f.arrow")
	if err != nil {
		t.Fatal(err)
	}
	if got := arrowtest.ReadChecksum(t, b, "arrow"); got != want {
		t.Errorf("the Arrow file holds %v, a local scan reads %v", got, want)
	}

	var stdout bytes.Buffer
	dataset := get
	dataset.Order = collect.Dataset
	if _, err := GetTo(t.Context(), addr, "taxi/", GetToOptions{GetOptions: dataset, Output: "-", Format: format.IPCStream, Stdout: &stdout}); err != nil {
		t.Fatal(err)
	}
	if got := arrowtest.ReadChecksum(t, stdout.Bytes(), "arrows"); got != want {
		t.Errorf("the stream holds %v, a local scan reads %v", got, want)
	}
}

// Mistakes in how GetTo was asked match ErrInvalid, in words that name
// them; a service that is not there does not.
func TestGetToErrors(t *testing.T) {
	st := testStore(t)
	addr := startServer(t, []Root{{Store: st}}, ServerOptions{})
	open := func(ctx context.Context, url string) (*store.Store, string, error) {
		return st, strings.TrimPrefix(url, "mem://x/"), nil
	}
	for _, c := range []struct {
		opts  GetToOptions
		words string
	}{
		{GetToOptions{Output: "mem://x/taxi/", Format: format.IPCFile, OpenOutput: open}, "-o mem://x/taxi/: names a directory, not a file"},
		{GetToOptions{GetOptions: GetOptions{Columns: []string{"no_such_column"}}}, "no_such_column"},
		{GetToOptions{GetOptions: GetOptions{Filter: "fare_amount >"}}, "fare_amount"},
	} {
		_, err := GetTo(t.Context(), addr, "taxi/", c.opts)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%+v: %v; want ErrInvalid saying %q", c.opts, err, c.words)
		}
	}
	_, err := GetTo(t.Context(), addr, "nothing-here/", GetToOptions{})
	if !errors.Is(err, store.ErrNotFound) || errors.Is(err, ErrInvalid) {
		t.Errorf("a dataset that is not there: %v, want not found", err)
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := lis.Addr().String()
	lis.Close()
	_, err = GetTo(t.Context(), gone, "taxi/", GetToOptions{})
	if err == nil || errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("no service: %v, want unreachable", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := GetTo(ctx, addr, "taxi/", GetToOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// ServeContext serves until its context is done and then returns nil; a
// listener that fails ends it with the error.
func TestServeContext(t *testing.T) {
	st := testStore(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- NewServer([]Root{{Store: st}}, ServerOptions{}).ServeContext(ctx, lis, time.Second) }()
	if res, err := GetTo(t.Context(), lis.Addr().String(), "taxi/", GetToOptions{}); err != nil || res.Rows == 0 {
		t.Fatalf("while serving: %+v, %v", res, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("after cancel: %v", err)
	}

	lis, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis.Close()
	if err := NewServer(nil, ServerOptions{}).ServeContext(t.Context(), lis, time.Second); err == nil {
		t.Fatal("a closed listener: no error")
	}
}

func TestCheckRoot(t *testing.T) {
	st := testStore(t)
	if err := CheckRoot(t.Context(), st, "taxi/"); err != nil {
		t.Errorf("a root with objects: %v", err)
	}
	err := CheckRoot(t.Context(), st, "empty/")
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), st.URL("empty/")+": ") || !strings.Contains(err.Error(), "nothing there to serve") {
		t.Errorf("an empty root: %v", err)
	}
}

func TestNewToken(t *testing.T) {
	a, b := NewToken(), NewToken()
	if len(a) != 32 || strings.Trim(a, "0123456789abcdef") != "" || a == b {
		t.Errorf("tokens %q and %q: want 32 hex digits, different each time", a, b)
	}
}
