package cli

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// golden compares got with testdata/name (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cli -run Golden -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./cli -run Golden -update rewrites it); got:\n%s", path, got)
	}
}

// commands is every command a user types, "" the root.
var commands = []string{"", "demo", "run", "attach", "record", "replay", "report", "serve", "fleet", "loader", "tune", "sweep"}

// watching are the commands that watch this machine: their shared flags
// come under one heading.
var watching = map[string]bool{"": true, "demo": true, "run": true, "attach": true, "record": true, "serve": true}

// TestHelpGolden holds every command's --help: the words, the examples and
// the flag groups (the watch flags under their own heading in every
// command that watches, and only there).
func TestHelpGolden(t *testing.T) {
	t.Setenv("HOME", "/home/user")
	t.Setenv("XDG_CACHE_HOME", "/home/user/.cache")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	for _, c := range commands {
		name := c
		if name == "" {
			name = "gpuwatch"
		}
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := []string{"--help"}
			if c != "" {
				args = []string{c, "--help"}
			}
			if code := Run(args, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			help := out.String()
			if has := strings.Contains(help, "\nWatch flags (the same in every command that watches):\n"); has != watching[c] {
				t.Errorf("watch flags heading: %v, want %v", has, watching[c])
			}
			golden(t, filepath.Join("help", name+".golden"), help)
		})
	}
}

// TestMessagesGolden holds what each usual mistake prints and its exit
// status: one line, the value the user typed, no Go error string.
func TestMessagesGolden(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "run.jsonl")
	if err := os.WriteFile(existing, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, args := range [][]string{
		{"--bogus"},
		{"--pid", ""},
		{"--pid", "abc"},
		{"--pid", "2147483646"},
		{"--interval", "1ms"},
		{"--threshold", "foo=1", "--once"},
		{"--exit-with-job"},
		{"demo", "--scenario", "nope"},
		{"record", "-o", existing},
		{"record", "--once"},
		{"serve", "--once"},
		{"report", "../recording/testdata/tour.jsonl", "-o", "run.txt"},
		{"report", "../recording/testdata/tour.jsonl"},
		{"attach"},
		{"replay", filepath.Join(dir, "missing.jsonl")},
		{"frobnicate"},
		{"report", "run.jsonl", "run.md"},
		{"report"},
		{"record", "run.jsonl"},
		{"demo", "starved"},
		{"fleet", "http://admin:hunter2@prometheus:9090", "extra"},
	} {
		var out, errb bytes.Buffer
		code := Run(args, &out, &errb)
		msg := strings.ReplaceAll(errb.String(), dir, "DIR")
		for _, bad := range []string{"strconv.", "<nil>", "invalid syntax", "dial tcp", "panic", "hunter2", "arg(s)"} {
			if strings.Contains(msg, bad) {
				t.Errorf("%q: a Go error string (%s) reached the user: %s", args, bad, msg)
			}
		}
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], dir, "DIR")
		}
		fmt.Fprintf(&b, "$ gpuwatch %s\nexit %d\n%s\n", strings.Join(args, " "), code, msg)
	}
	golden(t, "messages.golden", b.String())
}
