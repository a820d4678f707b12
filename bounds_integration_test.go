//go:build integration

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// endless serves /metrics answers that never end, n of them on loopback.
func endless(t testing.TB, n int) []string {
	chunk := []byte(strings.Repeat("# endless\n", 6554)) // 64 KiB
	var urls []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		urls = append(urls, "http://"+ln.Addr().String())
	}
	return urls
}

// BenchmarkAttachEndlessEndpoints runs the real binary attached to 256
// /metrics endpoints that never end (128 took attach to 2.92 GB when each
// kept a 16 MiB buffer) for 20 s, and reports its peak RSS; over 300 MB
// fails. CI runs it once (-benchtime 1x).
func BenchmarkAttachEndlessEndpoints(b *testing.B) {
	urls := endless(b, 255)
	// One loader that answers, so the session runs its 20 s after the
	// first connection (with none, it ends there).
	urls = append(urls, hostileServer(b)+"/markup")
	args := []string{"--headless", "--json", "--duration", "20s", "--discover=false"}
	for _, u := range urls {
		args = append(args, "--attach", u)
	}
	bin := binary(b)
	for range b.N {
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = nil, &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("gpuwatch: %v after %v: %s", err, time.Since(start).Round(time.Millisecond), bytes.TrimSpace(stderr.Bytes()))
		}
		if ran := time.Since(start); ran < 20*time.Second {
			b.Fatalf("the session ran %v, not its 20 s", ran)
		}
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
		b.ReportMetric(float64(rss)/(1<<20), "MiB-peak-RSS")
		if rss > 300<<20 {
			b.Fatalf("peak RSS %d MiB attached to 256 endless endpoints, want under 300 MiB", rss>>20)
		}
	}
}

// TestAGzipBombEvery3sStaysBounded attaches to a loader whose every CPU
// profile is a 512 MiB gzip bomb, taking one every 3 s for 25 s: each is
// skipped, and the peak RSS stays under 300 MB (it reached 318–339 MB).
func TestAGzipBombEvery3sStaysBounded(t *testing.T) {
	base := hostileServer(t)
	cmd, ch := startJSON(t, "attach", base+"/bomb", "--headless", "--json", "--duration", "25s",
		"--profile-every", "3s", "--profile-seconds", "1")
	skipped, peak := 0, int64(0)
	for l := range ch {
		if l.Type != "frame" {
			continue
		}
		if l.Profile != nil && strings.Contains(l.Profile.Error, "profile uncompressed larger than 64 MiB") {
			skipped++
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)); err == nil && strings.Contains(string(b), "VmHWM") {
			peak = peakRSS(t, cmd.Process.Pid)
		}
	}
	t.Logf("peak RSS %d MiB over 25 s of bombs every 3 s", peak>>20)
	if skipped == 0 || peak == 0 {
		t.Fatalf("no profile was taken and skipped (%d), or no RSS read (%d)", skipped, peak)
	}
	if peak > 300<<20 {
		t.Fatalf("peak RSS %d MiB, want under 300 MiB", peak>>20)
	}
}

// TestAJunkDiscoveryFolderHidesNoLoader fills the discovery folder with
// 50,000 junk files beside a real `gpuwatch loader`'s announcement: the
// loader is found and read in every frame (the scan once ran inside the
// tick, which then missed the loader).
func TestAJunkDiscoveryFolderHidesNoLoader(t *testing.T) {
	binary(t)
	dir := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "gpuwatch")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range 50_000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("junk%05d.json", i)), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := range 50_000 {
			os.Remove(filepath.Join(dir, fmt.Sprintf("junk%05d.json", i)))
		}
	})
	_, url, _ := startLoader(t, "--scenario", "healthy")
	_, ch := startJSON(t, "--headless", "--json", "--duration", "12s")
	frames, seen := 0, 0
	for l := range ch {
		if l.Type != "frame" {
			continue
		}
		frames++
		for _, r := range l.Ranks {
			if r.URL == url && r.Connected {
				seen++
			}
		}
		if l.Loader != nil && len(l.Ranks) == 0 && l.Loader.Connected != nil && *l.Loader.Connected {
			seen++
		}
		if strings.Contains(l.Unavailable["loader"], "did not answer within") {
			t.Fatalf("frame %d: the loader probe missed its tick: %q", frames, l.Unavailable["loader"])
		}
	}
	if frames < 8 || seen < frames-2 {
		t.Fatalf("the loader answered in %d of %d frames", seen, frames)
	}
}

// TestASlowRankLeavesTheOthersFresh attaches to two real loaders and a
// slowloris endpoint (headers at once, a byte every 200 ms): every frame
// comes on time, the two loaders are fresh in each, and the slow one is
// marked slow or disconnected, never holding them back.
func TestASlowRankLeavesTheOthersFresh(t *testing.T) {
	_, u0, _ := startLoader(t, "--scenario", "healthy")
	_, u1, _ := startLoader(t, "--scenario", "starved")
	slow := hostileServer(t) + "/trickle"
	_, ch := startJSON(t, "--headless", "--json", "--duration", "10s", "--discover=false",
		"--attach", u0, "--attach", u1, "--attach", slow)
	frames, last := 0, time.Time{}
	for l := range ch {
		if l.Type != "frame" || len(l.Ranks) == 0 {
			continue
		}
		frames++
		now := time.Now()
		if !last.IsZero() && now.Sub(last) > 1500*time.Millisecond {
			t.Errorf("frame %d came %v after the one before", frames, now.Sub(last))
		}
		last = now
		for _, r := range l.Ranks {
			switch {
			case r.URL == u0 || r.URL == u1:
				if frames > 2 && (!r.Connected || r.WaitShare == nil) {
					t.Errorf("frame %d: fast rank %s not fresh: %+v", frames, r.URL, r)
				}
			case r.Connected && r.SlowSince == nil && frames > 1:
				t.Errorf("frame %d: the slow rank is neither slow nor disconnected: %+v", frames, r)
			}
		}
	}
	if frames < 7 {
		t.Fatalf("%d frames in 10 s", frames)
	}
}

// TestServeWithTwoLoadersSayingRankZero: two `gpuwatch loader`s started
// with RANK=0 (two jobs on a node), `gpuwatch serve` attached to both:
// every scrape answers 200 with both as series told apart by their
// loader, the verdict names no straggler, and promtool accepts the page.
func TestServeWithTwoLoadersSayingRankZero(t *testing.T) {
	var urls []string
	for _, sc := range []string{"healthy", "starved"} {
		cmd := exec.Command(binary(t), "loader", "--listen", "127.0.0.1:0", "--progress-every", "1s", "--scenario", sc)
		cmd.Env = append(os.Environ(), "RANK=0", "WORLD_SIZE=2")
		_, out := startCmd(t, cmd)
		first, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, loaderURL(t, first))
	}
	addr := freePort(t)
	if _, _, first := startBinary(t, "serve", "--listen", addr, "--interval", "500ms", "--discover=false",
		"--attach", urls[0], "--attach", urls[1]); !strings.Contains(first, addr) {
		t.Fatalf("serve: %q", first)
	}
	var page string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("scrape: %s\n%s", resp.Status, b)
		}
		page = string(b)
		if strings.Count(page, "gpuwatch_rank_wait_ratio{") == 2 {
			break
		}
	}
	for _, u := range urls {
		if !strings.Contains(page, `gpuwatch_rank_wait_ratio{loader="`+u+`",rank="0",world_size="2"}`) {
			t.Fatalf("no rank 0 series for %s:\n%s", u, grepLines(page, "gpuwatch_rank_"))
		}
	}
	if strings.Contains(page, "gpuwatch_rank_straggler{") && strings.Contains(grepLines(page, "gpuwatch_rank_straggler{"), "} 1") {
		t.Errorf("a straggler named among ambiguous ranks:\n%s", grepLines(page, "gpuwatch_rank_straggler"))
	}
	promtoolCheck(t, "http://"+addr+"/metrics")
}

func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestAPIDLeavesOtherProcessesLoadersOut: with --pid, a loader another
// process announced is another job's and is not read (a hostile user's
// review: a real `gpuwatch loader`, keeping up, read a starved --pid job
// healthy); without --pid the same loader is found, so the folder is
// read.
func TestAPIDLeavesOtherProcessesLoadersOut(t *testing.T) {
	_, url, _ := startLoader(t, "--scenario", "healthy")
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	read := func(args ...string) (frames, seen int) {
		_, ch := startJSON(t, append([]string{"--headless", "--json", "--duration", "6s"}, args...)...)
		for l := range ch {
			if l.Type != "frame" {
				continue
			}
			frames++
			for _, r := range l.Ranks {
				if r.URL == url {
					seen++
				}
			}
			if l.Loader != nil && len(l.Ranks) == 0 && l.Loader.Connected != nil && *l.Loader.Connected {
				seen++
			}
		}
		return frames, seen
	}
	if frames, seen := read(); frames < 3 || seen == 0 {
		t.Fatalf("without --pid the announced loader was read in %d of %d frames: the test reads no discovery", seen, frames)
	}
	if frames, seen := read("--pid", strconv.Itoa(other.Process.Pid)); frames < 3 || seen > 0 {
		t.Fatalf("--pid %d (sleep): the loader of another process was read in %d of %d frames", other.Process.Pid, seen, frames)
	}
}
