//go:build manpages

package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// The man command is built only with -tags manpages
// (scripts/release-assets.sh): cobra's doc package brings blackfriday,
// yaml and text/template, whose code and start-up allocations every
// gpuwatch process would carry for a command only a release runs
// (docs/architecture.md, "The dashboard's memory").
func init() { taggedCmds = append(taggedCmds, newManCmd) }

// newManCmd writes the man pages, one per command, generated from the
// command tree (the release archives and packages ship them).
func newManCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write man pages for every command to DIR (gpuwatch.1, gpuwatch-attach.1, …)",
		Hidden: true,
		Args:   oneArg("the folder to write the pages in", ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true // no "generated on <today>": the same tree gives the same pages
			hdr := &doc.GenManHeader{
				Title:   "GPUWATCH",
				Section: "1",
				Source:  "gpuwatch " + version,
				Manual:  "gpuwatch manual",
				Date:    sourceDate(),
			}
			if err := doc.GenManTree(root, hdr, dir); err != nil {
				return err
			}
			_, err := fmt.Fprintf(stdout, "wrote man pages to %s\n", dir)
			return err
		},
	}
}

// sourceDate is $SOURCE_DATE_EPOCH (reproducible builds; goreleaser sets
// it from the commit), else now.
func sourceDate() *time.Time {
	t := time.Now()
	if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		t = time.Unix(s, 0).UTC()
	}
	return &t
}
