package storetest_test

import (
	"context"
	"testing"

	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/store/storetest"
)

// A driver passes the suite in a test of its own package: Run takes the
// running test's *testing.T and a function opening a store the suite may
// write into (here the in-memory driver, the reference). Since the suite
// needs a test's T, this example has no Output comment: go test compiles
// it but does not run it. store's own tests run the suite for real.
func ExampleRun() {
	testConformance := func(t *testing.T) {
		buckets := store.NewMemBuckets()
		storetest.Run(t, func(t *testing.T) *store.Store {
			st, _, err := store.Open(context.Background(), "mem://conformance/", store.Options{MemBuckets: buckets})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		})
	}
	_ = testConformance
}
