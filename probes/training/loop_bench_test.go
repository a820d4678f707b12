package training

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// BenchmarkLoopSample is one sample of a blocked thread: its stat, wchan
// and syscall, read with pread on descriptors kept open.
func BenchmarkLoopSample(b *testing.B) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		b.Skip(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	l := NewLoop(LoopOptions{})
	th := l.open(cmd.Process.Pid)
	defer th.close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := l.read(th); !ok {
			b.Fatal("unreadable")
		}
	}
	per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(100*per*50/1e9, "%core@50Hz")
}

// BenchmarkLoopSamplerCPU runs the sampler at 50 Hz on a sleeping process
// for two seconds and reports gpuwatch's CPU for it, wake-ups included, as
// a share of one core (the goal: at most 1 %). Run with -benchtime 1x.
func BenchmarkLoopSamplerCPU(b *testing.B) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		b.Skip(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	for i := 0; i < b.N; i++ {
		l := NewLoop(LoopOptions{Hz: 50, Find: func(int) []TrainingProcess { return []TrainingProcess{{PID: pid, Workers: []int{1}}} }})
		l.Start(context.Background())
		var r0, r1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
		start := time.Now()
		time.Sleep(2 * time.Second)
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
		wall := time.Since(start)
		_ = l.Close()
		cpu := time.Duration(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano()) * time.Nanosecond
		b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "%core")
	}
}

// BenchmarkTrainingFinder is one scan of this machine's /proc for training
// processes, as plain gpuwatch makes every 2 s: every process's stat, and
// what a process is (exe, cmdline, maps) only when it is new or, mapping
// neither torch nor CUDA, not read for 5 s.
func BenchmarkTrainingFinder(b *testing.B) {
	f := NewTrainingFinder("/proc", nil)
	f.Find(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Find(0)
	}
}
