// Package emulators starts, for tests, the cloud storage emulators the
// gs:// and az:// stores are tested against: fake-gcs-server in the test's
// process, and a container in the Azurite that ./scripts/test starts.
package emulators

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/sluice-data/sluice/internal/testenv"
)

// GCS starts fake-gcs-server on a loopback port for the test, with bucket
// made, and returns its host:port, STORAGE_EMULATOR_HOST's value.
func GCS(t testing.TB, bucket string) string {
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
	return "127.0.0.1:" + strconv.Itoa(port)
}

// Azure makes a fresh container, named with prefix, in the Azurite that
// ./scripts/test starts (SLUICE_TEST_AZURE, its connection string),
// removed after the test; it returns the connection string and the
// container's name. Without Azurite the test skips, or under CI fails.
func Azure(t testing.TB, prefix string) (string, string) {
	t.Helper()
	cs := os.Getenv("SLUICE_TEST_AZURE")
	if cs == "" {
		testenv.Unavailable(t, "no Azurite: SLUICE_TEST_AZURE is its connection string (./scripts/test starts one)")
	}
	var b [4]byte
	rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	svc, err := azblob.NewClientFromConnectionString(cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateContainer(context.Background(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.DeleteContainer(context.Background(), name, nil) })
	return cs, name
}
