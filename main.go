// Command gpuwatch watches a training box live — GPU, per-core CPU, disks,
// memory pressure and the data loader — and says why the accelerator is not
// busy. This package holds the command line and the wiring; everything else
// lives in the packages beside it (docs/architecture.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/session"
)

// Set by the release build with -ldflags "-X main.version=… -X main.commit=…".
var (
	version = "dev"
	commit  = "none"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit status: 0 on success
// (and on Ctrl-C or SIGTERM), 2 on a usage error, 3 when --once found a
// bottleneck, 1 on any other failure.
func run(args []string, stdout, stderr io.Writer) int {
	// SIGHUP: the ssh session dropped; stop cleanly like on Ctrl-C.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, session.ErrBottleneck):
		return 3 // --once found a bottleneck: its summary is printed
	}
	fmt.Fprintf(stderr, "gpuwatch: %s\n", report.Printable(err.Error()))
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", ue.cmd)
		return 2
	}
	return 1
}

// usageError is a wrong flag, a bad value or a wrong argument: exit status 2.
type usageError struct {
	cmd string // the command path, for the usage hint
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }
