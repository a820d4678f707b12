//go:build integration

package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A loader's /metrics that parses: the hostile server below answers it
// while it attacks through another path.
const okMetrics = "gpuwatch_loader_batches_total 1\ngpuwatch_loader_info{pid=\"1\",kind=\"go\"} 1\n"

// hostileServer serves bad answers (a gzip bomb, an endless or trickling
// /metrics, markup and credentials), one per path
// prefix: the test picks one by the URL it attaches to.
func hostileServer(t testing.TB) string {
	t.Helper()
	var bombOnce sync.Once
	var bomb []byte
	mux := http.NewServeMux()
	metrics := func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, okMetrics) }
	// A 512 MiB profile of zeros, gzipped to a few hundred KB.
	mux.HandleFunc("/bomb/metrics", metrics)
	mux.HandleFunc("/bomb/debug/pprof/profile", func(w http.ResponseWriter, _ *http.Request) {
		bombOnce.Do(func() {
			var b bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
			zero := make([]byte, 1<<20)
			for range 512 {
				zw.Write(zero)
			}
			zw.Close()
			bomb = b.Bytes()
		})
		w.Write(bomb)
	})
	// /metrics larger than the 16 MiB cap.
	mux.HandleFunc("/huge/metrics", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, okMetrics)
		line := []byte("# " + strings.Repeat("x", 1<<16) + "\n")
		for range 17 << 4 {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	})
	// /metrics that trickles a byte every 200 ms: never done within 3 s.
	mux.HandleFunc("/trickle/metrics", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 100 && r.Context().Err() == nil; i++ {
			w.Write([]byte{'#'})
			w.(http.Flusher).Flush()
			time.Sleep(200 * time.Millisecond)
		}
	})
	// Markup, escapes and a password-looking string in every label.
	mux.HandleFunc("/markup/metrics", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, okMetrics)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// peakRSS is a process's high-water resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// TestAttachSurvivesHostileEndpoints attaches the real binary, at its
// default profile settings, to endpoints that answer badly: each bad
// answer is skipped with its reason, the frames go on, memory stays
// bounded and credentials never show.
func TestAttachSurvivesHostileEndpoints(t *testing.T) {
	base := hostileServer(t)
	t.Run("a 512 MiB gzip bomb as the profile", func(t *testing.T) {
		cmd, ch := startJSON(t, "attach", base+"/bomb", "--headless", "--json", "--duration", "30s")
		await(t, ch, "the profile skipped for its size", 25*time.Second, func(l attachLine) bool {
			return l.Profile != nil && strings.Contains(l.Profile.Error, "profile uncompressed larger than 64 MiB")
		})
		// A second frame: the process goes on.
		await(t, ch, "another frame", 5*time.Second, func(l attachLine) bool { return l.Loader != nil })
		if rss := peakRSS(t, cmd.Process.Pid); rss > 300<<20 {
			t.Fatalf("peak RSS %d MiB, want under 300 MiB", rss>>20)
		} else {
			t.Logf("peak RSS %d MiB after a 512 MiB bomb", rss>>20)
		}
	})
	t.Run("a /metrics answer past 16 MiB", func(t *testing.T) {
		out, err := execGpuwatch(t, "attach", base+"/huge", "--headless", "--json", "--duration", "3s")
		if code := exitCode(err); code != 1 || !strings.Contains(out, "/metrics: answer larger than 16 MiB") {
			t.Fatalf("exit %d: %s", code, out)
		}
	})
	t.Run("a /metrics answer that trickles", func(t *testing.T) {
		out, err := execGpuwatch(t, "attach", base+"/trickle", "--headless", "--json", "--duration", "3s")
		if code := exitCode(err); code != 1 || !strings.Contains(out, "no answer within 3s") || strings.Contains(out, "deadline") {
			t.Fatalf("exit %d: %s", code, out)
		}
	})
	t.Run("credentials in the URL", func(t *testing.T) {
		u := strings.Replace(base, "http://", "http://agent:hunter2@", 1) + "/markup"
		dir := t.TempDir()
		rec := dir + "/run.jsonl"
		out, err := execGpuwatch(t, "record", "-o", rec, "--attach", u, "--duration", "3s", "--report", dir+"/run.html")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, f := range []string{rec, dir + "/run.html"} {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte("hunter2")) {
				t.Errorf("%s holds the password", f)
			}
			if !bytes.Contains(b, []byte("REDACTED@")) {
				t.Errorf("%s does not show the redacted URL", f)
			}
		}
		if strings.Contains(out, "hunter2") {
			t.Errorf("output holds the password: %s", out)
		}
	})
}

// execGpuwatch runs the binary to its end and returns its combined output.
// execGpuwatch runs the binary to its end. A run that would hang (a
// refusal that never comes) is killed after 2 minutes and fails the test
// by name, not the whole package at its timeout.
func execGpuwatch(t *testing.T, args ...string) (string, error) {
	t.Helper()
	const limit = 2 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("gpuwatch %s: still running after %v: %s", strings.Join(args, " "), limit, out)
	}
	return string(out), err
}

// TestTwoWatchersOfOneGoLoaderBothGetProfiles attaches two gpuwatch
// processes, at the default profile settings, to one `gpuwatch loader`.
// Go allows one CPU profile at a time and answers the second 500 "cpu
// profiling already in use": the second watcher retries after a jittered
// wait, and both show a profile.
func TestTwoWatchersOfOneGoLoaderBothGetProfiles(t *testing.T) {
	_, url, _ := startLoader(t, "--scenario", "cpu-bound")
	got := make(chan string, 2)
	for i := range 2 {
		_, ch := startJSON(t, "attach", url, "--headless", "--json", "--duration", "60s")
		go func() {
			deadline := time.After(45 * time.Second)
			for {
				select {
				case l, ok := <-ch:
					if !ok {
						got <- fmt.Sprintf("watcher %d ended without a profile", i)
						return
					}
					if l.Profile != nil && len(l.Profile.Top) > 0 {
						got <- ""
						return
					}
				case <-deadline:
					got <- fmt.Sprintf("watcher %d: no profile within 45 s", i)
					return
				}
			}
		}()
	}
	for range 2 {
		if msg := <-got; msg != "" {
			t.Error(msg)
		}
	}
}
