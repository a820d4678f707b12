package recording

import (
	"bufio"
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// Recorded is one frame of a recording with the verdict shown for it.
type Recorded struct {
	Frame   sample.Frame
	Verdict *diagnose.Verdict
}

// Recording is a recording read back: its header and notes, and its
// frames. A recording opened from a file holds where each frame's line
// is, not the frames: Frame reads one when asked, so memory does not grow
// with the recording's length (16 bytes a frame, at most MaxFrames). A
// live session's kept frames are held (New).
//
// A recording is outside input (a file anyone may hand over): every frame
// read goes through sample.Frame.Check, and the lists it holds are
// bounded. Not safe for concurrent use.
type Recording struct {
	Header    Header
	Scenarios []sample.Scenario
	Events    []sample.Event
	// Warnings say what could not be read: a truncated last line ends
	// the reading, and everything before it is kept; a corrupt line
	// elsewhere is skipped and counted (CorruptLines), and one warning
	// names the first few.
	Warnings []string
	// CorruptLines counts the complete lines that were not JSON: each is
	// skipped, and the lines after it are read.
	CorruptLines int

	src   io.ReaderAt // nil: the frames are held
	close func() error
	index []span
	held  []Recorded
	buf   []byte
	// framesCut: MaxFrames were indexed and more were left out.
	framesCut bool
	// notesCut: MaxNotes were kept and more were left out.
	notesCut bool
	// last and lastLine are the latest frame's time and line; before is
	// the time of the frame indexed before it.
	last, before time.Time
	lastLine     int
	// behind is a frame dated before the one above it, held until the
	// next says whether it is odd (left out) or the first after the
	// clock went back (clockBack). shift is what the clock's steps back
	// add to the times read from here on, and steps from which frame
	// each total holds.
	behind *heldFrame
	shift  time.Duration
	steps  []clockStep
}

// heldFrame is a frame line not yet indexed: its time, place and number,
// and how many events and scenarios were read before it (those read after
// it take the clock's step back with it).
type heldFrame struct {
	t                 time.Time
	at                span
	lineNo            int
	events, scenarios int
}

// clockStep: from frame index from on, the times read are shift later
// than the file says.
type clockStep struct {
	from  int
	shift time.Duration
}

// maxClockSteps bounds the clock's steps back a recording is read
// across, and maxClockStep each: past them a frame dated back is left
// out, as an odd one (the shift stays within what a Duration holds).
const (
	maxClockSteps = 64
	maxClockStep  = 366 * 24 * time.Hour
)

// span is a frame line's place in the file.
type span struct {
	off int64
	n   int
}

// ErrNotRecording is returned for a file that is not a gpuwatch recording.
var ErrNotRecording = errors.New("not a gpuwatch recording")

// Bounds on what a recording may make gpuwatch hold.
const (
	// MaxLineBytes bounds one line: a frame of a 256-core, 8-GPU machine
	// with 256 ranks is under 200 KiB. A longer line is skipped, never
	// loaded whole.
	MaxLineBytes = 4 << 20
	// MaxFrames bounds the frames read: twelve days at one a second. The
	// rest are left out, with a warning.
	MaxFrames = 1 << 20
	// MaxNotes bounds the scenario switches and the events kept.
	MaxNotes = 10_000
	// maxWarnings bounds Warnings; the last says how many more there were.
	maxWarnings = 100
)

// New is a recording of frames held in memory (a live session's).
func New(h Header, frames []Recorded, scenarios []sample.Scenario) *Recording {
	return &Recording{Header: h, held: frames, Scenarios: scenarios}
}

// Open reads the recording at path: its header and notes now, its frames
// when asked. A file of another format, or of a newer version, is refused
// with an error; so is anything but a regular file (a FIFO would never
// end). Close it when done.
func Open(path string) (*Recording, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	rec, err := Read(f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	rec.close = f.Close
	return rec, nil
}

// Close releases the file of an opened recording.
func (r *Recording) Close() error {
	if r.close == nil {
		return nil
	}
	err := r.close()
	r.close = nil
	return err
}

// Len is the number of frames.
func (r *Recording) Len() int {
	if r.src == nil {
		return len(r.held)
	}
	return len(r.index)
}

// Frame reads frame i (0 ≤ i < Len), checked: what Check changed is in
// its Unavailable["recording"], and a field of the wrong type is left out
// and named there. The error is the file's (an I/O error).
func (r *Recording) Frame(i int) (*Recorded, error) {
	if r.src == nil {
		return &r.held[i], nil
	}
	sp := r.index[i]
	if cap(r.buf) < sp.n {
		r.buf = make([]byte, sp.n)
	}
	line := r.buf[:sp.n]
	if _, err := r.src.ReadAt(line, sp.off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("frame %d: %w", i+1, err)
	}
	type frameLine struct {
		sample.Frame
		Verdict *diagnose.Verdict `json:"verdict"`
	}
	var fl frameLine
	err := json.Unmarshal(line, &fl)
	var notes []string
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		// Unmarshal fills what it can, leaves a field of the wrong type
		// at its zero (a pointer to 0 for a number past float64's range)
		// and names only the first. Every value that does not fit its
		// field is dropped from the line, in one pass over it against
		// the frame's types, and the line decoded again: such a field is
		// absent, and each is named.
		pruned, dropped := dropMistyped(line, reflect.TypeOf(fl))
		fl = frameLine{}
		if err = json.Unmarshal(pruned, &fl); err == nil {
			notes = dropped
		}
	}
	if err != nil { // not JSON, or a wrong type that could not be dropped
		notes = append(notes, err.Error()+": the frame is left empty")
		fl.Frame = sample.Frame{Time: fl.Frame.Time}
	}
	fl.Frame.ShiftTimes(r.shiftAt(i))
	notes = append(fl.Frame.Check(), notes...)
	fl.Frame.AssignRoles() // roles are derived, never taken from the file
	if len(notes) > 0 {
		if fl.Frame.Unavailable == nil {
			fl.Frame.Unavailable = map[sample.Source]string{}
		}
		fl.Frame.Unavailable[sample.SourceRecording] = joinNotes(notes)
	}
	return &Recorded{Frame: fl.Frame, Verdict: fl.Verdict}, nil
}

// dropMistyped is line without the values that do not fit their field
// of t, the line's Go type, and a note for each ("gpus.gpm.sm_activity_pct:
// a number 1e999, not a float64: left out", the first maxDropNotes): a
// member of an object is removed, an element of an array becomes null (the
// others keep their places). Numbers are checked against their field's
// size, strings, booleans, objects and arrays against its kind; a type
// that decodes itself (a time) is tried on its own value. Where the line
// is no JSON it comes back as it is.
func dropMistyped(line []byte, t reflect.Type) ([]byte, []string) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber() // numbers are written back as they were read
	var root any
	if dec.Decode(&root) != nil {
		return line, nil
	}
	var notes []string
	dropped := 0
	var walk func(v any, t reflect.Type, path string) bool
	walk = func(v any, t reflect.Type, path string) bool { // false: v does not fit t
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if v == nil || t.Kind() == reflect.Interface {
			return true // null fits any field
		}
		if pt := reflect.PointerTo(t); pt.Implements(unmarshalerType) || pt.Implements(textUnmarshalerType) {
			b, err := json.Marshal(v)
			return err == nil && json.Unmarshal(b, reflect.New(t).Interface()) == nil
		}
		switch v := v.(type) {
		case map[string]any:
			switch t.Kind() {
			case reflect.Struct:
				fields := jsonFields(t)
				for k, c := range v {
					ft, ok := fields[strings.ToLower(k)]
					if ok && !walk(c, ft, join(path, k)) {
						delete(v, k)
						note(&notes, &dropped, join(path, k), c, ft)
					}
				}
				return true
			case reflect.Map:
				for k, c := range v {
					if !walk(c, t.Elem(), path) {
						delete(v, k)
						note(&notes, &dropped, path, c, t.Elem())
					}
				}
				return true
			}
			return false
		case []any:
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
				return false
			}
			for i, c := range v {
				if !walk(c, t.Elem(), path) {
					v[i] = nil
					note(&notes, &dropped, path, c, t.Elem())
				}
			}
			return true
		case json.Number:
			return numberFits(v, t)
		case string:
			return t.Kind() == reflect.String
		case bool:
			return t.Kind() == reflect.Bool
		}
		return false
	}
	if !walk(root, t, "") {
		return line, nil
	}
	if dropped > maxDropNotes {
		notes = append(notes, fmt.Sprintf("and %d more", dropped-maxDropNotes))
	}
	b, err := json.Marshal(root)
	if err != nil {
		return line, nil
	}
	return b, notes
}

// numberFits says a JSON number fits a field of type t: its kind, and
// its size (1e999 fits no float64, 300 no uint8).
func numberFits(v json.Number, t reflect.Type) bool {
	var err error
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		_, err = strconv.ParseFloat(v.String(), t.Bits())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		_, err = strconv.ParseInt(v.String(), 10, t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		_, err = strconv.ParseUint(v.String(), 10, t.Bits())
	default:
		return false
	}
	return err == nil
}

// maxDropNotes is how many dropped values a frame's note names.
const maxDropNotes = 8

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// note names a value dropped at path, the first maxDropNotes of them.
func note(notes *[]string, dropped *int, path string, v any, t reflect.Type) {
	if *dropped++; *dropped > maxDropNotes {
		return
	}
	what := "an object"
	switch v := v.(type) {
	case json.Number:
		what = "a number " + sample.Printable(v.String()[:min(len(v.String()), 24)])
	case string:
		what = "a string"
	case bool:
		what = "a boolean"
	case []any:
		what = "an array"
	}
	*notes = append(*notes, fmt.Sprintf("%s: %s, not a %s: left out", path, what, t))
}

func join(path, k string) string {
	if path == "" {
		return sample.Printable(k)
	}
	return path + "." + sample.Printable(k)
}

// jsonFields are the fields encoding/json fills in a struct of type t,
// by their JSON names lower-cased (it matches keys without case), an
// embedded struct's promoted; cached per type.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	// Breadth first: a shallower field wins over an embedded struct's,
	// as encoding/json has it.
	for level := []reflect.Type{t}; len(level) > 0; {
		var next []reflect.Type
		for _, t := range level {
			for i := range t.NumField() {
				f := t.Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name == "-" || !f.IsExported() && !f.Anonymous {
					continue
				}
				if ft := f.Type; f.Anonymous && name == "" {
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if ft.Kind() == reflect.Struct {
						next = append(next, ft)
						continue
					}
				}
				if name == "" {
					name = f.Name
				}
				if _, dup := m[strings.ToLower(name)]; !dup {
					m[strings.ToLower(name)] = f.Type
				}
			}
		}
		level = next
	}
	fieldCache.Store(t, m)
	return m
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// joinNotes is a frame's notes in one line, the first few.
func joinNotes(notes []string) string {
	const shown = 3
	s := ""
	for i, n := range notes[:min(shown, len(notes))] {
		if i > 0 {
			s += "; "
		}
		s += n
	}
	if len(notes) > shown {
		s += fmt.Sprintf("; and %d more", len(notes)-shown)
	}
	return s
}

// Each calls fn with every frame in order, until fn or a read fails.
func (r *Recording) Each(fn func(i int, rec *Recorded) error) error {
	for i := range r.Len() {
		rec, err := r.Frame(i)
		if err != nil {
			return err
		}
		if err := fn(i, rec); err != nil {
			return err
		}
	}
	return nil
}

func (r *Recording) warn(format string, args ...any) {
	switch {
	case len(r.Warnings) < maxWarnings:
		r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
	case len(r.Warnings) == maxWarnings:
		r.Warnings = append(r.Warnings, "more warnings left out")
	}
}

// Read reads a recording from src (size bytes): its header and notes,
// and where each frame is. It reads up to the last good line.
func Read(src io.ReaderAt, size int64) (*Recording, error) {
	rec := &Recording{src: src}
	br := bufio.NewReaderSize(io.NewSectionReader(src, 0, size), 64<<10)
	var line []byte
	var off int64
	header := false   // the first line that is not blank must be the header
	var corrupt []int // the first few corrupt lines' numbers
	defer func() { rec.endFrames(); rec.sayCorrupt(corrupt) }()
	for lineNo := 1; ; lineNo++ {
		var long bool
		var n int
		var err error
		// Before the header a line past the limit ends the reading: no
		// need to read the rest of it (a 8 GiB file of one line took 42 s
		// to be refused).
		line, n, long, err = readLine(br, line[:0], MaxLineBytes, header)
		start := off
		off += int64(n)
		if long {
			if !header {
				return nil, fmt.Errorf("%w: the first line is longer than %d MiB", ErrNotRecording, MaxLineBytes>>20)
			}
			rec.warn("line %d is longer than %d MiB: skipped", lineNo, MaxLineBytes>>20)
			if err != nil {
				break
			}
			continue
		}
		if n == 0 && err != nil {
			if err != io.EOF {
				return rec, err
			}
			break
		}
		complete := n > 0 && line[len(line)-1] == '\n'
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			if err != nil {
				break
			}
			continue
		}
		var head struct {
			Type string    `json:"type"`
			Time time.Time `json:"time"`
		}
		// Unmarshal checks the whole line's syntax, decoding only "type"
		// and "time".
		if jerr := json.Unmarshal(trimmed, &head); jerr != nil {
			if !header {
				return nil, fmt.Errorf("%w: the first line is not JSON%s", ErrNotRecording, notJSONHint(trimmed))
			}
			if rec.badLine(lineNo, complete, err == nil, &corrupt) {
				continue
			}
			break
		}
		if !header {
			header = true
			switch head.Type {
			case "frame", "scenario", "event":
				rec.headerless() // --json's lines (the demo's first is a scenario): this one is read as what it is
			case "header":
				if err := rec.Header.read(trimmed); err != nil {
					return nil, err
				}
				continue
			default:
				return nil, fmt.Errorf("%w: no header line", ErrNotRecording)
			}
		}
		rec.add(head.Type, head.Time, trimmed, span{start, n}, lineNo)
		if err != nil {
			break
		}
	}
	return rec, nil
}

// badLine takes a line that is not JSON and says whether to read on. One
// in the middle (a disk error, two writers, a hand edit) is skipped and
// counted, its number kept among the first five in corrupt; the last line,
// or one cut off, ends the reading with a warning.
func (r *Recording) badLine(lineNo int, complete, more bool, corrupt *[]int) bool {
	if complete && more {
		r.CorruptLines++
		if len(*corrupt) < 5 {
			*corrupt = append(*corrupt, lineNo)
		}
		return true
	}
	what := "corrupt"
	if !complete {
		what = "truncated (the recording was cut off)"
	}
	r.warn("line %d is %s: read up to line %d", lineNo, what, lineNo-1)
	return false
}

// sayCorrupt adds the one warning about the corrupt lines skipped, naming
// the first few.
func (r *Recording) sayCorrupt(first []int) {
	if r.CorruptLines == 0 {
		return
	}
	nums := make([]string, len(first))
	for i, n := range first {
		nums[i] = strconv.Itoa(n)
	}
	more := ""
	if r.CorruptLines > len(first) {
		more = ", …"
	}
	r.warn("%s skipped, not JSON (line %s%s); every other line was read", sample.Plural(r.CorruptLines, "corrupt line"), strings.Join(nums, ", "), more)
}

// shiftAt is what the clock's steps back add to frame i's time.
func (r *Recording) shiftAt(i int) time.Duration {
	var d time.Duration
	for _, st := range r.steps {
		if st.from > i {
			break
		}
		d = st.shift
	}
	return d
}

// add takes one line that is not the header. A frame must be in time
// order, at a time a clock can give (1970 to 9000): replay seeks by time,
// and a report's spans are differences of times. Not bounded by the
// reader's clock: a recording of a box whose clock runs ahead is read.
func (r *Recording) add(kind string, t time.Time, line []byte, at span, lineNo int) {
	switch kind {
	case "frame":
		r.addFrame(t.Add(r.shift), at, lineNo)
	case "scenario":
		var s sample.Scenario
		if err := json.Unmarshal(line, &s); err != nil {
			r.warn("line %d: %v: left out", lineNo, err)
		} else if r.note(len(r.Scenarios), lineNo) {
			s.Time = s.Time.Add(r.shift)
			if s.Until != nil {
				u := s.Until.Add(r.shift)
				s.Until = &u
			}
			s.Name = cut(s.Name)
			if len(s.Knobs) > maxKnobs {
				s.Knobs = nil
			}
			r.Scenarios = append(r.Scenarios, s)
		}
	case "event":
		var e sample.Event
		if err := json.Unmarshal(line, &e); err != nil {
			r.warn("line %d: %v: left out", lineNo, err)
		} else if r.note(len(r.Events), lineNo) {
			e.Time = e.Time.Add(r.shift)
			e.Name, e.Detail = cut(e.Name), cut(e.Detail)
			r.Events = append(r.Events, e)
		}
	default:
		// A later part's header inside one file, the verdict changes
		// (replay and report recompute verdicts), and lines of types a
		// newer gpuwatch adds are skipped.
	}
}

// addFrame indexes a frame line at time t (the clock's steps back so far
// added). A frame must be in time order, at a time a clock can give (1970
// to 9000): replay seeks by time, and a report's spans are differences of
// times. Not bounded by the reader's clock: a recording of a box whose
// clock runs ahead is read. Out of order, one frame is left out: one dated
// ahead of the frames on either side, or one dated back whose next frame
// does not go on from it. Two frames that go on from a time before the
// frame above are the clock gone back (an NTP step, a VM restored): they
// and the frames after are read on from the frame above, the step taken
// out, and said once (a review: a clock stepped back an hour left out
// every frame after it).
func (r *Recording) addFrame(t time.Time, at span, lineNo int) {
	if t.Year() < 1970 || t.Year() > 9000 {
		r.warn("line %d: a frame at %s: no clock gives that time: left out", lineNo, t.Add(-r.shift).Format(time.RFC3339))
		return
	}
	aheadAbove := len(r.index) >= 2 && !t.Before(r.before) // the frame above is odd, if this one is before it
	if b := r.behind; b != nil {
		r.behind = nil
		if !t.Before(b.t) && t.Before(r.last) && !aheadAbove && r.last.Sub(b.t) <= maxClockStep && len(r.steps) < maxClockSteps && !r.framesCut {
			r.clockBack(b, t, at, lineNo)
			return
		}
		r.warn("line %d: a frame at %s, before the one above it: left out", b.lineNo, b.t.Add(-r.shift).Format(time.RFC3339))
	}
	switch {
	case t.Before(r.last) && aheadAbove:
		// The frame above is the odd one, after this one and the frames
		// that go on from the one before it: it goes, not every frame
		// after it (a review: one frame dated a year ahead left out the
		// rest of a recording).
		r.warn("line %d: a frame at %s, after the frames below it: left out", r.lastLine, r.last.Add(-r.shift).Format(time.RFC3339))
		r.index[len(r.index)-1] = at
		r.last, r.lastLine = t, lineNo
	case t.Before(r.last):
		r.behind = &heldFrame{t, at, lineNo, len(r.Events), len(r.Scenarios)} // odd, or the clock gone back: the next frame says
	case len(r.index) < MaxFrames:
		r.before, r.last, r.lastLine = r.last, t, lineNo
		r.index = append(r.index, at)
	case !r.framesCut:
		r.framesCut = true
		r.warn("line %d: more than %d frames: the rest are left out", lineNo, MaxFrames)
	}
}

// clockBack reads on across the clock's step back that frame b and the
// next (at t, no earlier) show: both, and every time read after, are
// shifted to go on from the frame above by the interval between the last
// two frames (the header's where unknown).
func (r *Recording) clockBack(b *heldFrame, t time.Time, at span, lineNo int) {
	gap := r.last.Sub(r.before)
	if len(r.index) < 2 || gap <= 0 || gap > time.Minute {
		gap = time.Duration(r.Header.IntervalSec * float64(time.Second))
		if gap <= 0 || gap > time.Minute {
			gap = time.Second
		}
	}
	d := r.last.Add(gap).Sub(b.t)
	r.warn("line %d: the clock went back %s (a frame at %s after one at %s): it and the frames after it are read on from there, each %s later than it says",
		b.lineNo, r.last.Sub(b.t).Round(time.Millisecond), b.t.Add(-r.shift).Format(time.RFC3339), r.last.Add(-r.shift).Format(time.RFC3339), (r.shift + d).Round(time.Millisecond))
	r.shift += d
	r.steps = append(r.steps, clockStep{from: len(r.index), shift: r.shift})
	for i := b.events; i < len(r.Events); i++ { // read between the two frames: after the step
		r.Events[i].Time = r.Events[i].Time.Add(d)
	}
	for i := b.scenarios; i < len(r.Scenarios); i++ {
		sc := &r.Scenarios[i]
		sc.Time = sc.Time.Add(d)
		if sc.Until != nil {
			u := sc.Until.Add(d)
			sc.Until = &u
		}
	}
	r.addFrame(b.t.Add(d), b.at, b.lineNo)
	r.addFrame(t.Add(d), at, lineNo)
}

// endFrames says the frame held dated back, where the recording ended
// before its next: left out.
func (r *Recording) endFrames() {
	if b := r.behind; b != nil {
		r.behind = nil
		r.warn("line %d: a frame at %s, before the one above it: left out", b.lineNo, b.t.Add(-r.shift).Format(time.RFC3339))
	}
}

// note says whether one more note fits (n are held), warning once when
// not.
func (r *Recording) note(n, lineNo int) bool {
	if n == MaxNotes && !r.notesCut {
		r.notesCut = true
		r.warn("line %d: more than %d scenario switches or events: the rest are left out", lineNo, MaxNotes)
	}
	return n < MaxNotes
}

// maxKnobs bounds a scenario's knobs, maxText a note's strings.
const (
	maxKnobs = 64
	maxText  = 4096
)

func cut(s string) string {
	if len(s) <= maxText {
		return s
	}
	return s[:maxText] + "…"
}

// headerless reads --json's lines (gpuwatch --headless --json >
// run.jsonl, the root help's example) as a recording: the same frame
// lines, with no header, so judged with the default thresholds and no
// host or command (a review: replay and report refused them).
func (r *Recording) headerless() {
	th := diagnose.DefaultThresholds()
	r.Header = Header{Type: "header", Format: RecordingFormat, Version: RecordingVersion, Thresholds: &th}
	r.warn("no header line: read as --json's frame lines, judged with the default thresholds (a recording, --record FILE or gpuwatch record -o FILE, also keeps the host, the command and the thresholds used)")
}

// read decodes a header line and checks its format and version.
// Thresholds a recording's gpuwatch did not have yet are the defaults,
// not 0: decoded onto them.
func (h *Header) read(line []byte) error {
	th := diagnose.DefaultThresholds()
	h.Thresholds = &th
	if err := json.Unmarshal(line, h); err != nil || h.Format != RecordingFormat {
		return fmt.Errorf("%w: format %q", ErrNotRecording, sample.Printable(h.Format))
	}
	if h.Version > RecordingVersion {
		return fmt.Errorf("recording format version %d is newer than this gpuwatch reads (%d): update gpuwatch", h.Version, RecordingVersion)
	}
	h.bound()
	return nil
}

// bound cuts the header's lists and strings, which reports show.
func (h *Header) bound() {
	h.Host, h.GpuwatchVersion = cut(h.Host), cut(h.GpuwatchVersion)
	if len(h.GPUs) > 64 {
		h.GPUs = h.GPUs[:64]
	}
	if len(h.Command) > 256 {
		h.Command = h.Command[:256]
	}
	for i := range h.GPUs {
		h.GPUs[i] = cut(h.GPUs[i])
	}
	for i := range h.Command {
		h.Command[i] = cut(h.Command[i])
	}
	if h.Job != nil {
		for _, s := range []*string{&h.Job.SlurmJob, &h.Job.SlurmStep, &h.Job.SlurmTask, &h.Job.SlurmRank, &h.Job.Pod,
			&h.Job.PodUID, &h.Job.Namespace, &h.Job.Container, &h.Job.Rank, &h.Job.LocalRank, &h.Job.WorldSize} {
			*s = cut(*s)
		}
	}
}

// headlessLine is the start of a --headless text line: "10:05:18 [".
var headlessLine = regexp.MustCompile(`^[0-9]{2}:[0-9]{2}:[0-9]{2} \[`)

// notJSONHint says what a first line that is not JSON looks like, where
// it is a file users make by mistake: a gzip'd recording, --headless's
// text lines.
func notJSONHint(line []byte) string {
	switch {
	case bytes.HasPrefix(line, []byte{0x1f, 0x8b}):
		return " (it is gzip-compressed: gunzip it first)"
	case headlessLine.Match(line):
		return " (these are --headless text lines, which keep no frames: record with --json, --record FILE or gpuwatch record -o FILE)"
	}
	return ""
}

// readLine appends one line (with its '\n', if any) of at most limit
// bytes to buf, and says how many bytes it took from br. A longer line is
// read through to its end without keeping it (drain), or left where the
// limit was passed, and long is true.
func readLine(br *bufio.Reader, buf []byte, limit int, drain bool) (line []byte, n int, long bool, err error) {
	line = buf
	for {
		chunk, err := br.ReadSlice('\n')
		n += len(chunk)
		if !long {
			if len(line)+len(chunk) > limit {
				long, line = true, buf[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if long && !drain {
			return line, n, long, err
		}
		if err != bufio.ErrBufferFull {
			return line, n, long, err
		}
	}
}
