package gcs_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/sluice-data/sluice/store"
	_ "github.com/sluice-data/sluice/store/gcs"
	"github.com/sluice-data/sluice/store/storetest"
)

// gcsEmulator starts fake-gcs-server in this process on a loopback port
// with bucket made, and points the SDK at it (STORAGE_EMULATOR_HOST).
func gcsEmulator(t *testing.T, bucket string) *fakestorage.Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: uint16(port), Writer: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:"+strconv.Itoa(port))
	return srv
}

func TestGCSConformance(t *testing.T) {
	gcsEmulator(t, "bkt")
	storetest.Run(t, func(t *testing.T) *store.Store {
		st, _, err := store.Open(context.Background(), "gs://bkt/", store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}
