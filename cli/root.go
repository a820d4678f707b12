package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"
)

// taggedCmds are the commands built only with a build tag (man:
// -tags manpages).
var taggedCmds []func(stdout io.Writer) *cobra.Command

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	var w watchFlags
	var showVersion bool
	root := &cobra.Command{
		Use:   "gpuwatch",
		Short: "Why is my GPU idle? A live view of GPU, CPU, disks, memory and the data loader",
		Long: `gpuwatch watches this machine live — per-core CPU, memory and swap, disks,
network, pressure stall information and processes — to tell why a training
job's accelerator is not busy.

It finds the training job by itself: every data loader announced on this
machine (the Python hook, gpuwatch run, gpuwatch loader) as they come up,
else the busiest process that maps torch or CUDA, whose loop it samples
from /proc with no change to the job (--pid to choose; --discover=false to
watch the host only).

With --headless (or when stdout is not a terminal) it prints one line per
interval; with --json one JSON object per line.`,
		Example: `  gpuwatch
  gpuwatch run -- python train.py
  gpuwatch --headless --json --duration 30s > run.jsonl
  gpuwatch --pid "$(pgrep -f train.py)" --headless`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				return printVersion(stdout)
			}
			if err := w.validate(cmd); err != nil {
				return err
			}
			return watch(cmd, w.options(stdout, stderr))
		},
	}
	w.register(root, offerAll)
	root.Flags().BoolVarP(&showVersion, "version", "V", false, "print the version, commit and build, and exit")
	selfProfiles(root, stderr)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{cmd: cmd.CommandPath(), err: plainFlagError(err)}
	})
	root.AddCommand(newVersionCmd(stdout), newRunCmd(stdout, stderr), newDemoCmd(stdout, stderr), newLoaderCmd(stdout, stderr), newSweepCmd(stdout, stderr), newTuneCmd(stdout, stderr), newAttachCmd(stdout, stderr),
		newRecordCmd(stdout, stderr), newReplayCmd(stdout, stderr), newReportCmd(stdout, stderr), newServeCmd(stdout, stderr), newFleetCmd(stdout, stderr))
	for _, c := range taggedCmds {
		root.AddCommand(c(stdout))
	}
	root.SetHelpCommand(helpCmd())
	shellCompletions(root)
	wrapArgs(root)
	for _, c := range append(root.Commands(), root) {
		c.SetUsageFunc(usage)
	}
	return root
}

// helpCmd is `gpuwatch help [command]`: a command's help, or a usage
// error (exit 2) for a topic that is no command — cobra's own printed the
// root's help and exited 0 for `gpuwatch help tcsh`.
func helpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return usageErrorf(c, "no command %q: gpuwatch --help lists them", strings.Join(args, " "))
			}
			cmd.InitDefaultHelpFlag()
			return cmd.Help()
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil || cmd == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, sub := range cmd.Commands() {
				if (sub.IsAvailableCommand() || sub == c) && strings.HasPrefix(sub.Name(), prefix) {
					names = append(names, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}

// plainFlagError says a flag's value that is not a number in words, not
// in Go's: `invalid argument "abc" for "--gpu-profile" flag: not a whole
// number` (pflag's message ends in `strconv.ParseInt: parsing "abc":
// invalid syntax`). Other errors pass unchanged.
func plainFlagError(err error) error {
	msg := err.Error()
	head, tail, ok := strings.Cut(msg, ": strconv.Parse")
	if !ok {
		return err
	}
	what := "not a number"
	switch {
	case strings.HasPrefix(tail, "Int"), strings.HasPrefix(tail, "Uint"):
		what = "not a whole number"
		if strings.Contains(tail, "out of range") {
			what = "a whole number out of range"
		}
	case strings.HasPrefix(tail, "Bool"):
		what = "not true or false"
	case strings.Contains(tail, "out of range"):
		what = "a number out of range"
	}
	return errors.New(head + ": " + what)
}

// wrapArgs makes argument validation failures usage errors (exit 2), in
// cmd and every command below it (completion's shells).
func wrapArgs(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		wrapArgs(c)
	}
	if cmd.Args == nil {
		return
	}
	check := cmd.Args
	cmd.Args = func(cc *cobra.Command, args []string) error {
		if err := check(cc, args); err != nil {
			return &usageError{cmd: cc.CommandPath(), err: err}
		}
		return nil
	}
}

// selfProfiles adds the hidden --cpuprofile and --memprofile flags, which
// profile gpuwatch itself (for developers: docs/architecture.md, "What
// gpuwatch costs"): the CPU from the command's start to its end, the live
// heap at its end.
func selfProfiles(root *cobra.Command, stderr io.Writer) {
	var cpuProfile, memProfile string
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of gpuwatch itself to this file (for developers)")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	root.PersistentFlags().StringVar(&memProfile, "memprofile", "", "write a heap profile of gpuwatch itself to this file when it ends (for developers)")
	_ = root.PersistentFlags().MarkHidden("memprofile")
	var stopProfile func()
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if memProfile != "" && runtime.MemProfileRate == 0 { // main turned sampling off
			runtime.MemProfileRate = 512 << 10 // the runtime's default
		}
		if cpuProfile == "" {
			return nil
		}
		f, err := os.Create(cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
		return nil
	}
	root.PersistentPostRun = func(*cobra.Command, []string) {
		if stopProfile != nil {
			stopProfile()
		}
		if memProfile == "" {
			return
		}
		f, err := os.Create(memProfile)
		if err == nil {
			runtime.GC() // the live heap, not the garbage of the last cycle
			err = pprof.WriteHeapProfile(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "gpuwatch: --memprofile: %v\n", err)
		}
	}
}
