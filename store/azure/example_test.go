package azure_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log"
	"os"

	"github.com/sluice-data/sluice/store"
	_ "github.com/sluice-data/sluice/store/azure" // registers az:// and abfs[s]://
)

// Importing the package is all a program does to read and write az://
// and abfss:// URLs through package store. Opening a store makes no
// request: here the credentials are a connection string naming an
// endpoint on 127.0.0.1 (where ./scripts/test runs Azurite) with a made-up
// key, and the example stops before the first request, which would need
// Azurite or an account. A Data Lake URL must name its account's
// *.core.windows.net host.
func Example() {
	cs, hadCS := os.LookupEnv("AZURE_STORAGE_CONNECTION_STRING")
	key := base64.StdEncoding.EncodeToString([]byte("not a real account key"))
	os.Setenv("AZURE_STORAGE_CONNECTION_STRING",
		"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="+key+";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;")
	defer func() {
		if hadCS {
			os.Setenv("AZURE_STORAGE_CONNECTION_STRING", cs)
		} else {
			os.Unsetenv("AZURE_STORAGE_CONNECTION_STRING")
		}
	}()

	ctx := context.Background()
	for _, url := range []string{
		"az://logs/2024/",
		"abfss://logs@devstoreaccount1.dfs.core.windows.net/2024/a.parquet",
	} {
		st, key, err := store.Open(ctx, url, store.Options{})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("store %s, key %q\n", st.URL(""), key)
		st.Close()
	}
	_, _, err := store.Open(ctx, "abfss://logs@devstoreaccount1.example.com/2024/", store.Options{})
	fmt.Println(err)
	// Output:
	// store az://logs/, key "2024/"
	// store abfss://logs@devstoreaccount1.dfs.core.windows.net/, key "2024/a.parquet"
	// open abfss://logs@devstoreaccount1.example.com/2024/: want abfss://container@account.dfs.core.windows.net/path, not "logs@devstoreaccount1.example.com"
}
