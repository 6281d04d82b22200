package azure_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/sluice-data/sluice/internal/testenv"
	"github.com/sluice-data/sluice/store"
	_ "github.com/sluice-data/sluice/store/azure"
	"github.com/sluice-data/sluice/store/storetest"
)

// azurite is the connection string of the Azurite that ./scripts/test
// starts (SLUICE_TEST_AZURE), with a fresh container made in it.
func azurite(t *testing.T) (string, string) {
	t.Helper()
	cs := os.Getenv("SLUICE_TEST_AZURE")
	if cs == "" {
		testenv.Unavailable(t, "no Azurite: SLUICE_TEST_AZURE is its connection string (./scripts/test starts one)")
	}
	var b [4]byte
	rand.Read(b[:])
	name := "t" + hex.EncodeToString(b[:])
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

func TestAzureConformance(t *testing.T) {
	cs, container := azurite(t)
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
