package diagnose

import (
	"fmt"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/internal/pprofsum"
	"github.com/gpuwatch/gpuwatch/sample"
)

// profileCauses are the categories of the workers' own CPU profile that
// practice has a fix for (decode-bound, augmentation-bound, tokenizing or
// converting per sample): named where the loop waits on CPU-bound workers and the
// category takes at least ProfileCategoryShare of the workers' CPU. Only
// gpuwatch run profiles the workers (the hook merges their profiles);
// without them there is no such cause. Each happens inside __getitem__, so
// the stage it cuts is its time, at most its share of a worker's time per
// batch.
var profileCauses = []struct {
	category, id, fix string
}{
	{"decoding", "decode", "a reduced-size decode: PIL's Image.draft('RGB', (w, h)) decodes a JPEG at 1/2 to 1/8 scale when the crop wants fewer pixels (or decode on the GPU: torchvision.io.decode_jpeg(..., device='cuda'), NVIDIA DALI)"},
	{"augmenting", "augment", "augment on the GPU: decode and crop on the CPU, then the random transforms on the batch after .to(device) (torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI)"},
	{"converting", "convert", "keep the data as tensors and slice them: build one tensor (or one array, in the dtype the model takes) of the whole dataset once, and have __getitem__ return slices of it, with no Python loop, float() or torch.tensor per sample"},
	{"tokenizing", "tokenize", "tokenize once, before training: store the token ids (a fast tokenizer in batches, e.g. datasets' map(batched=True) with a Rust-backed tokenizer) and have __getitem__ load them; tokenizing in __getitem__ repeats the work every epoch"},
}

// A payload cause (the hand-over of float32 images, a float64 payload)
// takes the converting category's place: there the conversion is the
// ToTensor that makes the large batches, and the payload's fix is the one
// to make (payloadNamed).
func profileCausesOf(s *stageTimes, p *sample.Profile, waits, payloadNamed bool) []Cause {
	if !s.ok || !waits || !s.cpuBound || p == nil || len(p.Workers) == 0 || s.getitem <= 0 {
		return nil
	}
	var out []Cause
	shares := map[string]float64{}
	for _, c := range p.Workers {
		shares[c.Name] = c.Share
	}
	// The workers' profile outside __getitem__: collating, the hand-over,
	// waiting. The stages' own clocks split a worker's time, and the
	// profile only splits __getitem__'s share: a profile's shares are of
	// the CPU it sampled, not of the wall time, and a sampler thread (a
	// worker whose SIGPROF is in use) samples where the GIL lets it in
	// (the text loop, so sampled: tokenizing 63 % of the samples, collate
	// 21 %, while __getitem__ took 96 % of the time by its clock).
	outside := shares["collating"] + shares["serializing"] + shares["waiting"]
	for _, pc := range profileCauses {
		share := shares[pc.category]
		if share < s.th.ProfileCategoryShare || pc.id == "convert" && payloadNamed {
			continue
		}
		part := s.getitem * share / max(1-outside, share) // at most getitem: the denominator is at least share
		cut, free := part, stageCut{worker: part}
		if pc.id == "convert" {
			// Its fix takes the whole per-sample path away, the Python
			// loop that feeds the conversions with it: a slice is all
			// __getitem__ has left (the time-series loop: converting 51 %
			// of the workers' CPU, the comprehension that builds its lists
			// included, and the fix gained 3.18×). Free, it may take
			// collate's conversions too: samples that were lists or
			// arrays, default_collate made tensors of one by one.
			cut, free = s.getitem, stageCut{worker: s.getitem + s.collate}
		}
		evidence := fmt.Sprintf("%.0f %% of the workers' CPU is %s (their profile): about %s of a worker's %s per batch",
			100*share, sample.ProfileCategoryWords[pc.category], ms(part), ms(s.worker()))
		if f, ok := topOf(p, pc.category); ok {
			evidence += ", most in " + f
		}
		out = append(out, Cause{ID: pc.id, Stages: []string{"getitem"}, Evidence: evidence, Fix: pc.fix,
			Bound: s.boundFree(stageCut{worker: cut}, 2, free)})
	}
	return out
}

// topOf is the workers' busiest function of a category (the profile's,
// in a profile from before WorkersTop), with where it is: outside text
// (the job's own names), made printable and cut short.
func topOf(p *sample.Profile, category string) (string, bool) {
	top := p.WorkersTop // the workers' own: not the training loop's float(loss)
	if len(top) == 0 {
		top = p.Top
	}
	for _, f := range top {
		if pprofsum.FuncCategory(f) == category {
			s := f.Name
			if w := f.Where(); w != "" {
				s += " (" + w + ")"
			}
			return sample.Printable(shorten(s, 160)), true
		}
	}
	return "", false
}

// busiestInGetitem is the workers' busiest function outside collating,
// the hand-over and waiting (so, most likely, __getitem__'s: the job's own
// line where no category names it), with where it is and its share of the
// workers' CPU; none without the workers' profile.
func busiestInGetitem(p *sample.Profile) (string, float64, bool) {
	if p == nil {
		return "", 0, false
	}
	for _, f := range p.WorkersTop {
		switch pprofsum.FuncCategory(f) {
		case "collating", "serializing", "waiting", "interpreter", "gc":
			continue
		}
		s := f.Name
		if w := f.Where(); w != "" {
			s += " (" + w + ")"
		}
		return sample.Printable(shorten(s, 160)), f.Flat, true
	}
	return "", 0, false
}

// shorten cuts s to at most n bytes on a rune boundary, marked with "…".
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
