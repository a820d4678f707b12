package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/probes/gpu"
)

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build (also gpuwatch --version, -V)",
		Args:  noArgs(""),
		RunE:  func(*cobra.Command, []string) error { return printVersion(stdout) },
	}
}

// printVersion prints the one version line: version, commit, Go, platform
// and whether NVML support is compiled in.
func printVersion(stdout io.Writer) error {
	nvml := "NVML support compiled in"
	if !gpu.NVMLCompiled {
		nvml = "no NVML support (built without cgo)"
	}
	v, c := buildVersion()
	_, err := fmt.Fprintf(stdout, "gpuwatch %s (commit %s, %s, %s/%s, %s)\n",
		v, c, runtime.Version(), runtime.GOOS, runtime.GOARCH, nvml)
	return err
}

// buildVersion is the version and commit the release build set with
// -ldflags; without them (go install, go build), what the Go toolchain
// recorded: the module version (a tag, or since Go 1.24 a pseudo-version
// between tags) and the VCS revision.
func buildVersion() (string, string) {
	v, c := version, commit
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v, c
	}
	if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if c == "none" {
		var rev, dirty string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if rev != "" {
			c = rev[:min(12, len(rev))] + dirty
		}
	}
	return v, c
}
