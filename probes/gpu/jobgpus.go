package gpu

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/probes/host"

	"github.com/gpuwatch/gpuwatch/sample"
)

// GPUSelect names the job's GPUs, so that a job using 2 of 8 GPUs is not
// averaged with 6 idle ones. In order of precedence: List (--gpus: indices
// or UUIDs, UUID prefixes allowed as CUDA takes them); the
// CUDA_VISIBLE_DEVICES of the job's process (PIDOf); the GPUs on which
// NVML lists the job's process or one of its descendants. With none of
// them every GPU counts.
type GPUSelect struct {
	List  []string
	PIDOf func() int // the job's process, 0 when none is known
	Proc  string     // procfs root (default /proc)
}

// ParseGPUList splits --gpus ("0,1", "GPU-8f3…,GPU-1a2…") and checks each
// entry: an index or a UUID (of a GPU or a MIG device).
func ParseGPUList(s string) ([]string, error) {
	var out []string
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			continue
		case isIndex(e), strings.HasPrefix(e, "GPU-"), strings.HasPrefix(e, "MIG-"):
			if len(e) > 96 || strings.ContainsFunc(e, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
				return nil, fmt.Errorf("%q is not a GPU index or UUID", sample.Printable(e))
			}
			out = append(out, e)
		default:
			return nil, fmt.Errorf("%q is not a GPU index or UUID (GPU-… or MIG-…)", sample.Printable(e))
		}
		if len(out) > 1024 {
			return nil, fmt.Errorf("more than 1024 GPUs")
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no GPU named")
	}
	return out, nil
}

func isIndex(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n < 1<<16
}

// mark sets Job on the frame's GPUs that are the job's and says how they
// were found; it leaves the GPUs as they are when it cannot tell.
func (s *GPUSelect) mark(gpus []sample.GPU, r *probes.FileReader) string {
	if s == nil || len(gpus) == 0 {
		return ""
	}
	if len(s.List) > 0 {
		if markListed(gpus, s.List) {
			return "--gpus " + strings.Join(s.List, ",")
		}
		return ""
	}
	pid := 0
	if s.PIDOf != nil {
		pid = s.PIDOf()
	}
	if pid <= 0 {
		return ""
	}
	proc := s.Proc
	if proc == "" {
		proc = "/proc"
	}
	if list, ok := cudaVisibleDevices(r, proc, pid); ok {
		if markListed(gpus, list) {
			return fmt.Sprintf("CUDA_VISIBLE_DEVICES of pid %d", pid)
		}
		return ""
	}
	found := false
	for i := range gpus {
		for _, p := range gpus[i].Processes {
			if host.DescendsFrom(r, proc, p.PID, pid) {
				gpus[i].Job, found = true, true
				break
			}
		}
	}
	if found {
		return fmt.Sprintf("NVML lists pid %d's processes there", pid)
	}
	return ""
}

// markListed marks the GPUs list names (an index, or a UUID or its
// prefix); false when it names none of them.
func markListed(gpus []sample.GPU, list []string) bool {
	found := false
	for i := range gpus {
		g := &gpus[i]
		for _, e := range list {
			if isIndex(e) && strconv.Itoa(g.Index) == e || !isIndex(e) && g.UUID != "" && strings.HasPrefix(g.UUID, e) {
				g.Job, found = true, true
			}
		}
	}
	return found
}

// cudaVisibleDevices reads CUDA_VISIBLE_DEVICES from the process's
// environment; ok is false when it is not set (every GPU is visible).
func cudaVisibleDevices(r *probes.FileReader, proc string, pid int) ([]string, bool) {
	b, err := r.Read(filepath.Join(proc, strconv.Itoa(pid), "environ"))
	if err != nil {
		return nil, false
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		v, ok := bytes.CutPrefix(kv, []byte("CUDA_VISIBLE_DEVICES="))
		if !ok {
			continue
		}
		list, err := ParseGPUList(string(v))
		if err != nil {
			// "", "-1", "NoDevFiles": no GPU at all; the job has none here.
			return []string{"none"}, true
		}
		return list, true
	}
	return nil, false
}
