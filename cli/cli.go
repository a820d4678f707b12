// Package cli is gpuwatch's command line: one file per command (run.go,
// tune.go, attach.go …), the watch flags declared once (watch.go) and
// shared by every command that watches, and the exit statuses. Each command
// reads and checks its flags, then makes one call into session (or loader,
// report); it holds no loop of its own. docs/architecture.md draws the map.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session"
)

// Set by the release build with -ldflags
// "-X github.com/gpuwatch/gpuwatch/cli.version=… -X …/cli.commit=…".
var (
	version = "dev"
	commit  = "none"
)

// Exit statuses (documented in the README next to each other).
const (
	ExitOK         = 0 // success, or a clean stop (Ctrl-C, SIGTERM, --duration)
	ExitFailure    = 1 // anything else that went wrong
	ExitUsage      = 2 // a wrong flag, value or argument
	ExitBottleneck = 3 // --once: the settled verdict is a bottleneck
	ExitUnsettled  = 4 // --once: no verdict settled (the summary says why)
)

// Execute runs gpuwatch with the process's arguments and returns its exit
// status.
func Execute() int { return Run(os.Args[1:], os.Stdout, os.Stderr) }

// Run executes the command line args and returns the exit status: 0 on
// success (and on Ctrl-C or SIGTERM), 2 on a usage error, 3 when --once
// found a bottleneck, 1 on any other failure; `run` exits with its
// command's status.
func Run(args []string, stdout, stderr io.Writer) int {
	// SIGHUP: the ssh session dropped; stop cleanly like on Ctrl-C.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var ex *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, session.ErrBottleneck):
		return ExitBottleneck // --once found a bottleneck: its summary is printed
	case errors.Is(err, session.ErrUnsettled):
		return ExitUnsettled // its summary says why
	case errors.As(err, &ex):
		if ex.msg != "" {
			printError(stderr, ex.msg)
		}
		return ex.code
	}
	printError(stderr, err.Error())
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", ue.cmd)
		return ExitUsage
	}
	return ExitFailure
}

// usageError is a wrong flag, a bad value or a wrong argument: exit status 2.
type usageError struct {
	cmd string // the command path, for the usage hint
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// exitError ends gpuwatch with a given status (run: its command's), after
// one line when msg is set.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// printError prints an error's lines, each made printable (an error may
// quote a command's output).
func printError(w io.Writer, msg string) {
	for i, line := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
		if i == 0 {
			fmt.Fprintf(w, "gpuwatch: %s\n", sample.Printable(line))
		} else {
			fmt.Fprintf(w, "%s\n", sample.Printable(line))
		}
	}
}
