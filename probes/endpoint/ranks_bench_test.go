package endpoint

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/probes/host"
)

// TestHelperRankServers is not a test: run with GPUWATCH_HELPER_RANKS=N it
// serves N loader endpoints (the captured metrics of a real loader) in this
// process, prints their addresses, and serves until its stdin closes. The
// ranks benchmark runs it as a child, so that the endpoints' CPU is not
// counted as gpuwatch's.
func TestHelperRankServers(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("GPUWATCH_HELPER_RANKS"))
	if err != nil {
		t.Skip("a helper process for BenchmarkAttachRanks")
	}
	text := metricsText(t)
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(text) }))
	}
	fmt.Println(strings.Join(addrs, " "))
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAttachRanks is a headless tick — every system probe and the
// ranks' loaders — attached to 1, 8 and 64 endpoints served by another
// process: ns/op is the tick's wall time, cpu-µs/tick gpuwatch's own CPU
// per tick. Issue: 8 ranks at most 2× the CPU of one; 64 within 10 ms.
func BenchmarkAttachRanks(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			helper := exec.Command(os.Args[0], "-test.run=^TestHelperRankServers$")
			helper.Env = append(os.Environ(), "GPUWATCH_HELPER_RANKS="+strconv.Itoa(n))
			stdin, _ := helper.StdinPipe()
			stdout, _ := helper.StdoutPipe()
			if err := helper.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { stdin.Close(); _ = helper.Wait() }()
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			var attached []*Attach
			for _, addr := range strings.Fields(line) {
				a, err := NewAttach("http://" + addr)
				if err != nil {
					b.Fatal(err)
				}
				attached = append(attached, a)
			}
			r := probes.Roots{}.WithDefaults()
			ps := []probes.Probe{host.NewCPU(r.Proc), host.NewMem(r.Proc), host.NewDisk(r, host.DiskOptions{}), host.NewNet(r.Proc, host.NetOptions{}), host.NewPSI(r.Proc), host.NewProc(r.Proc, host.ProcOptions{}), NewRanks(attached, nil, time.Second)}
			s := probes.NewSampler(ps, probes.SamplerOptions{Interval: time.Second, Timeout: 5 * time.Second})
			defer s.Close()
			ctx := context.Background()
			for range 3 { // connections up, first readings taken
				if f := s.Tick(ctx); f.Loader == nil {
					b.Fatalf("no loader read: %v", f.Unavailable)
				}
			}
			b.ResetTimer()
			start := cpuTime()
			for i := 0; i < b.N; i++ {
				s.Tick(ctx)
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/tick")
		})
	}
}
