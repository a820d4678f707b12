package cli

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/diagnose"
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

// gpuProfileSeen watches run's frames for the recording --gpu-profile
// asked of the hook: a job that ends before it (a short script, a loop
// of fewer than ten batches) had it unrecorded with nothing said (a
// review). Observers are told on the session's loop; run reads after the
// session returned.
type gpuProfileSeen struct {
	mu      sync.Mutex
	loader  bool   // a frame carried a loader's figures
	state   string // the furthest state a frame carried (profileStage); "" none
	batches uint64 // the most batches a loader with the recording had taken
}

// profileStage orders the recording's states: a rank recording or done
// is further than one still waiting, whichever a frame lists last.
var profileStage = map[string]int{sample.GPUProfileWaiting: 1, sample.GPUProfileRecording: 2, sample.GPUProfileDone: 3, sample.GPUProfileRefused: 3}

func (g *gpuProfileSeen) Frame(f *sample.Frame, _ diagnose.Verdict) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	see := func(l *sample.Loader) {
		if l == nil || l.Kind != "python" {
			return // gpuwatch's own loader, a sampled loop: no hook to record
		}
		g.loader = true
		if l.GPUProfile == nil {
			return
		}
		st := l.GPUProfile.State
		if profileStage[st] > profileStage[g.state] || g.state == "" {
			g.state = st // a state of a newer hook's, unranked, is still one carried
		}
		g.batches = max(g.batches, l.Batches)
	}
	see(f.Loader)
	for i := range f.Ranks {
		see(f.Ranks[i].Loader)
	}
	return nil
}

func (g *gpuProfileSeen) Note(sample.Note) error { return nil }

// unrecorded is run's last word on a recording asked for that no frame
// saw done or refused ("" where one did: the view said what came of it);
// onceSaid: --once's summary said already that it was cut short.
func (g *gpuProfileSeen) unrecorded(ran time.Duration, onceSaid bool) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch g.state {
	case sample.GPUProfileDone, sample.GPUProfileRefused:
		return ""
	case sample.GPUProfileWaiting, sample.GPUProfileRecording:
		if onceSaid {
			return ""
		}
		if g.state == sample.GPUProfileWaiting {
			return fmt.Sprintf("gpuwatch: --gpu-profile: not recorded: the job ended before the recording started, at the loop's 10th batch (its figures last read at batch %d)\n", g.batches)
		}
		return "gpuwatch: --gpu-profile: not recorded: the job ended while the hook recorded, before its last step\n"
	}
	if g.state != "" {
		return fmt.Sprintf("gpuwatch: --gpu-profile: not recorded: the job ended with the recording %q\n", g.state)
	}
	if g.loader {
		return "gpuwatch: --gpu-profile: not recorded: the hook's figures never carried the recording (the request did not reach it: an environment that drops GPUWATCH_GPU_PROFILE, or a hook older than the flag)\n"
	}
	return fmt.Sprintf("gpuwatch: --gpu-profile: not recorded: gpuwatch read no loader's figures in the %.1f s the job ran (the hook records in a Python process that iterates a DataLoader, from the loop's 10th batch)\n", ran.Seconds())
}
