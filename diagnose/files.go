package diagnose

import (
	"fmt"
	"slices"

	"github.com/gpuwatch/gpuwatch/sample"
)

// fileReads is what the loading processes' looks at their descriptors
// found (sample.Proc.Files), from the newest frame that has them: each
// process's figures cover its last looks, so a window of three frames
// still reads twenty looks a worker. A worker that opens one small file
// per sample finds a new small file at many looks; one that reads
// shards, few and large ones. docs/diagnosis.md, "Small files on network
// storage".
type fileReads struct {
	looks, opened int
	bytes         []float64       // each opened file's median bytes, once per file
	newest        sample.OpenFile // the newest file of the process that opened most
	fs            map[string]int  // opened files by their file system's type
	network       int             // opened files on network storage
}

// smallFilesOpenedShare: at least this share of the looks found a file
// opened since the look before. A file per sample is open at a look's
// instant only between its open and its close: on sshfs 2 ms away, a
// quarter to two fifths of the looks found one; a reader of shards kept
// open finds a new one a few times in all.
const smallFilesOpenedShare = 0.1

// smallFilesWaitShare: the workers' time off the CPU is at least this
// share of their time per batch.
const smallFilesWaitShare = 0.3

// add takes a frame's looks, where it has any for the loading processes:
// the workers', or the training process's where the loader has none.
func (fr *fileReads) add(f *sample.Frame) {
	p, l := f.Procs, f.Loader
	if p == nil || l == nil {
		return
	}
	loop := p.FocusPID
	if l.PID != nil {
		loop = *l.PID
	}
	var next fileReads
	most := -1
	for i := range p.List {
		pr := &p.List[i]
		fl := pr.Files
		if fl == nil || !(slices.Contains(l.WorkerPIDs, pr.PID) || len(l.WorkerPIDs) == 0 && pr.PID == loop) {
			continue
		}
		next.looks += fl.Looks
		next.opened += fl.Opened
		if fl.MedianBytes != nil { // only sizes read: a file's bytes read so far say nothing of its size
			for range min(fl.Sized, 64) {
				next.bytes = append(next.bytes, float64(*fl.MedianBytes))
			}
		}
		if of := fl.Newest; of != nil && fl.Opened > 0 {
			if next.fs == nil {
				next.fs = map[string]int{}
			}
			next.fs[of.FS] += fl.Opened
			if of.Network {
				next.network += fl.Opened
			}
			if fl.Opened > most {
				most, next.newest = fl.Opened, *of
			}
		}
	}
	if next.looks > 0 {
		*fr = next
	}
}

// manySmall says the looks found many small files: at least 6 looks, at
// least 3 (and smallFilesOpenedShare of them) found a file opened since
// the look before, at least 3 of those had their size read, and their
// median is at most th bytes.
func (fr *fileReads) manySmall(th float64) (median float64, ok bool) {
	if fr.looks < 6 || fr.opened < 3 || float64(fr.opened) < smallFilesOpenedShare*float64(fr.looks) || len(fr.bytes) < 3 {
		return 0, false
	}
	b := slices.Clone(fr.bytes)
	slices.Sort(b)
	median = b[len(b)/2]
	return median, median <= th
}

// storage says where the opened files are: the file system most of them
// are on, network storage or local, or unknown.
func (fr *fileReads) storage() string {
	fs, n := "", 0
	for k, v := range fr.fs {
		if v > n || v == n && k < fs {
			fs, n = k, v
		}
	}
	switch {
	case fs == "":
		return "storage of unknown type"
	case 2*fr.network >= fr.opened:
		return fmt.Sprintf("network storage (%s at %s)", sample.Printable(fs), sample.Printable(fr.newest.Mount))
	default:
		return fmt.Sprintf("local storage (%s at %s)", sample.Printable(fs), sample.Printable(fr.newest.Mount))
	}
}
