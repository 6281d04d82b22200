// Command sluice moves columnar data between object storage and Apache
// Arrow at the speed of the network. It leaves out gs://, az://, the
// kubernetes executor and drawing (sluice report, bench --plot), whose
// libraries would more than double the start of every stage process, and
// runs sluice-full for a command line that needs them.
package main

import (
	"github.com/sluice-data/sluice/internal/cli"
	_ "github.com/sluice-data/sluice/internal/startgc" // holds the collector off while packages initialise
)

func main() { cli.Main(cli.Program{}) }
