package diagnose

import (
	"fmt"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/internal/pprofsum"
	"github.com/gpuwatch/gpuwatch/sample"
)

// profileCauses are the categories of the workers' own CPU profile that
// practice has a fix for (decode-bound, augmentation-bound, tokenizing per
// sample): named where the loop waits on CPU-bound workers and the
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
	{"tokenizing", "tokenize", "tokenize once, before training: store the token ids (a fast tokenizer in batches, e.g. datasets' map(batched=True) with a Rust-backed tokenizer) and have __getitem__ load them; tokenizing in __getitem__ repeats the work every epoch"},
}

func profileCausesOf(s *stageTimes, p *sample.Profile, waits bool) []Cause {
	if !s.ok || !waits || !s.cpuBound || p == nil || len(p.Workers) == 0 || s.getitem <= 0 {
		return nil
	}
	var out []Cause
	shares := map[string]float64{}
	for _, c := range p.Workers {
		shares[c.Name] = c.Share
	}
	// The workers' profile outside __getitem__: collating, the hand-over,
	// waiting. A Python profiler samples where the GIL lets it in, so
	// code that releases it (torch's collate into shared memory, the
	// queue's pickling) takes more samples than its time: the stages'
	// own clocks split a worker's time, and the profile only splits
	// __getitem__'s share (the text loop: tokenizing 63 % of the samples,
	// collate 21 %, while __getitem__ took 96 % of the time by its clock).
	outside := shares["collating"] + shares["serializing"] + shares["waiting"]
	for _, pc := range profileCauses {
		share := shares[pc.category]
		if share < s.th.ProfileCategoryShare {
			continue
		}
		cut := s.getitem * share / max(1-outside, share) // at most getitem: the denominator is at least share
		evidence := fmt.Sprintf("%.0f %% of the workers' CPU is %s (their profile): about %s of a worker's %s per batch",
			100*share, sample.ProfileCategoryWords[pc.category], ms(cut), ms(s.worker()))
		if f, ok := topOf(p, pc.category); ok {
			evidence += ", most in " + f
		}
		out = append(out, Cause{ID: pc.id, Stages: []string{"getitem"}, Evidence: evidence, Fix: pc.fix,
			Bound: s.bound(stageCut{worker: cut}, 2)})
	}
	return out
}

// topOf is the profile's busiest function of a category, with where it
// is: outside text (the job's own names), made printable and cut short.
func topOf(p *sample.Profile, category string) (string, bool) {
	for _, f := range p.Top {
		if pprofsum.Category(f.Name, f.File) == category {
			s := f.Name
			if w := f.Where(); w != "" {
				s += " (" + w + ")"
			}
			return sample.Printable(shorten(s, 160)), true
		}
	}
	return "", false
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
