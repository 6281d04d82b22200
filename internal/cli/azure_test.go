package cli

import (
	"testing"

	"github.com/sluice-data/sluice/internal/emulators"
)

// TestAzure: against the Azurite ./scripts/test starts (its connection
// string in AZURE_STORAGE_CONNECTION_STRING, as a user gives theirs), the
// commands work on az:// as on a directory (storeCommands), and the
// abfss:// form of the same URL reads the same; a missing container or
// blob is exit 3 and no credentials exit 4, each in one line.
func TestAzure(t *testing.T) {
	cs, ctr := emulators.Azure(t, "cli")
	env := []string{"AZURE_STORAGE_CONNECTION_STRING=" + cs}
	az := "az://" + ctr + "/"
	storeCommands(t, env, az, func(query string) map[string][]string {
		abfss := "abfss://" + ctr + "@devstoreaccount1.dfs.core.windows.net/taxi/"
		return map[string][]string{"run abfss://": {"run", "scan " + abfss + query}}
	})
	assertBadInputs(t, env, t.TempDir(), []badInput{
		{"a missing blob", []string{"cat", az + "nope"}, 3, "no object or prefix of this name"},
		{"a missing container", []string{"ls", "az://no-such-container/"}, 3, "ContainerNotFound"},
	})
	r := sluice(t, []string{"AZURE_STORAGE_CONNECTION_STRING=", "AZURE_STORAGE_ACCOUNT=", "AZURE_STORAGE_KEY="}, "ls", az)
	assertCleanFailure(t, r, 4, "AZURE_STORAGE_CONNECTION_STRING")
}

// TestAzureNoCredentials: with an account but no key, connection string
// or Azure identity, the first request fails in one line that says where
// credentials come from, exit 4.
func TestAzureNoCredentials(t *testing.T) {
	home := t.TempDir()
	r := sluice(t, []string{"AZURE_STORAGE_CONNECTION_STRING=", "AZURE_STORAGE_KEY=", "AZURE_STORAGE_ACCOUNT=nosuchaccount",
		"AZURE_CLIENT_ID=", "AZURE_TENANT_ID=", "AZURE_CLIENT_SECRET=", "AZURE_FEDERATED_TOKEN_FILE=", "HOME=" + home, "AZURE_CONFIG_DIR=" + home},
		"ls", "az://ctr/")
	assertCleanFailure(t, r, 4, "no Azure credentials")
}
