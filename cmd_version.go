package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/probes"
)

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			nvml := "NVML support compiled in"
			if !probes.NVMLCompiled {
				nvml = "no NVML support (built without cgo)"
			}
			_, err := fmt.Fprintf(stdout, "gpuwatch %s (commit %s, %s, %s/%s, %s)\n",
				version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH, nvml)
			return err
		},
	}
}
