package job

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// HookState reads the run folder: the processes that loaded the hook and
// are still alive, those of them whose hook serves (it announced itself
// there: PID-PORT.json), and the newest line the hook logged there (its
// warnings go there, never into the job's output).
func (j *Job) HookState() (pids, serves []int, log string) {
	if j.runDir == "" {
		return nil, nil, ""
	}
	entries, err := os.ReadDir(j.runDir)
	if err != nil {
		return nil, nil, ""
	}
	var newest time.Time
	for _, e := range entries {
		name := e.Name()
		if p, ok := strings.CutPrefix(name, "py-"); ok {
			if pid, err := strconv.Atoi(p); err == nil && processExists(pid) {
				pids = append(pids, pid)
			}
		}
		if p, _, ok := strings.Cut(name, "-"); ok && strings.HasSuffix(name, ".json") && e.Type().IsRegular() {
			if pid, err := strconv.Atoi(p); err == nil && pid > 0 && processExists(pid) {
				serves = append(serves, pid)
			}
		}
		if strings.HasPrefix(name, "hook-") && strings.HasSuffix(name, ".log") && e.Type().IsRegular() {
			if info, err := e.Info(); err == nil && info.ModTime().After(newest) {
				if b, err := readTail(filepath.Join(j.runDir, name), 1024); err == nil {
					newest, log = info.ModTime(), b
				}
			}
		}
	}
	slices.Sort(pids)
	slices.Sort(serves)
	serves = slices.Compact(serves)
	return pids, serves, log
}

// readTail is the last line of a small file, printable.
func readTail(path string, limit int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := max(0, st.Size()-limit)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return sample.Printable(lines[len(lines)-1]), nil
}

// processExists says whether /proc/PID is there (the host's /proc: the
// hook's processes are this host's).
func processExists(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}
