package endpoint

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/internal/expo"
	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/sample"
)

// The stages a loader may time, in the order a batch passes them
// (docs/prometheus.md, gpuwatch_loader_stage_seconds_total). The first
// three run in the workers.
var stageNames = [...]string{"getitem", "collate", "handover", "take", "pin", "step", "first_batch"}

const workerStages = 3

// StageCount is one stage's cumulative time and the batches (epochs, for
// first_batch) it was timed for.
type StageCount struct {
	Seconds float64
	Batches uint64
}

// PayloadCounters are the loader's cumulative counts over the batches it
// looked inside, and the last look's tensors.
type PayloadCounters struct {
	Looked, Bytes, Float64Bytes, PinnedBytes, TokenSlots, PaddingSlots uint64
	Tensors                                                            []sample.PayloadTensor
	Copy                                                               *CopyCounters
}

// CopyCounters are the loop's copies to the GPU of the batches looked at,
// cumulative (gpuwatch_loader_h2d_*).
type CopyCounters struct {
	Batches, Copies, Bytes, PinnedBytes, NonBlockingBytes, DeviceBytes uint64
	HostSeconds, DeviceSeconds                                         float64
	Device                                                             *int
}

// maxPayloadTensors bounds the tensors taken from one answer (the hook
// sends at most 16).
const maxPayloadTensors = 16

// stagesFromPage reads the stage and payload series of a /metrics page
// into c (nil where absent). Out-of-range values are left out and said in
// c.Dropped, as the other gauges are.
func stagesFromPage(page map[string][]expo.Sample, c *LoaderCounters) {
	for _, s := range page["gpuwatch_loader_stage_seconds_total"] {
		name, _ := s.Label("stage")
		i := stageIndex(name)
		if i < 0 {
			continue // a stage this gpuwatch does not know: not ours to show
		}
		n, ok := stageBatches(page, name)
		if !ok || !(s.Value >= 0 && s.Value <= maxLoaderSeconds) {
			c.Dropped = append(c.Dropped, fmt.Sprintf("gpuwatch_loader_stage_seconds_total{stage=%q} %s: not a count of seconds with its batches, dropped", name, strconv.FormatFloat(s.Value, 'g', 6, 64)))
			continue
		}
		if c.Stages == nil {
			c.Stages = map[string]StageCount{}
		}
		c.Stages[stageNames[i]] = StageCount{Seconds: s.Value, Batches: n}
	}
	looked, ok := pageCount(page, "gpuwatch_loader_batches_looked_total")
	if !ok {
		return
	}
	p := &PayloadCounters{Looked: looked}
	p.Bytes, _ = pageCount(page, "gpuwatch_loader_batch_bytes_total")
	p.Float64Bytes, _ = pageCount(page, "gpuwatch_loader_batch_float64_bytes_total")
	p.PinnedBytes, _ = pageCount(page, "gpuwatch_loader_batch_pinned_bytes_total")
	p.TokenSlots, _ = pageCount(page, "gpuwatch_loader_batch_token_slots_total")
	p.PaddingSlots, _ = pageCount(page, "gpuwatch_loader_batch_padding_slots_total")
	if p.Float64Bytes > p.Bytes || p.PinnedBytes > p.Bytes || p.PaddingSlots > p.TokenSlots {
		c.Dropped = append(c.Dropped, "gpuwatch_loader_batch_bytes_total: parts larger than the whole, dropped")
		return
	}
	for _, s := range page["gpuwatch_loader_batch_tensor_bytes"] {
		if len(p.Tensors) >= maxPayloadTensors {
			break
		}
		if t, ok := payloadTensor(s); ok {
			p.Tensors = append(p.Tensors, t)
		}
	}
	p.Copy = copyCounters(page, c)
	c.Payload = p
}

// copyCounters reads the copy series; nil when absent or inconsistent (said
// in c.Dropped).
func copyCounters(page map[string][]expo.Sample, c *LoaderCounters) *CopyCounters {
	n, ok := pageCount(page, "gpuwatch_loader_h2d_batches_total")
	if !ok {
		return nil
	}
	k := &CopyCounters{Batches: n}
	k.Copies, _ = pageCount(page, "gpuwatch_loader_h2d_copies_total")
	k.Bytes, _ = pageCount(page, "gpuwatch_loader_h2d_bytes_total")
	// The hook writes the series together: a page without the pinned or
	// non_blocking bytes says nothing of them (read as 0 they were "all
	// pageable, all blocking", and both fixes advised), so it is dropped.
	var okPin, okNB bool
	k.PinnedBytes, okPin = pageCount(page, "gpuwatch_loader_h2d_pinned_bytes_total")
	k.NonBlockingBytes, okNB = pageCount(page, "gpuwatch_loader_h2d_non_blocking_bytes_total")
	k.DeviceBytes, _ = pageCount(page, "gpuwatch_loader_h2d_device_bytes_total")
	k.HostSeconds, ok = pageSeconds(page, "gpuwatch_loader_h2d_host_seconds_total")
	dev, okDev := pageSeconds(page, "gpuwatch_loader_h2d_device_seconds_total")
	if !ok || !okDev || !okPin || !okNB || k.Copies < k.Batches || k.PinnedBytes > k.Bytes || k.NonBlockingBytes > k.Bytes || k.DeviceBytes > k.Bytes {
		c.Dropped = append(c.Dropped, "gpuwatch_loader_h2d_bytes_total: not counts of copies with their parts, dropped")
		return nil
	}
	k.DeviceSeconds = dev
	if d, ok := pageCount(page, "gpuwatch_loader_h2d_device"); ok && d < 1<<16 {
		k.Device = probes.Ptr(int(d))
	}
	return k
}

// pageSeconds is a counter of seconds: absent, NaN, negative or past
// maxLoaderSeconds is none.
func pageSeconds(page map[string][]expo.Sample, name string) (float64, bool) {
	ss := page[name]
	if len(ss) == 0 || !(ss[0].Value >= 0 && ss[0].Value <= maxLoaderSeconds) {
		return 0, false
	}
	return ss[0].Value, true
}

func stageIndex(name string) int {
	for i, s := range stageNames {
		if s == name {
			return i
		}
	}
	return -1
}

// stageBatches is the batch count sent for stage.
func stageBatches(page map[string][]expo.Sample, stage string) (uint64, bool) {
	for _, s := range page["gpuwatch_loader_stage_batches_total"] {
		if v, _ := s.Label("stage"); v == stage {
			if !(s.Value >= 0 && s.Value <= 1<<62) {
				return 0, false
			}
			return uint64(s.Value), true
		}
	}
	return 0, false
}

// pageCount is a counter's value: absent, NaN, negative or past 2^62 is
// none.
func pageCount(page map[string][]expo.Sample, name string) (uint64, bool) {
	ss := page[name]
	if len(ss) == 0 || !(ss[0].Value >= 0 && ss[0].Value <= 1<<62) {
		return 0, false
	}
	return uint64(ss[0].Value), true
}

// payloadTensor reads one gpuwatch_loader_batch_tensor_bytes sample: its
// labels are outside text, kept short and printable.
func payloadTensor(s expo.Sample) (sample.PayloadTensor, bool) {
	if !(s.Value >= 0 && s.Value <= 1<<62) {
		return sample.PayloadTensor{}, false
	}
	path, _ := s.Label("path")
	dtype, _ := s.Label("dtype")
	shape, _ := s.Label("shape")
	t := sample.PayloadTensor{Path: shortLabel(path, 128), DType: shortLabel(dtype, 32), Bytes: int64(s.Value)}
	if shape != "" {
		for _, d := range strings.SplitN(shape, "x", 9) {
			n, err := strconv.ParseInt(d, 10, 64)
			if err != nil || n < 0 || n > 1<<40 || len(t.Shape) == 8 {
				t.Shape = nil
				break
			}
			t.Shape = append(t.Shape, n)
		}
	}
	if v, ok := s.Label("pinned"); ok && (v == "0" || v == "1") {
		b := v == "1"
		t.Pinned = &b
	}
	return t, true
}

// shortLabel cuts a label to n bytes on a rune boundary and replaces
// what a terminal would act on (control characters, invalid UTF-8).
func shortLabel(s string, n int) string {
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}

// loaderStages is the interval's stage times from two readings; nil when
// no stage was timed over it.
func loaderStages(prev, cur map[string]StageCount, workers *int) *sample.LoaderStages {
	per := [len(stageNames)]*float64{}
	timed := false
	for i, name := range stageNames {
		c, ok := cur[name]
		if !ok {
			continue
		}
		p := prev[name]
		if c.Batches < p.Batches || c.Seconds < p.Seconds { // restarted: since the restart
			p = StageCount{}
		}
		if n := c.Batches - p.Batches; n > 0 {
			per[i] = probes.Ptr(1000 * (c.Seconds - p.Seconds) / float64(n))
			timed = true
		}
	}
	if !timed {
		return nil
	}
	out := &sample.LoaderStages{GetitemMs: per[0], CollateMs: per[1], HandoverMs: per[2], TakeMs: per[3],
		PinMs: per[4], StepMs: per[5], FirstBatchMs: per[6]}
	out.Inline = workers != nil && *workers == 0 && per[2] == nil
	total := 0.0
	for _, v := range per[:workerStages] {
		if v != nil {
			total += *v
		}
	}
	if total > 0 {
		share := func(v *float64) *float64 {
			if v == nil {
				return nil
			}
			return probes.Ptr(min(1, *v/total))
		}
		out.GetitemShare, out.CollateShare, out.HandoverShare = share(per[0]), share(per[1]), share(per[2])
	}
	return out
}

// batchPayload is the payload over the interval's looks, or over every
// look so far when the interval had none (a batch's contents rarely
// change); nil when nothing was looked at. bps is the interval's batch
// rate (0: unknown).
func batchPayload(prev, cur *PayloadCounters, bps float64) *sample.BatchPayload {
	if cur == nil || cur.Looked == 0 {
		return nil
	}
	d := *cur
	if prev != nil && cur.Looked > prev.Looked && cur.Bytes >= prev.Bytes && cur.Float64Bytes >= prev.Float64Bytes &&
		cur.PinnedBytes >= prev.PinnedBytes && cur.TokenSlots >= prev.TokenSlots && cur.PaddingSlots >= prev.PaddingSlots {
		d = PayloadCounters{Looked: cur.Looked - prev.Looked, Bytes: cur.Bytes - prev.Bytes, Float64Bytes: cur.Float64Bytes - prev.Float64Bytes,
			PinnedBytes: cur.PinnedBytes - prev.PinnedBytes, TokenSlots: cur.TokenSlots - prev.TokenSlots, PaddingSlots: cur.PaddingSlots - prev.PaddingSlots}
	}
	out := &sample.BatchPayload{BatchesLooked: cur.Looked, BytesPerBatch: float64(d.Bytes) / float64(d.Looked), Tensors: cur.Tensors}
	if d.Bytes > 0 {
		out.Float64Share = probes.Ptr(float64(d.Float64Bytes) / float64(d.Bytes))
		out.PinnedShare = probes.Ptr(float64(d.PinnedBytes) / float64(d.Bytes))
	}
	if d.TokenSlots > 0 {
		out.PaddingShare = probes.Ptr(float64(d.PaddingSlots) / float64(d.TokenSlots))
	}
	if bps > 0 && !math.IsInf(bps, 0) {
		out.BytesPerSec = probes.Ptr(out.BytesPerBatch * bps)
	}
	var prevCopy *CopyCounters
	if prev != nil {
		prevCopy = prev.Copy
	}
	out.Copy = hostCopy(prevCopy, cur.Copy)
	return out
}

// hostCopy is the copies over the interval, or over every one so far when
// the interval had none; nil when none was seen.
func hostCopy(prev, cur *CopyCounters) *sample.HostCopy {
	if cur == nil || cur.Batches == 0 || cur.Bytes == 0 {
		return nil
	}
	d := *cur
	if prev != nil && cur.Batches > prev.Batches && cur.Bytes >= prev.Bytes && cur.PinnedBytes >= prev.PinnedBytes &&
		cur.NonBlockingBytes >= prev.NonBlockingBytes && cur.DeviceBytes >= prev.DeviceBytes &&
		cur.HostSeconds >= prev.HostSeconds && cur.DeviceSeconds >= prev.DeviceSeconds && cur.Bytes > prev.Bytes {
		d = CopyCounters{Batches: cur.Batches - prev.Batches, Bytes: cur.Bytes - prev.Bytes, PinnedBytes: cur.PinnedBytes - prev.PinnedBytes,
			NonBlockingBytes: cur.NonBlockingBytes - prev.NonBlockingBytes, DeviceBytes: cur.DeviceBytes - prev.DeviceBytes,
			HostSeconds: cur.HostSeconds - prev.HostSeconds, DeviceSeconds: cur.DeviceSeconds - prev.DeviceSeconds}
	}
	n, b := float64(d.Batches), float64(d.Bytes)
	out := &sample.HostCopy{BatchesCopied: cur.Batches, BytesPerBatch: b / n, HostMsPerBatch: 1000 * d.HostSeconds / n,
		PinnedShare: float64(d.PinnedBytes) / b, NonBlockingShare: float64(d.NonBlockingBytes) / b, Device: cur.Device}
	if d.DeviceBytes > 0 && d.DeviceSeconds > 0 {
		// The GPU's time for the bytes whose time was read, per batch.
		out.DeviceMsPerBatch = probes.Ptr(1000 * d.DeviceSeconds * (b / float64(d.DeviceBytes)) / n)
		out.BytesPerSec = probes.Ptr(float64(d.DeviceBytes) / d.DeviceSeconds)
	}
	return out
}
