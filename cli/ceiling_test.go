package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunCeilingFlag: --ceiling alone asks for 30 s, --ceiling=2s for 2;
// the job's environment says so (and only then), run says before the job
// starts that the loop will train on repeated batches, and a replay out
// of (0, 10m] is a usage error.
func TestRunCeilingFlag(t *testing.T) {
	for _, c := range []struct {
		flag, env, notice string
	}{
		{"--ceiling", "ceiling=30", "trains on repeated batches for 30s to measure its rate with input free"},
		{"--ceiling=2500ms", "ceiling=2.5", "for 2.5s"},
		{"--interval=1s", "ceiling=", ""},
	} {
		t.Run(c.flag, func(t *testing.T) {
			var out, errb bytes.Buffer
			t.Setenv(ceilingEnv, "99") // gpuwatch's own: never the job's
			log := filepath.Join(t.TempDir(), "job.log")
			code := Run([]string{"run", "--json", "--duration", "1s", "--job-log", log, c.flag, "--", "sh", "-c", "echo ceiling=$" + ceilingEnv}, &out, &errb)
			got, _ := os.ReadFile(log)
			if code != 0 || string(got) != c.env+"\n" {
				t.Fatalf("exit %d, job's output %q, stderr %q; want %q", code, got, errb.String(), c.env)
			}
			if !strings.Contains(errb.String(), c.notice) || (c.notice == "") != !strings.Contains(errb.String(), "--ceiling") {
				t.Fatalf("stderr %q, want the notice %q", errb.String(), c.notice)
			}
		})
	}
	for _, bad := range []string{"--ceiling=0s", "--ceiling=11m", "--ceiling=-1s", "--ceiling=soon"} {
		var out, errb bytes.Buffer
		if code := Run([]string{"run", "--json", bad, "--", "true"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "ceiling") {
			t.Errorf("%s: exit %d, stderr %q", bad, code, errb.String())
		}
	}
}

// TestWithCeilingEnv: the job's GPUWATCH_CEILING_SECONDS is run's, never
// gpuwatch's own.
func TestWithCeilingEnv(t *testing.T) {
	env := withCeiling([]string{"A=1", ceilingEnv + "=7", "B=2"}, 0)
	if strings.Join(env, " ") != "A=1 B=2" {
		t.Fatalf("%q", env)
	}
	if env := withCeiling([]string{"A=1"}, 3e9); strings.Join(env, " ") != "A=1 "+ceilingEnv+"=3" {
		t.Fatalf("%q", env)
	}
}

// TestBareOptionalFlagsWithASpacedValue: --ceiling and --gpu-profile take
// their value only after "="; written with a space, the value would be
// run as the job ("3: executable file not found" after the notice). It is
// a usage error that says how to write it, before anything runs, on every
// command that has the flag; a command after "--" is the user's, whatever
// it is named.
func TestBareOptionalFlagsWithASpacedValue(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--gpu-profile", "3", "--", "true"}, "--gpu-profile=3"},
		{[]string{"run", "--gpu-profile", "3", "true"}, "--gpu-profile=3"},
		{[]string{"run", "--ceiling", "10s", "--", "true"}, "--ceiling=10s"},
		{[]string{"run", "--ceiling", "45", "true"}, "--ceiling=45s"},
		{[]string{"run", "--ceiling=20s", "--gpu-profile", "3", "--", "true"}, "--gpu-profile=3"},
		{[]string{"run", "--ceiling", "--gpu-profile", "3", "--", "true"}, "--gpu-profile=3"},
		{[]string{"attach", "--gpu-profile", "7", "http://127.0.0.1:1"}, "--gpu-profile=7"},
		{[]string{"tune", "--ceiling", "20s", "--", "true"}, "--ceiling=20s"},
		{[]string{"sweep", "--ceiling", "20s", "--", "true"}, "--ceiling=20s"},
	} {
		var out, errb bytes.Buffer
		code := Run(c.args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), c.want) || strings.Contains(errb.String(), "the hook records") || strings.Contains(errb.String(), "trains on") {
			t.Errorf("%q: exit %d, stderr %q; want a usage error naming %s before any notice", c.args, code, errb.String(), c.want)
		}
	}
	// A flag given its value with "=" is not taken for the bare one: a
	// command named 3 after --gpu-profile=4 runs (and fails as no such
	// command, exit 127 from the job's start).
	if code := Run([]string{"run", "--json", "--duration", "1s", "--gpu-profile=4", "3"}, &bytes.Buffer{}, &bytes.Buffer{}); code == 2 {
		t.Errorf("--gpu-profile=4 3: a usage error")
	}
	// After "--" the command is the user's, whatever its name.
	var out, errb bytes.Buffer
	log := filepath.Join(t.TempDir(), "job.log")
	if code := Run([]string{"run", "--json", "--duration", "1s", "--job-log", log, "--ceiling", "--", "sh", "-c", "echo ran"}, &out, &errb); code != 0 {
		t.Errorf("--ceiling -- sh: exit %d, stderr %q", code, errb.String())
	}
}

// TestTuneNamesTheFlagOutOfRange: each of tune's limits is said by its
// own flag and value, exit 2 (a user's review: --runs 0, --run-for 0s,
// --run-for -5s and --interval 0 all read one message naming none).
func TestTuneNamesTheFlagOutOfRange(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "--runs", "0"}, "--runs 0: want at least 1"},
		{[]string{"tune", "--run-for", "0s"}, "--run-for 0s: want at least 5 intervals"},
		{[]string{"tune", "--run-for", "-5s"}, "--run-for -5s: want at least 5 intervals"},
		{[]string{"tune", "--interval", "0"}, "--interval 0s: want at least 100ms"},
	} {
		var out, errb bytes.Buffer
		if code := Run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %q", c.args, code, errb.String(), c.want)
		}
	}
}
