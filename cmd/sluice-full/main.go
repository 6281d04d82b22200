// Command sluice-full is sluice with gs://, az:// (abfs[s]://), the
// kubernetes executor and drawing (sluice report, bench --plot): sluice
// runs it for a command line that needs them, and it can be run by
// itself wherever sluice can.
package main

import (
	_ "github.com/sluice-data/sluice/internal/startgc" // holds the collector off while packages initialise

	"github.com/sluice-data/sluice/bench/chart"
	_ "github.com/sluice-data/sluice/fanout/executors/k8s" // --executor kubernetes
	"github.com/sluice-data/sluice/fanout/report/render"
	"github.com/sluice-data/sluice/internal/cli"
	_ "github.com/sluice-data/sluice/store/azure" // az://, abfs[s]://
	_ "github.com/sluice-data/sluice/store/gcs"   // gs://
)

func main() {
	cli.Main(cli.Program{Full: true, Charts: chart.Charts{}, Report: render.WriterFor})
}
