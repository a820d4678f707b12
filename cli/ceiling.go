package cli

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuwatch/gpuwatch/probes/endpoint"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session/tune"
)

// defaultCeiling is --ceiling's replay when the flag is given bare.
const defaultCeiling = 30 * time.Second

// ceilingEnv is the variable the hook reads under gpuwatch run: the
// ceiling's replay in seconds (python/gpuwatch_hook/_run.py CEILING_ENV).
const ceilingEnv = "GPUWATCH_CEILING_SECONDS"

// addCeilingFlag registers --ceiling[=DURATION] (bare: 30s) into d.
func addCeilingFlag(cmd *cobra.Command, d *time.Duration, usage string) {
	cmd.Flags().DurationVar(d, "ceiling", 0, usage)
	cmd.Flags().Lookup("ceiling").NoOptDefVal = defaultCeiling.String()
}

// checkCeiling checks --ceiling when given: a replay in (0, 600s], and
// not written "--ceiling 10s", which would run 10s as the command.
func checkCeiling(cmd *cobra.Command, d time.Duration, args []string) error {
	if !cmd.Flags().Changed("ceiling") {
		return nil
	}
	if a, ok := bareValue(cmd, args); ok && d == defaultCeiling { // given bare, or =30s
		want := a
		_, err := time.ParseDuration(a)
		_, nerr := strconv.ParseFloat(a, 64)
		if err != nil && nerr == nil {
			want += "s" // a duration needs its unit
		}
		if err == nil || nerr == nil {
			return usageErrorf(cmd, "--ceiling takes its replay after \"=\": write --ceiling=%s (alone it replays %v; %q after a space would be read as an argument, not its replay)", want, defaultCeiling, a)
		}
	}
	if d <= 0 || d > endpoint.MaxCeiling {
		return usageErrorf(cmd, "--ceiling %v: want a replay longer than 0 and at most %v (--ceiling alone: %v)", d, endpoint.MaxCeiling, defaultCeiling)
	}
	return nil
}

// ceilingNotice is what run says before the job starts with --ceiling:
// the loop trains on repeated batches for that long.
func ceilingNotice(d time.Duration) string {
	return "gpuwatch: --ceiling: once the loop is warm it trains on repeated batches for " + d.String() + " to measure its rate with input free\n"
}

// withCeiling is the job's environment with the ceiling's replay asked
// for (d > 0) or not, whatever gpuwatch's own environment said.
func withCeiling(env []string, d time.Duration) []string {
	out := env[:0:0]
	for _, kv := range env {
		if len(kv) > len(ceilingEnv) && kv[:len(ceilingEnv)+1] == ceilingEnv+"=" {
			continue
		}
		out = append(out, kv)
	}
	if d > 0 {
		out = append(out, ceilingEnv+"="+strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
	}
	return out
}

// measureCeiling is tune's and sweep's --ceiling: one extra run of the
// command that measures the loop's ceiling (tune.CeilingMeasurer) with a
// replay of replay, said on stderr before it starts and once it is
// measured; runFor bounds the run past the replay.
func measureCeiling(cmd *cobra.Command, stderr io.Writer, t tune.Trials, start tune.Setting, replay, runFor time.Duration) (float64, error) {
	m, ok := t.(tune.CeilingMeasurer)
	if !ok {
		return 0, usageErrorf(cmd, "--ceiling: this loader cannot measure its ceiling (the hook under your command can)")
	}
	fmt.Fprintf(stderr, "gpuwatch: --ceiling: one extra run first: once the loop is warm it trains on repeated batches for %v to measure its rate with input free\n", replay)
	c, err := m.MeasureCeiling(cmd.Context(), start, replay, replay+runFor)
	if err != nil {
		return 0, fmt.Errorf("--ceiling: %w", err)
	}
	l := sample.Loader{Ceiling: &c}
	fmt.Fprintf(stderr, "gpuwatch: --ceiling: %s\n", l.CeilingSummary())
	return *c.SamplesPerSec, nil
}
