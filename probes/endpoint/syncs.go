package endpoint

import (
	"cmp"
	"math"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/internal/expo"
	"github.com/gpuwatch/gpuwatch/sample"
)

// maxSyncsPerStep bounds a site's calls per step as the hook sends them:
// past it the figure is no count the hook made.
const maxSyncsPerStep = 1e6

// syncsFromPage reads the hook's host syncs (gpuwatch_job_host_syncs_per_step
// and gpuwatch_job_host_sync_seconds_per_step, docs/prometheus.md "Host
// syncs"): per site and call, the calls and the host's seconds per step,
// most calls first, at most sample.MaxHostSyncs. The labels are outside
// text: a site that is not printable UTF-8 of at most
// sample.MaxHostSyncSite bytes, a call the hook does not name, or a value
// out of range is left out. Nil when the page says none.
func syncsFromPage(page map[string][]expo.Sample) []sample.HostSync {
	type key struct{ site, call string }
	label := func(s expo.Sample) (key, bool) {
		site, _ := s.Label("site")
		call, _ := s.Label("call")
		if !printableSite(site) || !slices.Contains(sample.HostSyncCalls, call) {
			return key{}, false
		}
		return key{site, call}, true
	}
	var out []sample.HostSync
	at := map[key]int{}
	for _, s := range page["gpuwatch_job_host_syncs_per_step"] {
		k, ok := label(s)
		if !ok || !(s.Value >= 0 && s.Value <= maxSyncsPerStep) {
			continue
		}
		if _, dup := at[k]; dup || len(out) >= 4*sample.MaxHostSyncs {
			continue
		}
		at[k] = len(out)
		out = append(out, sample.HostSync{Site: k.site, Call: k.call, PerStep: s.Value})
	}
	for _, s := range page["gpuwatch_job_host_sync_seconds_per_step"] {
		k, ok := label(s)
		i, known := at[k]
		if !ok || !known || !(s.Value >= 0 && s.Value <= maxSyncsPerStep) || out[i].SecondsPerStep != nil {
			continue
		}
		v := s.Value
		out[i].SecondsPerStep = &v
	}
	if len(out) == 0 {
		return nil
	}
	slices.SortStableFunc(out, func(a, b sample.HostSync) int {
		if c := cmp.Compare(b.PerStep, a.PerStep); c != 0 {
			return c
		}
		return cmp.Compare(a.Site+" "+a.Call, b.Site+" "+b.Call)
	})
	if len(out) > sample.MaxHostSyncs {
		out = out[:sample.MaxHostSyncs]
	}
	return out
}

// maxSyncSteps bounds the steps the hook counted syncs in: a window of 8
// steps a minute for a century is far fewer.
const maxSyncSteps = 1e12

// syncStepsFromPage reads gpuwatch_job_host_sync_steps_total, the steps
// in which the hook counted host syncs: a whole count within
// maxSyncSteps, without labels; nil otherwise (a hook that does not
// count them, or a figure that is no count).
func syncStepsFromPage(page map[string][]expo.Sample) *uint64 {
	for _, s := range page["gpuwatch_job_host_sync_steps_total"] {
		if len(s.Labels) != 0 || !(s.Value >= 0 && s.Value <= maxSyncSteps) || s.Value != math.Trunc(s.Value) {
			return nil
		}
		n := uint64(s.Value)
		return &n
	}
	return nil
}

// printableSite says a site label is one the hook writes: non-empty
// printable UTF-8 of at most sample.MaxHostSyncSite bytes.
func printableSite(s string) bool {
	if s == "" || len(s) > sample.MaxHostSyncSite || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
