package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/sample"
)

// oneArg is cobra.ExactArgs(1) in words: what the argument is, and where a
// second one belongs (hint, "" for none). Cobra said "accepts 1 arg(s),
// received 2" to `gpuwatch report run.jsonl run.md`.
func oneArg(what, hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return fmt.Errorf("%s needs %s: gpuwatch %s", cmd.Name(), what, cmd.Use)
		case len(args) > 1:
			err := fmt.Sprintf("%s takes %s, got %d arguments (%s)", cmd.Name(), what, len(args), quoteArgs(args))
			if hint != "" {
				err += ": " + hint
			}
			return fmt.Errorf("%s", err)
		}
		return nil
	}
}

// noArgs is cobra.NoArgs in words, with where the stray argument belongs
// (hint, "" for none). Cobra said `unknown command "run.jsonl" for
// "gpuwatch record"` to `gpuwatch record run.jsonl`.
func noArgs(hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		err := fmt.Sprintf("%s takes no arguments, got %s", cmd.Name(), quoteArgs(args))
		if hint != "" {
			err += ": " + hint
		}
		return fmt.Errorf("%s", err)
	}
}

// quoteArgs lists args as the user gave them, quoted, with URLs'
// credentials redacted (fleet's URL), made printable and bounded (at most
// 4, each cut at 60 bytes after the redaction): they are the user's, but
// may hold a password or a pasted terminal's escapes.
func quoteArgs(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i == 4 {
			fmt.Fprintf(&b, " and %d more", len(args)-i)
			break
		}
		if i > 0 {
			b.WriteString(" ")
		}
		a = sample.RedactURL(a)
		if len(a) > 60 {
			a = a[:60] + "…"
		}
		b.WriteString(strconv.Quote(sample.Printable(a)))
	}
	return b.String()
}
