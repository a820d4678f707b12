package tune

import (
	"strconv"

	"github.com/gpuwatch/gpuwatch/sample"
)

// GridSize is the number of configurations of a grid with these list
// lengths: their product, computed before any list is built, saturating at
// 1<<30 so that no product overflows an int on any target (32-bit ones
// included), nor does adding a configuration or two to it; any limit a
// user sets is far below it.
func GridSize(lengths []int) int {
	const most = 1 << 30
	n := 1
	for _, l := range lengths {
		if l == 0 {
			return 0
		}
		if n > most/l {
			return most
		}
		n *= l
	}
	return n
}

// Dedupe returns vs without repeats, first one kept, in order.
func Dedupe[T comparable](vs []T) []T {
	seen := make(map[T]bool, len(vs))
	out := vs[:0:0]
	for _, v := range vs {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// SweepGrid lists the embedded loader's configurations: 0 workers once
// (no prefetch, no persistence), every other count with each prefetch and
// persistence.
func SweepGrid(ws, ps []int, pers []bool) []Setting {
	var grid []Setting
	for _, w := range ws {
		if w == 0 {
			grid = append(grid, Setting{sample.KnobWorkers.Flag: "0", sample.KnobPrefetch.Flag: "0", sample.KnobPersistent.Flag: "false"})
			continue
		}
		for _, p := range ps {
			for _, per := range pers {
				grid = append(grid, Setting{sample.KnobWorkers.Flag: strconv.Itoa(w), sample.KnobPrefetch.Flag: strconv.Itoa(p), sample.KnobPersistent.Flag: strconv.FormatBool(per)})
			}
		}
	}
	return grid
}

// Grid is the cartesian product of knob → values over a start setting,
// knobs in the order given.
func Grid(start Setting, knobs []string, values [][]string) []Setting {
	grid := []Setting{start}
	for i, k := range knobs {
		var next []Setting
		for _, g := range grid {
			for _, v := range values[i] {
				s := Setting{}
				for kk, vv := range g {
					s[kk] = vv
				}
				s[k] = v
				next = append(next, s)
			}
		}
		grid = next
	}
	return grid
}
