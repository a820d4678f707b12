package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestDemoRefusesLoadsThatOnlyHang: a knob past the loader's bounds is a
// usage error (exit 2) before any dataset is opened: --workers 100000
// kept a 2-core box busy for over ten minutes, deaf to SIGTERM.
func TestDemoRefusesLoadsThatOnlyHang(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"workers past the watchers' bound", []string{"--workers", "100000"}, "--workers 100000: at most 4096"},
		{"a decode cost of minutes per batch", []string{"--decode-cost", "30s"}, "--decode-cost 30s: at most 10s"},
		{"a start-up of an hour per worker", []string{"--worker-start", "1h"}, "--worker-start 1h0m0s: at most 60s"},
		{"a preset pushed past a bound", []string{"--scenario", "healthy", "--workers", "5000"}, "--workers 5000: at most 4096"},
		{"a jitter that is not a number", []string{"--jitter", "NaN"}, "--jitter must be between 0 and 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"demo", "--headless", "--dataset", t.TempDir()}, tc.args...)
			code := Run(args, &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), tc.stderr) || !strings.Contains(errb.String(), "--help' for usage") {
				t.Fatalf("exit %d, stderr %q; want 2 and a usage error saying %q", code, errb.String(), tc.stderr)
			}
		})
	}
}

// TestMaxWorkersIsTheKnobsBound: the loader refuses exactly the worker
// counts the knob table (and the loader protocol's gauge) refuse.
func TestMaxWorkersIsTheKnobsBound(t *testing.T) {
	if loader.MaxWorkers != sample.KnobWorkers.Max {
		t.Fatalf("loader.MaxWorkers = %d, sample.KnobWorkers.Max = %d: one bound", loader.MaxWorkers, sample.KnobWorkers.Max)
	}
}

// TestDemoCleanTakesNoOtherFlag (a hostile user's review): --clean with
// --dataset DIR removed the cache's datasets, not DIR, and dropped the
// other flags unsaid. It is refused, and the cache is left as it was.
func TestDemoCleanTakesNoOtherFlag(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	kept := filepath.Join(cache, "gpuwatch", "dataset-64MiB")
	shard := filepath.Join(kept, "shard-00000.bin")
	if err := os.MkdirAll(kept, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shard, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Run([]string{"demo", "--clean", "--dataset", t.TempDir()}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "takes no other flag (--dataset)") {
		t.Fatalf("exit %d, stderr %q: want a usage error naming --dataset", code, errb.String())
	}
	if _, err := os.Stat(shard); err != nil {
		t.Fatalf("the cache's dataset is gone: %v", err)
	}
	out.Reset()
	if code := Run([]string{"demo", "--clean"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "removed "+kept) {
		t.Fatalf("--clean alone: exit %d, stdout %q", code, out.String())
	}
}
