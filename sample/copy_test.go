package sample

import (
	"strings"
	"testing"
)

// TestCopyAgainstItsLink: the loop's copy rate is set against the PCIe
// link of the GPU that lists the loop's process, else of the only GPU;
// with several GPUs and none listing it, no link is named (CUDA's index
// is not NVML's under CUDA_VISIBLE_DEVICES).
func TestCopyAgainstItsLink(t *testing.T) {
	link := 63.008e9
	frame := func(gpus int, listed bool) *Frame {
		pid := 4242
		f := &Frame{Loader: &Loader{PID: &pid, Payload: &BatchPayload{Copy: &HostCopy{BatchesCopied: 3, BytesPerBatch: 1 << 20,
			HostMsPerBatch: 0.68, DeviceMsPerBatch: ptr(0.61), BytesPerSec: ptr(1.7e9)}}}}
		for i := 0; i < gpus; i++ {
			g := GPU{Index: i, PCIeLink: "PCIe 5.0 x16", PCIeLinkBytesPerSec: ptr(link)}
			if listed && i == gpus-1 {
				g.PCIeLink = "PCIe 4.0 x16"
				g.Processes = []GPUProcess{{PID: pid}}
			}
			f.GPUs = append(f.GPUs, g)
		}
		f.AssignRoles()
		return f
	}
	c := frame(1, false).Loader.Payload.Copy
	if c.LinkShare == nil || *c.LinkShare < 0.026 || *c.LinkShare > 0.028 || c.Link != "PCIe 5.0 x16" {
		t.Fatalf("one GPU: %+v", c)
	}
	s := c.Summary()
	for _, want := range []string{"to the GPU 1.0MiB a batch", "the loop 680µs in the copy", "the GPU 610µs", "1.6GiB/s (3 % of its PCIe 5.0 x16 link's 59GiB/s)", "pageable, blocking"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary %q: want %q", s, want)
		}
	}
	if c := frame(4, true).Loader.Payload.Copy; c.Link != "PCIe 4.0 x16" {
		t.Errorf("four GPUs, the last lists the loop: %+v", c)
	}
	if c := frame(4, false).Loader.Payload.Copy; c.Link != "" || c.LinkShare != nil {
		t.Errorf("four GPUs, none lists the loop: %+v", c)
	}
	c.PinnedShare, c.NonBlockingShare = 0.5, 1
	if s := c.Summary(); !strings.HasSuffix(s, "50 % pinned, non_blocking") {
		t.Errorf("summary %q", s)
	}
}
