package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestCompletionScripts: bash, zsh and fish completions from the command
// tree (the release archives and packages ship them).
func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_gpuwatch", "zsh": "#compdef gpuwatch", "fish": "complete -c gpuwatch"} {
		var out, errb bytes.Buffer
		if code := Run([]string{"completion", shell}, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", shell, code, errb.String())
		}
		if !strings.Contains(out.String(), want) {
			t.Fatalf("%s completion lacks %q", shell, want)
		}
	}
}

// TestCompletionOfAnUnsupportedShell: a shell with no script is a usage
// error naming those that have one (cobra's own command printed its help
// and exited 0), and so is an argument after the shell; no shell at all
// is the help.
func TestCompletionOfAnUnsupportedShell(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"tcsh has no script", []string{"completion", "tcsh"}, 2, `unsupported shell "tcsh": want one of bash, fish, powershell, zsh`},
		{"an argument after the shell", []string{"completion", "bash", "extra"}, 2, `unknown command "extra"`},
		{"no shell is the help", []string{"completion"}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(tc.args, &out, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.code, errb.String())
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Fatalf("stderr %q, want it to say %q", errb.String(), tc.stderr)
			}
			if tc.code == 2 && (out.Len() != 0 || !strings.Contains(errb.String(), "--help' for usage")) {
				t.Fatalf("a usage error with stdout %q, stderr %q", out.String(), errb.String())
			}
			if tc.code == 0 && !strings.Contains(out.String(), "gpuwatch completion [command]") {
				t.Fatalf("no help: %q", out.String())
			}
		})
	}
}

// TestHelpOfAnUnknownTopic: `gpuwatch help` of no command is a usage
// error (cobra's own printed the root's help and exited 0), a command's
// help is its help, and the shells complete help's topics.
func TestHelpOfAnUnknownTopic(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string // in stdout (code 0) or stderr
	}{
		{[]string{"help", "tcsh"}, 2, `no command "tcsh"`},
		{[]string{"help", "run"}, 0, "gpuwatch run [flags] -- CMD"},
		{[]string{"help"}, 0, "Available Commands:"},
		{[]string{"__complete", "help", "ru"}, 0, "run\t"},
	} {
		var out, errb bytes.Buffer
		code := Run(tc.args, &out, &errb)
		got := out.String()
		if tc.code != 0 {
			got = errb.String()
		}
		if code != tc.code || !strings.Contains(got, tc.out) {
			t.Errorf("%q: exit %d, want %d; stdout %q stderr %q, want %q", tc.args, code, tc.code, out.String(), errb.String(), tc.out)
		}
	}
}
