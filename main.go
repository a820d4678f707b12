// Command gpuwatch watches a training box live — GPU, per-core CPU, disks,
// memory pressure and the data loader — and says why the accelerator is not
// busy. The command line is package cli; everything else lives in the
// packages beside it (docs/architecture.md).
package main

import (
	"os"
	"runtime"
	"strings"

	"github.com/gpuwatch/gpuwatch/cli"
)

func main() {
	// Allocations are sampled only for --memprofile (cli sets the rate
	// back) or a memprofilerate in GODEBUG: the sampler's table of stacks
	// held 1.4 MB of the dashboard's resident memory (docs/architecture.md,
	// "The dashboard's memory").
	if !strings.Contains(os.Getenv("GODEBUG"), "memprofilerate") {
		runtime.MemProfileRate = 0
	}
	os.Exit(cli.Execute())
}
