package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/sample"
)

// defaultGPUProfileSteps is --gpu-profile's steps when the flag is given
// bare (the hook's _gpuprofile.DEFAULT_STEPS).
const defaultGPUProfileSteps = 5

// gpuProfileEnv is the variable the hook reads under gpuwatch run: the
// steps to record (python/gpuwatch_hook/_run.py GPU_PROFILE_ENV).
const gpuProfileEnv = "GPUWATCH_GPU_PROFILE"

// addGPUProfileFlag registers --gpu-profile[=STEPS] (bare: 5) into n.
func addGPUProfileFlag(cmd *cobra.Command, n *int, usage string) {
	cmd.Flags().IntVar(n, "gpu-profile", 0, usage)
	cmd.Flags().Lookup("gpu-profile").NoOptDefVal = strconv.Itoa(defaultGPUProfileSteps)
}

// checkGPUProfile checks --gpu-profile when given: 1 to 50 steps, and
// not written "--gpu-profile 3", which would run 3 as the command.
func checkGPUProfile(cmd *cobra.Command, n int, args []string) error {
	if !cmd.Flags().Changed("gpu-profile") {
		return nil
	}
	if a, ok := bareValue(cmd, args); ok && n == defaultGPUProfileSteps { // given bare, or =5
		if _, err := strconv.Atoi(a); err == nil {
			return usageErrorf(cmd, "--gpu-profile takes its steps after \"=\": write --gpu-profile=%s (alone it records %d steps; %q after a space would be read as an argument, not its steps)", a, defaultGPUProfileSteps, a)
		}
	}
	if n < 1 || n > sample.MaxGPUProfileSteps {
		return usageErrorf(cmd, "--gpu-profile %d: want 1 to %d steps (--gpu-profile alone: %d)", n, sample.MaxGPUProfileSteps, defaultGPUProfileSteps)
	}
	return nil
}

// gpuProfileNotice is what run says before the job starts with
// --gpu-profile: the profiler runs for those steps, and costs then.
func gpuProfileNotice(n int) string {
	return fmt.Sprintf("gpuwatch: --gpu-profile: from the loop's 10th batch the hook records %s with torch.profiler (it costs while it records; the figures say how much)\n", sample.Plural(n, "step"))
}

// withGPUProfile is the job's environment with the GPU profile asked for
// (n > 0) or not, whatever gpuwatch's own environment said.
func withGPUProfile(env []string, n int) []string {
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, gpuProfileEnv+"=") {
			continue
		}
		out = append(out, kv)
	}
	if n > 0 {
		out = append(out, gpuProfileEnv+"="+strconv.Itoa(n))
	}
	return out
}

// bareValue is the first argument where it could be a bare optional
// flag's value written after a space: an argument before any "--". Such
// flags (--gpu-profile, --ceiling) take their value only after "=", so
// "--gpu-profile 3 -- python train.py" would run "3". Each flag's check
// asks only where the flag holds its bare value, and run checks
// --gpu-profile first: "--ceiling --gpu-profile 3" is --gpu-profile's.
func bareValue(cmd *cobra.Command, args []string) (string, bool) {
	if len(args) == 0 || cmd.ArgsLenAtDash() == 0 {
		return "", false
	}
	return args[0], true
}
