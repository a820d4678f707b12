//go:build linux && cgo

package gpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestJobGPUsOnEightMockGPUs: go-nvml's DGX A100 mock, GPUs 2 and 5 busy
// for the job and the other six idle. Named by --gpus (indices or UUID
// prefixes), by the job's CUDA_VISIBLE_DEVICES (indices, or UUIDs), or by
// NVML's process lists (the job's process and a descendant), the frame
// judges those two: 90 %, not the 8-GPU mean of 22.5 %.
func TestJobGPUsOnEightMockGPUs(t *testing.T) {
	srv := mockServer(t, []gpuTrace{{util: 0, samples: []uint32{0}}})
	for _, i := range []int{2, 5} {
		device(srv, i).GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: 90}, nvml.SUCCESS
		}
	}
	uuid := func(i int) string { u, _ := device(srv, i).GetUUID(); return u }
	// A procfs: the job is pid 77; NVML lists pid 4000+i on GPU i; 4002 is
	// the job's child and 4005 its grandchild (a DataLoader worker's
	// process, say); the others belong to someone else.
	proc := t.TempDir()
	stat := func(pid, ppid int) {
		dir := filepath.Join(proc, fmt.Sprint(pid))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "stat"), []byte(fmt.Sprintf("%d (python3 (x)) S %d 1 1 0 -1 0 0 0 0 0 5 1 0 0 20 0 4 0 100 1000 50", pid, ppid)), 0o644)
	}
	stat(77, 1)
	for i := range 8 {
		stat(4000+i, 1)
	}
	stat(4002, 77)
	stat(4005, 4002)
	os.WriteFile(filepath.Join(proc, "4002", "comm"), []byte("python3\n"), 0o644)
	os.WriteFile(filepath.Join(proc, "4002", "status"), []byte("Name:\tpython3\nUid:\t0\t0\t0\t0\n"), 0o644)
	env := func(v string) {
		body := "HOME=/root\x00"
		if v != "" {
			body += "CUDA_VISIBLE_DEVICES=" + v + "\x00"
		}
		os.WriteFile(filepath.Join(proc, "77", "environ"), []byte(body), 0o644)
	}
	cases := []struct {
		name, env, how string
		list           []string
	}{
		{"--gpus indices", "", "--gpus 2,5", []string{"2", "5"}},
		{"--gpus UUID prefixes", "", "--gpus " + uuid(2)[:12] + "," + uuid(5), []string{uuid(2)[:12], uuid(5)}},
		{"CUDA_VISIBLE_DEVICES indices", "2,5", "CUDA_VISIBLE_DEVICES of pid 77", nil},
		{"CUDA_VISIBLE_DEVICES UUIDs", uuid(5) + "," + uuid(2), "CUDA_VISIBLE_DEVICES of pid 77", nil},
		{"NVML's process lists", "", "NVML lists pid 77's processes there", nil},
	}
	nv := NewNVML(srv)
	defer nv.Close()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env(c.env)
			p := NewGPU(nv)
			p.Select = &GPUSelect{List: c.list, Proc: proc, PIDOf: func() int { return 77 }}
			f := &sample.Frame{}
			if err := p.Collect(context.Background(), f); err != nil {
				t.Fatal(err)
			}
			if f.JobGPUs != c.how {
				t.Errorf("how %q, want %q", f.JobGPUs, c.how)
			}
			var job []int
			for _, g := range f.GPUs {
				if g.Job {
					job = append(job, g.Index)
				}
			}
			if fmt.Sprint(job) != "[2 5]" {
				t.Fatalf("the job's GPUs %v, want [2 5]", job)
			}
			if u, ok := f.GPUUtil(); !ok || u != 90 {
				t.Errorf("judged utilization %v, want the job's 90 (not the 8-GPU mean)", u)
			}
			if p := f.GPUs[2].Processes[0]; p.Command != "python3" || p.User != "root" {
				t.Errorf("GPU 2's process %+v: want python3, root (from /proc)", p)
			}
		})
	}
	// CUDA_VISIBLE_DEVICES="" hides every GPU from the job: none is its.
	env("-1")
	p := NewGPU(nv)
	p.Select = &GPUSelect{Proc: proc, PIDOf: func() int { return 77 }}
	f := &sample.Frame{}
	_ = p.Collect(context.Background(), f)
	if f.JobGPUs != "" {
		t.Errorf("CUDA_VISIBLE_DEVICES=-1: %q; every GPU should count", f.JobGPUs)
	}
}

func TestParseGPUList(t *testing.T) {
	for _, ok := range []string{"0", "0,1", " 3 , 7 ", "GPU-8f3a1b2c", "MIG-4f1c"} {
		if _, err := ParseGPUList(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ",", "-1", "gpu0", "NoDevFiles", "GPU-a\x1b[2J", "70000"} {
		if _, err := ParseGPUList(bad); err == nil || strings.Contains(err.Error(), "\x1b") {
			t.Errorf("%q: accepted or unescaped (%v)", bad, err)
		}
	}
}

// TestNVMLMIGDevices: a GPU in MIG mode with two instances (1g.5gb with a
// process, 3g.20gb idle): NVML gives no utilization for the parent, and
// the frame says precisely why instead of "no accelerator signal"; the
// instances are listed with their profile, memory and processes.
func TestNVMLMIGDevices(t *testing.T) {
	srv := mockServer(t, []gpuTrace{{util: 10, samples: []uint32{10}}})
	d := device(srv, 0)
	d.SetMigMode(nvml.DEVICE_MIG_ENABLE)
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED }
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	mig := func(name, uuid string, gi int, used uint64, procs []nvml.ProcessInfo) *mock.Device {
		return &mock.Device{
			GetNameFunc:                    func() (string, nvml.Return) { return name, nvml.SUCCESS },
			GetUUIDFunc:                    func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
			GetGpuInstanceIdFunc:           func() (int, nvml.Return) { return gi, nvml.SUCCESS },
			GetMemoryInfoFunc:              func() (nvml.Memory, nvml.Return) { return nvml.Memory{Used: used, Total: 5 << 30}, nvml.SUCCESS },
			GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) { return procs, nvml.SUCCESS },
		}
	}
	d.GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		switch i {
		case 0:
			return mig("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "MIG-aaaa", 7, 3<<30, []nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 3 << 30}}), nvml.SUCCESS
		case 1:
			return mig("NVIDIA A100-SXM4-40GB MIG 3g.20gb", "MIG-bbbb", 2, 0, nil), nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	nv := NewNVML(srv)
	defer nv.Close()
	gs, err := nv.GPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g := gs[0]
	if g.UtilPct != nil || g.Unavailable["util_pct"] != MIGNoUtil {
		t.Fatalf("util %v, why %q", g.UtilPct, g.Unavailable["util_pct"])
	}
	if len(g.MIG) != 2 || g.MIG[0].Profile != "1g.5gb" || g.MIG[1].Profile != "3g.20gb" || *g.MIG[0].GPUInstanceID != 7 ||
		len(g.MIG[0].Processes) != 1 || g.MIG[0].Processes[0].PID != 4242 || *g.MIG[0].MemUsedBytes != 3<<30 {
		t.Fatalf("MIG devices %+v", g.MIG)
	}
	if gs[1].MIG != nil || gs[1].UtilPct == nil {
		t.Errorf("GPU 1 is not partitioned: %+v", gs[1])
	}
	// With only the MIG GPU judged there is no utilization.
	f := &sample.Frame{GPUs: gs, JobGPUs: "--gpus 0"}
	f.GPUs[0].Job = true
	if _, ok := f.GPUUtil(); ok {
		t.Error("a utilization for a MIG GPU")
	}

	// With GPM (an H100), each instance has its own SM activity, and the
	// GPU the mean: a real accelerator signal on MIG. Each instance has
	// its tensor activity by precision too, where the driver returns it.
	withGPMMetrics(srv, func(int) float64 { return 40 }, map[nvml.GpmMetricId]float64{nvml.GPM_METRIC_HMMA_TENSOR_UTIL: 9})
	nv2 := NewNVML(srv)
	defer nv2.Close()
	nv2.GPUs(context.Background())
	gs, _ = nv2.GPUs(context.Background())
	g = gs[0]
	if g.MIG[0].GPM == nil || *g.MIG[0].GPM.SMActivityPct != 47 || *g.MIG[1].GPM.SMActivityPct != 42 {
		t.Fatalf("per-instance GPM %+v %+v", g.MIG[0].GPM, g.MIG[1].GPM)
	}
	for i, mi := range g.MIG[:2] {
		if h := mi.GPM.TensorHMMAActivityPct; h == nil || *h != 9 || mi.GPM.TensorIMMAActivityPct != nil {
			t.Errorf("instance %d: HMMA %v, IMMA %v: want 9 and nil", i, h, mi.GPM.TensorIMMAActivityPct)
		}
	}
	if g.GPM == nil || *g.GPM.SMActivityPct != 44.5 {
		t.Fatalf("the GPU's GPM %+v: want the instances' mean, 44.5", g.GPM)
	}
}
