package exporter

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/sample"
)

// SlurmJob is one job a Slurm prolog mapped on this node
// (deploy/slurm/prolog.sh writes DIR/JOBID with user= and gpus= lines),
// the way dcgm-exporter's --hpc-job-mapping-dir maps jobs to GPUs.
type SlurmJob struct {
	ID   string // digits
	User string // the job's user name
	GPUs string // the job's GPU indices, "0,1" ("" for none)
}

// SlurmJobs is one reading of the mapping folder: the jobs, by ID, and
// the files that were refused, each with why.
type SlurmJobs struct {
	List      []SlurmJob
	Rejected  []string // why, for the first few
	NRejected int      // files refused
}

// Limits on the mapping folder, which is outside input: a folder of
// millions of files, a huge file, a FIFO or a link to /dev/zero cost one
// bounded read, and the series stay few.
const (
	MaxSlurmJobs    = 64   // files read per scrape (a node runs few jobs)
	maxJobFileBytes = 1024 // a mapping is two short lines
	maxRejected     = 8    // reasons kept
)

// ReadSlurmJobs reads the mapping folder dir. A missing folder is no job
// (the prolog creates it with the first job); a file that is not a
// regular file named by a job ID, or that holds more than a mapping, is
// refused and named in Rejected, never read past its bound.
func ReadSlurmJobs(dir string) SlurmJobs {
	var out SlurmJobs
	reject := func(format string, args ...any) {
		out.NRejected++
		if len(out.Rejected) < maxRejected {
			out.Rejected = append(out.Rejected, sample.Printable(fmt.Sprintf(format, args...)))
		}
	}
	d, err := os.Open(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			reject("%v", err)
		}
		return out
	}
	defer d.Close()
	ents, err := d.ReadDir(4 * MaxSlurmJobs) // stray files too, but bounded
	if err != nil && !errors.Is(err, io.EOF) {
		reject("%s: %v", dir, err)
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue // the prolog's temporary file, renamed into place
		}
		if len(out.List) == MaxSlurmJobs {
			reject("more than %d jobs mapped: the rest are left out", MaxSlurmJobs)
			break
		}
		job, err := readSlurmJob(dir, name)
		if err != nil {
			reject("%s: %v", name, err)
			continue
		}
		out.List = append(out.List, job)
	}
	slices.SortFunc(out.List, func(a, b SlurmJob) int {
		return cmp.Or(cmp.Compare(len(a.ID), len(b.ID)), strings.Compare(a.ID, b.ID))
	})
	return out
}

// readSlurmJob reads one mapping file, named by its job's ID.
func readSlurmJob(dir, name string) (SlurmJob, error) {
	if !isJobID(name) {
		return SlurmJob{}, errors.New("not a job ID")
	}
	// O_NOFOLLOW: a link is refused; O_NONBLOCK: a FIFO does not hang the
	// scrape (fstat then refuses it).
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return SlurmJob{}, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return SlurmJob{}, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxJobFileBytes+1))
	if err != nil {
		return SlurmJob{}, err
	}
	if len(b) > maxJobFileBytes {
		return SlurmJob{}, fmt.Errorf("larger than %d bytes", maxJobFileBytes)
	}
	return parseSlurmJob(name, b)
}

// parseSlurmJob reads "user=NAME" and "gpus=0,1" lines; other keys are
// left for later versions, a bad value refuses the file.
func parseSlurmJob(id string, b []byte) (SlurmJob, error) {
	job := SlurmJob{ID: id}
	for line := range bytes.Lines(b) {
		k, v, ok := strings.Cut(strings.TrimRight(string(line), "\r\n"), "=")
		if !ok {
			continue
		}
		switch k {
		case "user":
			if !isUserName(v) {
				return job, fmt.Errorf("user %q: not a user name", v)
			}
			job.User = v
		case "gpus":
			g, err := parseGPUIndices(v)
			if err != nil {
				return job, err
			}
			job.GPUs = g
		}
	}
	return job, nil
}

// isJobID: 1 to 19 digits (a Slurm job ID is a uint32; array and het
// jobs have their own).
func isJobID(s string) bool {
	if len(s) == 0 || len(s) > 19 {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// isUserName: 1 to 64 of the portable user-name characters (POSIX:
// letters, digits, '.', '_', '-'), and '@' for directory users.
func isUserName(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] == '-' {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' || r == '@')
	}) < 0
}

// parseGPUIndices reads SLURM_JOB_GPUS's form, "0,1,3", and gives it back
// as written (at most 64 GPUs, each below 4096).
func parseGPUIndices(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > 64 {
		return "", errors.New("gpus: more than 64")
	}
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n >= 4096 || strconv.Itoa(n) != p {
			return "", fmt.Errorf("gpus %q: want GPU indices, 0,1", s)
		}
	}
	return s, nil
}

// Of is the mapped job the frame's identity names; nil when it names
// none, or one the mapping does not hold. A process outside every job's
// cgroup is nobody's job, even where one job alone is mapped on the node
// (issue 54: an ssh login's busy torch process was credited to it).
func (j SlurmJobs) Of(id *sample.JobIdentity) *SlurmJob {
	if id.SlurmJob == "" {
		return nil
	}
	for i := range j.List {
		if j.List[i].ID == id.SlurmJob {
			return &j.List[i]
		}
	}
	return nil
}

var (
	dSlurmJob      = desc(sample.SeriesSlurmJobInfo)
	dSlurmRejected = desc(sample.SeriesSlurmJobMappingRejected)
)

// collectSlurmJobs emits the mapped jobs, when there is a mapping folder.
func collectSlurmJobs(j SlurmJobs, send func(d *prometheus.Desc, val float64, labels ...string)) {
	for _, job := range j.List {
		send(dSlurmJob.d, 1, job.ID, job.User, job.GPUs)
	}
	if j.NRejected > 0 {
		send(dSlurmRejected.d, float64(j.NRejected))
	}
}
