package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

func pctStr(v float64) string { return fmt.Sprintf("%.0f %%", 100*v) }

func dur(sec float64) string { return sample.FormatDuration(sec) }

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// coresWords is the recording's core count, or that none was recorded
// (never "0 cores").
func coresWords(n int) string {
	if n <= 0 {
		return "cores not recorded"
	}
	return fmt.Sprintf("%d cores", n)
}

// gpusWords is the recording's GPUs ("no GPU": none in its header or its
// frames), unescaped.
func gpusWords(gpus []string) string {
	if len(gpus) == 0 {
		return "no GPU"
	}
	return fmt.Sprintf("%d GPU: %s", len(gpus), strings.Join(gpus, ", "))
}

// ramWords is the box's memory, or that none was read.
func ramWords(b uint64) string {
	if b == 0 {
		return "RAM not recorded"
	}
	return sample.FormatBytes(float64(b)) + " RAM"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// WriteFile writes a report to path, the format from its extension
// (.html, .md, .json), through a temporary file renamed into place, so it
// is complete or absent. It refuses to replace a file unless force.
func WriteFile(path string, s *Summary, force bool) error {
	if err := CheckOutput(path, force); err != nil {
		return err
	}
	ext := strings.ToLower(filepath.Ext(path))
	tmp, err := os.CreateTemp(filepath.Dir(path), ".gpuwatch-report-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // its path is the temporary file's
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this is a no-op
	switch ext {
	case ".html":
		err = WriteHTML(tmp, s)
	case ".md":
		htmlName := ""
		if h := strings.TrimSuffix(path, filepath.Ext(path)) + ".html"; fileExists(h) {
			htmlName = filepath.Base(h)
		}
		err = WriteMarkdown(tmp, s, htmlName)
	case ".json":
		err = WriteJSON(tmp, s)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// A file's usual mode under the user's umask (CreateTemp made it 0600).
	if err := os.Chmod(tmp.Name(), 0o666&^umask()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// CheckOutput says whether a report can be written to path: its extension
// names a format, and unless force, no file is there yet. Commands call it
// before their work, not after.
func CheckOutput(path string, force bool) error {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".html" && ext != ".md" && ext != ".json" {
		return fmt.Errorf("%s: the format comes from the extension: .html, .md or .json", path)
	}
	if !force && fileExists(path) {
		return fmt.Errorf("%s exists (--force replaces it)", path)
	}
	// Checked before the report is built (a day's recording takes
	// seconds): the temporary file's name, which CreateTemp's error
	// gives, says nothing the user typed.
	dir := filepath.Dir(path)
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: the folder %s does not exist", path, dir)
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case !fi.IsDir():
		return fmt.Errorf("%s: %s is not a folder", path, dir)
	}
	return nil
}

// umask is the process's file mode creation mask, from /proc/self/status
// (Linux 4.7 and later: reading it does not change it, as umask(2) would
// for a moment); 022 where it cannot be read.
func umask() os.FileMode {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return os.FileMode(m)
				}
			}
		}
	}
	return 0o022
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// stageRows are the stage table's rows (stage, time per batch, share of
// a worker's time), the stages measured only, in the order a batch
// passes them.
func stageRows(s *sample.LoaderStages) [][3]string {
	if s == nil {
		return nil
	}
	where := "worker"
	if s.Inline {
		where = "training process, inline"
	}
	var rows [][3]string
	for _, r := range []struct {
		name      string
		ms, share *float64
	}{
		{"getitem (" + where + ")", s.GetitemMs, s.GetitemShare}, {"collate (" + where + ")", s.CollateMs, s.CollateShare},
		{"hand-over (worker: pickling)", s.HandoverMs, s.HandoverShare}, {"take (loop: unpickling)", s.TakeMs, nil},
		{"pin (pin-memory thread)", s.PinMs, nil}, {"step (loop)", s.StepMs, nil}, {"an epoch's first batch", s.FirstBatchMs, nil},
	} {
		if r.ms == nil {
			continue
		}
		share := ""
		if r.share != nil {
			share = pctStr(*r.share)
		}
		rows = append(rows, [3]string{r.name, dur(*r.ms / 1000), share})
	}
	return rows
}

// payloadText says what a batch holds, in one sentence.
func payloadText(p *sample.BatchPayload) string {
	t := fmt.Sprintf("A batch holds %s of tensors", sample.FormatBytes(p.BytesPerBatch))
	if p.BytesPerSec != nil {
		t += fmt.Sprintf(" (%s/s)", sample.FormatBytes(*p.BytesPerSec))
	}
	if p.Float64Share != nil {
		t += ", " + pctStr(*p.Float64Share) + " of it float64"
	}
	if p.PinnedShare != nil {
		t += ", " + pctStr(*p.PinnedShare) + " pinned"
	}
	if p.PaddingShare != nil {
		t += "; " + pctStr(*p.PaddingShare) + " of its tokens are padding"
	}
	t += fmt.Sprintf(" (%d batches looked inside).", p.BatchesLooked)
	if p.Copy != nil {
		t += " The loop copies it " + p.Copy.Summary() + "."
	}
	return t
}

// versionWords is the recording's gpuwatch version as the reports say it
// after "gpuwatch": a header without one read "gpuwatch ." (a review).
func versionWords(v string) string {
	if v == "" {
		return "(version not recorded)"
	}
	return v
}

// readAt says which frame a finding's figures are from.
func (f Finding) readAt() string {
	if f.At.IsZero() {
		return "its frame's time not known"
	}
	return "read at " + f.At.UTC().Format("15:04:05") + " UTC, its most confident frame"
}
