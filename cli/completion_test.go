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
