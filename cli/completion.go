package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// shellCompletions adds cobra's completion command to root now, not when
// the command line runs, so that its argument is checked as every other
// command's is: a shell it has no script for (`gpuwatch completion tcsh`)
// is a usage error naming the shells it has, where cobra's own printed the
// help and exited 0. Without a shell it prints the help, as before.
func shellCompletions(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, sub := range c.Commands() {
			shells = append(shells, sub.Name())
		}
		c.Args = func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return fmt.Errorf("unsupported shell %s: want one of %s", quoteArgs(args[:1]), strings.Join(shells, ", "))
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
}
