// Command sluice-full is sluice with gs:// and the kubernetes executor:
// sluice runs it for a command line that names either, and it can be run
// by itself wherever sluice can.
package main

import (
	_ "github.com/sluice-data/sluice/internal/startgc" // holds the collector off while packages initialise

	_ "github.com/sluice-data/sluice/fanout/executors/k8s" // --executor kubernetes
	"github.com/sluice-data/sluice/internal/cli"
	_ "github.com/sluice-data/sluice/store/gcs" // gs://
)

func main() { cli.Main(true) }
