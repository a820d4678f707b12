// Package predlog owns tune's memory of its own predictions (issue 52,
// item 3): each measured change's predicted and measured samples/s, one
// JSON line a tune step in a small per-user file, and the bias they show
// on a machine ("predictions on this box have run 20 % above what was
// measured"). tune appends to it; a live session reads it once, at its
// start, and adds the sentence to a verdict that predicts.
//
// The file is outside input: another program, or a hand, may have
// written anything there. It is opened without following a symlink, must
// be a regular file of the user's, is read at most MaxBytes from its end,
// and a line that is no valid record is skipped. It imports probes (for
// OwnedFolder) and never session.
package predlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"
)

const (
	// MaxRecords is the most records the file keeps, the newest; past it
	// the file is rewritten.
	MaxRecords = 200
	// MaxBytes is the most of the file read, from its end (200 records
	// are ~30 KiB).
	MaxBytes = 256 << 10
	// biasSteps is how many of a host's newest records the bias is the
	// median of, and minSteps the fewest it is taken on.
	biasSteps, minSteps = 50, 3
	// MinBiasPct is the least bias said: the model's own error over a
	// grid is 2.8 % at the median, 11 % at p90 (README, "tune").
	MinBiasPct = 10
	// maxHost and maxChange bound a record's strings (a host name is at
	// most 255 bytes, RFC 1035).
	maxHost, maxChange = 255, 512
	// minRate and maxRate bound a record's samples/s (and so a ratio).
	minRate, maxRate = 1e-3, 1e12
)

// Record is one tune step whose configuration a prediction was made for.
type Record struct {
	Time      time.Time `json:"time"`
	Host      string    `json:"host"`
	Change    string    `json:"change"`    // the knobs changed: "num_workers 1 → 4"
	Predicted float64   `json:"predicted"` // samples/s: the prediction's point
	Measured  float64   `json:"measured"`  // samples/s
	// High is the prediction's high side (samples/s), and Model which
	// point Predicted is: ModelRange, the range's low side. A record
	// without it (written before predictions were ranges, its point the
	// high side) is not counted.
	High  float64 `json:"high,omitempty"`
	Model int     `json:"model,omitempty"`
	// Loader is whose pipeline was tuned, LoaderEmbedded or LoaderJob:
	// the bias is said to each from its own steps only (a review: a
	// user's job was told how tune's steps over gpuwatch's own loader had
	// run). A record without it is counted for neither.
	Loader string `json:"loader,omitempty"`
}

// The pipelines a record's prediction was for.
const (
	LoaderEmbedded = "embedded" // gpuwatch's own loader (tune without a command)
	LoaderJob      = "job"      // the user's command, or a job watched
)

// ModelRange marks a record whose Predicted is the low side of a
// predicted range (docs/diagnosis.md, "The range").
const ModelRange = 2

// valid says whether r is a record: a host, both rates positive and
// bounded, its strings bounded.
func (r Record) valid() bool {
	return r.Host != "" && len(r.Host) <= maxHost && len(r.Change) <= maxChange && rate(r.Predicted) && rate(r.Measured)
}

// ranged says whether r's point is the range's low side, with a high side
// at or above it: the records the bias is taken over.
func (r Record) ranged() bool { return r.Model == ModelRange && rate(r.High) && r.High >= r.Predicted }

// rate says whether x is a rate a record may hold: bounded, positive, not
// NaN.
func rate(x float64) bool { return x >= minRate && x <= maxRate }

// Path is the file: $XDG_STATE_HOME/gpuwatch/predictions.jsonl, else
// ~/.local/state/gpuwatch/predictions.jsonl (the XDG base directory
// specification's state home: data that persists, not worth a backup).
// It creates nothing.
func Path() (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) { // the specification: a relative one is invalid
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "gpuwatch", "predictions.jsonl"), nil
}

// Append adds r to the file at path, in a folder (0700) of the user's
// that it creates, and keeps the newest MaxRecords: past them, the file is
// rewritten through a temporary file renamed over it.
func Append(path string, r Record) error {
	if !r.valid() {
		return fmt.Errorf("not a record: %+v", r)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := probes.OwnedFolder(dir, 0o022); err != nil {
		return err
	}
	f, err := open(path, os.O_RDWR|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return err
	}
	defer f.Close()
	rs, lines, whole, err := load(f)
	if err != nil {
		return err
	}
	if whole && lines < MaxRecords {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = f.Write(append(line, '\n'))
		return err
	}
	rs = append(rs, r)
	return replace(path, rs[max(0, len(rs)-MaxRecords):])
}

// Read is the records of the file at path, oldest first: none when it
// does not exist.
func Read(path string) ([]Record, error) {
	f, err := open(path, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rs, _, _, err := load(f)
	return rs, err
}

// open opens path without following a symlink (O_NOFOLLOW: ELOOP) or
// waiting on a FIFO (O_NONBLOCK), and wants a regular file of the user's.
func open(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	if err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
			err = fmt.Errorf("%s belongs to user %d, not to you", path, sys.Uid)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// load reads f's newest MaxBytes: its records, how many lines that holds,
// and whether it was the whole file.
func load(f *os.File) (rs []Record, lines int, whole bool, err error) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, false, err
	}
	off := max(0, st.Size()-MaxBytes)
	b, err := io.ReadAll(io.NewSectionReader(f, off, MaxBytes))
	if err != nil {
		return nil, 0, false, err
	}
	if off > 0 { // the first line is cut
		_, b, _ = bytes.Cut(b, []byte("\n"))
	}
	return Parse(b), bytes.Count(b, []byte("\n")), off == 0, nil
}

// replace writes rs as the file at path, whole, through a temporary file
// in its folder renamed over it.
func replace(path string, rs []Record) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".predictions-*") // 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing
	enc := json.NewEncoder(tmp)
	enc.SetEscapeHTML(false)
	for _, r := range rs {
		if err := enc.Encode(r); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Parse reads records, one JSON object a line, oldest first; a line that
// is not a valid record is skipped.
func Parse(b []byte) []Record {
	var rs []Record
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		var r Record
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &r) != nil || !r.valid() {
			continue
		}
		rs = append(rs, r)
	}
	return rs
}

// Bias is how a machine's predictions compared with what was measured.
type Bias struct {
	// Ratio is the median of predicted/measured over the host's newest 50
	// records: 1.2 says predictions ran 20 % above what was measured.
	Ratio float64
	Steps int // the records it is the median of
}

// BiasOn is host's bias for loader's pipeline over rs (oldest first),
// over the records whose point is the range's low side; false with fewer
// than 3 such records of host's and loader's, and for no loader.
func BiasOn(rs []Record, host, loader string) (Bias, bool) {
	if loader == "" {
		return Bias{}, false // records without a key count for no pipeline
	}
	var ratios []float64
	for i := len(rs) - 1; i >= 0 && len(ratios) < biasSteps; i-- {
		if r := rs[i]; r.Host == host && r.Loader == loader && r.valid() && r.ranged() {
			ratios = append(ratios, r.Predicted/r.Measured)
		}
	}
	if len(ratios) < minSteps {
		return Bias{}, false
	}
	slices.Sort(ratios)
	n := len(ratios)
	return Bias{Ratio: (ratios[(n-1)/2] + ratios[n/2]) / 2, Steps: n}, true
}

// Pct is 100 × (Ratio − 1): how far above what was measured the
// predictions ran, in %; below when negative.
func (b Bias) Pct() float64 { return 100 * (b.Ratio - 1) }

// String is the bias in words, "" when under MinBiasPct either way:
// "predictions on this box have run 20 % above what was measured (median
// of 5 tune steps)".
func (b Bias) String() string {
	pct, way := b.Pct(), "above"
	if pct < 0 {
		pct, way = -pct, "below"
	}
	if b.Steps < minSteps || !(pct >= MinBiasPct) {
		return ""
	}
	return fmt.Sprintf("predictions on this box have run %.0f %% %s what was measured (median of %d tune steps)", pct, way, b.Steps)
}

// Line is the bias on this machine in words, from the user's file: ""
// when there is nothing to say (no file, fewer than 3 steps, under 10 %)
// or the file cannot be read.
func Line(loader string) string {
	path, err := Path()
	if err != nil {
		return ""
	}
	host, err := os.Hostname()
	if err != nil {
		return ""
	}
	rs, err := Read(path)
	if err != nil {
		return ""
	}
	b, ok := BiasOn(rs, host, loader)
	if !ok {
		return ""
	}
	return b.String()
}
