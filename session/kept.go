package session

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	kflate "github.com/klauspost/compress/flate"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/sample"
)

// keptFrames is the observer that keeps the session's frames for the
// dashboard's e key (at most an hour at 1 s; older frames drop), so a
// report can be written without a recording.
//
// They are kept as JSON lines (a frame each, as sample.Frame marshals),
// compressed a block of keepBlock frames at a time: a live frame holds
// about 17 KB of heap (every process and thread), so an hour of them held
// as frames grew the dashboard's memory by about 1 MB a minute to some
// 60 MB; compressed, an hour is a few MB (docs/architecture.md, "What
// gpuwatch costs"). The newest frames, fewer than keepBlock, are held as
// they came (a frame is not changed once observed: what the sampler
// derives it writes into copies of the frame's own, sample.AssignRoles)
// and encoded together
// when the block fills: encoding one frame a second ran the JSON encoder
// cold each time, 19 % of the idle dashboard's CPU in a profile, where 20
// in a row cost about one. Only export decodes them.
type keptFrames struct {
	mu         sync.Mutex
	blocks     [][]byte        // closed blocks, oldest first: deflated JSON lines, keepBlock frames each
	pending    []*sample.Frame // the newest frames, fewer than keepBlock
	raw, z     bytes.Buffer    // a block's JSON lines, and deflated: copied into the block
	notes      []sample.Scenario
	version    string
	thresholds diagnose.Thresholds
}

// keepFrames frames are kept, keepBlock to a compressed block.
const keepFrames, keepBlock = 3600, 20

// Frame implements Observer.
func (s *keptFrames) Frame(f *sample.Frame, _ diagnose.Verdict) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending = append(s.pending, f); len(s.pending) < keepBlock {
		return nil
	}
	// Deflated without a compressor kept between blocks: compress/flate's
	// writer holds 1.2 MB, made per block two fifths of the idle
	// dashboard's allocation, kept a third of its live heap; a stateless
	// deflate keeps no state of its own (raw, a block's JSON, about
	// 120 KB, is reused), takes half the time (docs/architecture.md,
	// "The dashboard's memory") and writes a stream compress/flate reads.
	s.raw.Reset()
	writeLines(&s.raw, s.pending) // into memory: no error
	s.z.Reset()
	kflate.StatelessDeflate(&s.z, s.raw.Bytes(), true, nil) // into memory: no error
	s.blocks = append(s.blocks, bytes.Clone(s.z.Bytes()))   // not the buffer's spare room
	if len(s.blocks) > keepFrames/keepBlock {
		s.blocks = append(s.blocks[:0], s.blocks[1:]...)
	}
	clear(s.pending) // the frames go with the block
	s.pending = s.pending[:0]
	return nil
}

// writeLines writes frames to w as JSON lines; a frame that does not
// marshal is left out (the report lacks it; not a reason to stop the
// session).
func writeLines(w io.Writer, frames []*sample.Frame) {
	var line bytes.Buffer
	enc := json.NewEncoder(&line) // each line as json.Marshal writes it, and a newline
	for _, f := range frames {
		line.Reset()
		if enc.Encode(f) == nil {
			w.Write(line.Bytes())
		}
	}
}

// kept is the frames kept, oldest first: at most keepFrames, the newest.
func (s *keptFrames) kept() ([]recording.Recorded, error) {
	s.mu.Lock()
	blocks := slices.Clone(s.blocks)
	var cur bytes.Buffer
	writeLines(&cur, s.pending)
	s.mu.Unlock()
	var out []recording.Recorded
	add := func(r io.Reader) error {
		d := json.NewDecoder(r)
		for {
			var f sample.Frame
			if err := d.Decode(&f); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			out = append(out, recording.Recorded{Frame: f})
		}
	}
	for _, b := range blocks {
		if err := add(flate.NewReader(bytes.NewReader(b))); err != nil {
			return nil, fmt.Errorf("the kept frames: %w", err)
		}
	}
	if err := add(&cur); err != nil {
		return nil, fmt.Errorf("the kept frames: %w", err)
	}
	if n := len(out); n > keepFrames {
		out = out[n-keepFrames:]
	}
	return out, nil
}

// Note implements Observer.
func (s *keptFrames) Note(n sample.Note) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc, ok := n.(sample.Scenario); ok {
		s.notes = append(s.notes, sc)
	}
	return nil
}

// export writes an HTML report of the session so far to a new file in the
// current folder (the dashboard's e key).
func (s *keptFrames) export() (string, error) {
	frames, err := s.kept()
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	notes := slices.Clone(s.notes)
	s.mu.Unlock()
	if len(frames) == 0 {
		return "", fmt.Errorf("no frame yet")
	}
	rec := recording.New(Header(&frames[0].Frame, s.version, s.thresholds), frames, notes)
	path := "gpuwatch-report-" + time.Now().Format("20060102-150405") + ".html"
	if err := report.WriteFile(path, report.Build(rec, "(live session)", s.thresholds, time.Now()), false); err != nil {
		return "", err
	}
	return "report written: " + path, nil
}
