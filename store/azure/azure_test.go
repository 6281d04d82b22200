package azure_test

import (
	"context"
	"testing"

	"github.com/sluice-data/sluice/internal/emulators"
	"github.com/sluice-data/sluice/store"
	_ "github.com/sluice-data/sluice/store/azure"
	"github.com/sluice-data/sluice/store/storetest"
)

func TestAzureConformance(t *testing.T) {
	cs, container := emulators.Azure(t, "t")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", cs)
	storetest.Run(t, func(t *testing.T) *store.Store {
		st, _, err := store.Open(context.Background(), "az://"+container+"/", store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}
