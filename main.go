// Command gpuwatch watches a training box live — GPU, per-core CPU, disks,
// memory pressure and the data loader — and says why the accelerator is not
// busy. The command line is package cli; everything else lives in the
// packages beside it (docs/architecture.md).
package main

import (
	"os"

	"github.com/gpuwatch/gpuwatch/cli"
)

func main() { os.Exit(cli.Execute()) }
