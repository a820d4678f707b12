//go:build integration

package main

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
)

// floodLine is what the flood test reads of a JSON line.
type floodLine struct {
	Type        string            `json:"type"`
	Time        time.Time         `json:"time"`
	Unavailable map[string]string `json:"unavailable"`
	Loader      *struct {
		Source  string `json:"source"`
		Sampled *struct {
			BeforeFirstBatch bool `json:"before_first_batch"`
		} `json:"sampled"`
	} `json:"loader"`
	Verdict *struct {
		Kind     string `json:"kind"`
		Evidence []struct {
			Text string `json:"text"`
		} `json:"evidence"`
	} `json:"verdict"`
}

// hookURL waits for the hook's announcement in dir and returns its URL.
func hookURL(t *testing.T, dir string, within time.Duration) string {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, n := range names {
			var ann struct {
				URL string `json:"url"`
			}
			if b, err := os.ReadFile(n); err == nil && json.Unmarshal(b, &ann) == nil && ann.URL != "" {
				return ann.URL
			}
		}
	}
	t.Fatalf("no announcement in %s within %v", dir, within)
	return ""
}

// flood holds n idle connections to addr, as this same user (a careless
// script, a second dashboard), each opened again as soon as it is closed,
// until stop is closed.
func flood(addr string, n int, stop chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				buf := make([]byte, 1)
				for {
					_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
					_, err := c.Read(buf)
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						select {
						case <-stop:
						default:
							continue
						}
					}
					break // closed by the hook, or stopped
				}
				c.Close()
			}
		}()
	}
	return &wg
}

// TestAFloodedHookIsNeverIdle (issue 57, item 2): 16 idle connections to
// the hook of a real PyTorch loop, held by the same user, took every slot
// of its server; the sampled loop stood in with before_first_batch, and the
// verdict went warming_up, then idle, while the loop ran. Now gpuwatch is
// served (its token has slots of its own, idle connections are closed
// within 2 s) or says the loader does not answer; never idle or
// warming_up once the loop runs.
func TestAFloodedHookIsNeverIdle(t *testing.T) {
	py := python(t, true)
	bin := binary(t)
	runtime := t.TempDir()
	log := filepath.Join(t.TempDir(), "job.log")
	cmd := exec.Command(bin, "run", "--json", "--interval", "500ms", "--duration", "15s", "--profile-every", "0", "--job-log", log, "--",
		py, "python/examples/dataloader_bench.py", "--workers", "2", "--cost", "0.0005", "--step", "0.01", "--seconds", "40", "--warmup", "0")
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+runtime, "OPENBLAS_NUM_THREADS=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(stdout); lines <- b }()
	url := hookURL(t, filepath.Join(runtime, "gpuwatch"), 30*time.Second)
	flooded := time.Now()
	stop := make(chan struct{})
	wg := flood(strings.TrimPrefix(url, "http://"), 16, stop)
	out := <-lines
	close(stop)
	wg.Wait()
	_ = cmd.Wait()
	frames, read, down, after := 0, 0, 0, 0
	for _, raw := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var l floodLine
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("not gpuwatch's JSON: %q: %v", raw, err)
		}
		if l.Type != "frame" || l.Verdict == nil {
			continue
		}
		frames++
		what := l.Verdict.Kind
		if len(l.Verdict.Evidence) > 0 {
			what += ": " + l.Verdict.Evidence[0].Text
		}
		if !l.Time.After(flooded) {
			continue // the loop starting: warming_up is right
		}
		after++
		if l.Loader != nil && l.Loader.Sampled == nil {
			read++
		}
		if strings.Contains(l.Unavailable["loader"], "does not answer") {
			down++
		}
		if testing.Verbose() {
			t.Logf("%v into the flood: %s (loader: %s)", l.Time.Sub(flooded).Round(100*time.Millisecond), what, l.Unavailable["loader"])
		}
		// Discovery reads the announcement within its 2 s scan; the
		// loop's window then begins two frames after run's start-up grace
		// (their intervals hold the start) and needs MinFrames of its own.
		settle := 2*time.Second + time.Duration(2+diagnose.DefaultThresholds().MinFrames)*500*time.Millisecond
		if !l.Time.After(flooded.Add(settle)) {
			continue
		}
		if l.Loader != nil && l.Loader.Sampled != nil && l.Loader.Sampled.BeforeFirstBatch {
			t.Errorf("frame %d (%v into the flood) said the loop has had no batch: %s", frames, l.Time.Sub(flooded).Round(time.Second), what)
		}
		if l.Verdict.Kind == "idle" || l.Verdict.Kind == "warming_up" {
			t.Errorf("frame %d (%v into the flood): %s", frames, l.Time.Sub(flooded).Round(time.Second), what)
		}
	}
	t.Logf("%d frames, %d under the flood: %d read the hook, %d said it does not answer", frames, after, read, down)
	if after < 10 {
		t.Fatalf("%d frames in 15 s:\n%s", frames, out)
	}
	if read+down == 0 {
		t.Errorf("no frame read the loader or said it does not answer")
	}
}
