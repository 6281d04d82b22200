package gcs_test

import (
	"context"
	"testing"

	"github.com/sluice-data/sluice/internal/emulators"
	"github.com/sluice-data/sluice/store"
	_ "github.com/sluice-data/sluice/store/gcs"
	"github.com/sluice-data/sluice/store/storetest"
)

func TestGCSConformance(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", emulators.GCS(t, "bkt"))
	storetest.Run(t, func(t *testing.T) *store.Store {
		st, _, err := store.Open(context.Background(), "gs://bkt/", store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}
