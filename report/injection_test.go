package report

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/sample"
)

// hostile is the tour recording with s in every string that comes from
// outside: host, GPUs, command, process, thread, disk and interface names,
// the loader's source and knobs, the GPU's peak row and source, the job's
// settings and GPU profile, profile function and category names,
// scenario names and event details.
func hostile(t testing.TB, s string) *Summary {
	t.Helper()
	rec, frames := heldTour(t)
	rec.Header.Host, rec.Header.GPUs, rec.Header.Command, rec.Header.GpuwatchVersion = s, []string{s}, []string{s}, s
	for i := range rec.Scenarios {
		rec.Scenarios[i].Name = s
	}
	rec.Events = append(rec.Events, sample.Event{Time: frames[0].Frame.Time, Name: s, Detail: s})
	for i := range frames {
		fr := &frames[i].Frame
		if p := fr.Procs; p != nil {
			for j := range p.List {
				p.List[j].Name = s
			}
			for j := range p.Threads {
				p.Threads[j].Name = s
			}
		}
		for j := range fr.Disks {
			fr.Disks[j].Name = s
		}
		for j := range fr.Net {
			fr.Net[j].Name = s
		}
		fr.GPUs = append(fr.GPUs[:0:0], sample.GPU{Name: s, UUID: s, Peak: &sample.GPUPeak{Model: s, Source: s, DenseTFLOPS: map[string]float64{"bf16": 1}}})
		if l := fr.Loader; l != nil {
			l.Source = s
			l.Knobs = map[string]string{s: s}
			// The GPU is the loop's (the only one): its settings and
			// profile are in the GPU section.
			on := true
			l.Settings = &sample.JobSettings{Autocast: &on, AutocastDtype: s}
			l.GPUProfile = &sample.GPUProfile{State: sample.GPUProfileDone, Steps: 2, BusySecondsPerStep: f64(0.08), IdleSecondsPerStep: f64(0.02),
				Parts: []sample.GPUTimePart{{Category: "matmul", Precision: s, SecondsPerStep: 0.08}}, Idle: []sample.GPUIdleGap{{After: s, SecondsPerStep: 0.02}}}
		}
		fr.Profile = &sample.Profile{Categories: []sample.ProfileCategory{{Name: s, Share: 0.5}, {Name: "reading", Share: 0.5}},
			Top: []sample.ProfileFunc{{Name: s, File: "/x/" + s + "/" + s, Line: 7, Flat: 0.5, Cum: 0.5}}}
	}
	return Build(rec, "x", diagnose.DefaultThresholds(), generated)
}

var tagRE = regexp.MustCompile(`<(/?[a-zA-Z][a-zA-Z0-9]*)`)

// markup is what a writer's output means as structure: the HTML tags in
// order, or for Markdown its lines' count and the characters that build
// links, code, tables and HTML.
func htmlTags(b []byte) string { return strings.Join(tagRE.FindAllString(string(b), -1), " ") }

func mdStructure(b []byte) string {
	s := string(b)
	unescaped := func(c byte) int {
		n := 0
		for i := 0; i < len(s); i++ {
			if s[i] == '\\' {
				i++
				continue
			}
			if s[i] == c {
				n++
			}
		}
		return n
	}
	return strings.Join([]string{
		"lines", strconv.Itoa(strings.Count(s, "\n")), "<", strconv.Itoa(unescaped('<')), "`", strconv.Itoa(unescaped('`')),
		"|", strconv.Itoa(unescaped('|')), "[", strconv.Itoa(unescaped('[')), "*", strconv.Itoa(unescaped('*')),
	}, " ")
}

// checkNoForeignMarkup writes both formats for s and for a plain "x": the
// structure must be the same, so s added no tag, link, code or table cell.
func checkNoForeignMarkup(t *testing.T, s string) {
	plain, evil := hostile(t, "x"), hostile(t, s)
	var ph, eh, pm, em bytes.Buffer
	if err := WriteHTML(&ph, plain); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&eh, evil); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&pm, plain, ""); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&em, evil, ""); err != nil {
		t.Fatal(err)
	}
	if p, e := htmlTags(ph.Bytes()), htmlTags(eh.Bytes()); p != e {
		t.Fatalf("%q changed the HTML's tags", s)
	}
	if p, e := mdStructure(pm.Bytes()), mdStructure(em.Bytes()); p != e {
		t.Fatalf("%q changed the Markdown's structure: %s, want %s", s, e, p)
	}
}

func TestReportsEscapeEveryStringFromARecording(t *testing.T) {
	for _, s := range []string{
		"<script>alert(1)</script>", `"><img src=x onerror=alert(1)>`, "</td><td>", "reading<script>",
		"a|b|c", "[click](javascript:alert(1))", "`code` **bold** _em_", "line\nbreak\r\n# heading", "&lt;already&gt;", "\\<b>",
	} {
		t.Run(s, func(t *testing.T) { checkNoForeignMarkup(t, s) })
	}
	// The category check: an unknown category is not shown at all.
	var b bytes.Buffer
	if err := WriteHTML(&b, hostile(t, "reading<script>")); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `reading&lt;script&gt;</td><td class="n">`) {
		t.Error("an unknown profile category reached the report")
	}
}

// FuzzReportWritersEmitNoForeignMarkup: no string in a recording makes
// the HTML or Markdown writer emit a tag, link, code span or table cell it
// did not emit for plain text.
func FuzzReportWritersEmitNoForeignMarkup(f *testing.F) {
	for _, s := range []string{"<b>", "a|b", "[x](y)", "`", "\n", "&amp;", "\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 200 {
			return
		}
		checkNoForeignMarkup(t, s)
	})
}

// TestHugeRatesGiveAFiniteReport: rates near the float64 limit in a
// recording (hostile, or a broken counter) would add up to +Inf; the JSON
// report refuses +Inf and the HTML would print "+InfGiB/s".
func TestHugeRatesGiveAFiniteReport(t *testing.T) {
	half := 0.5
	var frames []recording.Recorded
	for i := range 6 {
		f := sample.Frame{Time: generated.Add(time.Duration(i) * time.Second),
			Disks:  []sample.Disk{{Name: "vda", ReadBytesPerSec: 1.7e308, WriteBytesPerSec: 1.7e308, BusyPct: 1.7e308}, {Name: "vdb", ReadBytesPerSec: 1.7e308}},
			Loader: &sample.Loader{Source: "x", SamplesPerSec: 1.7e308, BytesPerSec: 1.7e308, WaitShare: &half}}
		frames = append(frames, recording.Recorded{Frame: f})
	}
	s := Build(recording.New(recording.Header{Host: "h"}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	var j, h bytes.Buffer
	if err := WriteJSON(&j, s); err != nil {
		t.Fatalf("JSON report: %v", err)
	}
	if err := WriteHTML(&h, s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h.String(), "Inf") || strings.Contains(h.String(), "NaN") {
		t.Error("the HTML report shows Inf or NaN")
	}
}

// TestReportsCarryNoControlBytes: a recording whose every outside string
// holds ESC, BEL and other C0 bytes makes Markdown and HTML reports with
// no control byte but newlines (a report is often cat-ed in a terminal),
// and a JSON report that escapes C0 (JSON is data: its DEL and C1 are the
// recording's, valid JSON, never a terminal escape of 7-bit terminals).
func TestReportsCarryNoControlBytes(t *testing.T) {
	s := hostile(t, "\x1b]0;PWN\x07\x1b[2J\x00\x08\x7f\u009b")
	for name, write := range map[string]func(io.Writer, *Summary) error{
		"html": WriteHTML, "json": WriteJSON,
		"md": func(w io.Writer, s *Summary) error { return WriteMarkdown(w, s, "") },
	} {
		var b bytes.Buffer
		if err := write(&b, s); err != nil {
			t.Fatal(err)
		}
		for i, r := range b.String() {
			c1 := r == 0x7f || r >= 0x80 && r < 0xa0
			if r != '\n' && (r < 0x20 || c1 && name != "json") {
				t.Fatalf("%s report: control byte %#x at %d: %q", name, r, i, b.String()[max(0, i-40):i+10])
			}
		}
		if !strings.Contains(b.String(), "PWN") {
			t.Errorf("%s report: the text itself is gone", name)
		}
	}
}
