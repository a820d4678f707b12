package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"unknown flag is a usage error", []string{"--bogus"}, 2, "unknown flag: --bogus"},
		{"bad duration value", []string{"--interval", "abc"}, 2, `invalid argument "abc"`},
		{"interval too short", []string{"--interval", "1ms"}, 2, "must be between 50ms and 1h"},
		{"negative duration", []string{"--duration", "-1s"}, 2, "must not be negative"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"pid that does not exist", []string{"--pid", "999999999"}, 1, "--pid 999999999: no such process"},
		{"version", []string{"version"}, 0, ""},
		{"help", []string{"--help"}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.code, errb.String())
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Fatalf("stderr %q, want it to say %q", errb.String(), tc.stderr)
			}
			if tc.code == 2 && !strings.Contains(errb.String(), "--help' for usage") {
				t.Fatalf("usage error without the usage hint: %q", errb.String())
			}
			if tc.code != 0 && strings.Count(errb.String(), "\n") > 2 {
				t.Fatalf("error is not short: %q", errb.String())
			}
		})
	}
}

// TestHeadlessJSONContract runs the command on this machine and checks every
// member the JSON contract promises (README, docs/json.md).
func TestHeadlessJSONContract(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--headless", "--json", "--interval", "100ms", "--duration", "450ms"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d is not JSON: %v", n, err)
		}
		if line["type"] != "frame" {
			t.Fatalf("type = %v", line["type"])
		}
		if _, err := time.Parse(time.RFC3339Nano, line["time"].(string)); err != nil {
			t.Fatalf("time %v: %v", line["time"], err)
		}
		cpu := line["cpu"].(map[string]any)
		cores := cpu["cores"].([]any)
		if len(cores) == 0 {
			t.Fatal("no cores")
		}
		if _, ok := cores[0].(map[string]any)["busy_pct"].(float64); !ok {
			t.Fatal("core without busy_pct")
		}
		if _, ok := cpu["iowait_pct"].(float64); !ok {
			t.Fatal("no cpu.iowait_pct")
		}
		if _, ok := line["mem"].(map[string]any)["available_bytes"].(float64); !ok {
			t.Fatal("no mem.available_bytes")
		}
		for _, d := range line["disks"].([]any) {
			dm := d.(map[string]any)
			for _, k := range []string{"name", "busy_pct", "read_bytes_per_sec", "write_bytes_per_sec"} {
				if _, ok := dm[k]; !ok {
					t.Fatalf("disk without %s: %v", k, dm)
				}
			}
		}
		if _, ok := line["gpus"].([]any); !ok {
			t.Fatalf("gpus = %v, want an array", line["gpus"])
		}
		if _, ok := line["unavailable"].(map[string]any); !ok {
			t.Fatalf("unavailable = %v, want an object", line["unavailable"])
		}
	}
	if n < 3 {
		t.Fatalf("%d frames in 450 ms at 100 ms, want at least 3", n)
	}
}

func TestHeadlessLineIsReadable(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--headless", "--interval", "100ms", "--duration", "250ms"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	for _, want := range []string{" cpu ", "| mem ", "avail"} {
		if !strings.Contains(first, want) {
			t.Fatalf("line %q lacks %q", first, want)
		}
	}
}
