package diagnose

import (
	"fmt"

	"github.com/gpuwatch/gpuwatch/sample"
)

// IOBound: storage (local, remote or throttled) is the limit. See docs/diagnosis.md, "Verdicts".
const IOBound Kind = 5

func init() {
	register(Situation{
		Kind:       IOBound,
		ID:         "io_bound",
		Title:      "I/O-bound: storage is the limit",
		Tone:       ToneBad,
		InputBound: true,
		Stage:      "reading",
		Advice:     ioAdvice,
		Scenarios:  []string{"io-bound", "remote-storage", "mmap-random"},
	})
}

func ioAdvice(in adviceIn) ([]string, bool) {
	w := in.w
	switch {
	case in.d.remote:
		return []string{
			fmt.Sprintf("the data comes from a slow or throttled store (%s/s): copy it to local NVMe or cache it in RAM (%s available)",
				sample.FormatBytes(w.bytesPerSec.v), sample.FormatBytes(w.memAvail)),
			"read larger objects (shards of many samples) so each request carries more data",
		}, false
	case in.d.mmap:
		return mmapAdvice(w), false
	}
	a := []string{
		"random reads are the usual culprit: read sequentially, or in contiguous runs of samples",
		"use larger chunks (shards near one sample per read or more) and a columnar format, reading only the columns used",
	}
	if w.memAvail > 0 {
		a = append(a, fmt.Sprintf("cache the hot data in RAM (%s available) or on local NVMe", sample.FormatBytes(w.memAvail)))
	}
	return a, false
}
