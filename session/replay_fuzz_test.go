package session

import (
	"bytes"
	"io"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/internal/fixture"
	"github.com/gpuwatch/gpuwatch/lines"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/tui"
)

// FuzzReplayRecordedFrames feeds a recording of a fuzzed frame (three
// times) to everything that reads recordings: replay's
// lines (text and JSON), the dashboard at three sizes (ranks panel and
// details included) and every report format. None may panic, whatever the
// frame holds: a rank's wait share of 1.5 and a wait of −5 ms crashed the
// dashboard before frames were checked on reading. Memory is bounded by
// the reader (recording's tests and fuzz target); here what is drawn and
// written must stay within a few MiB.
func FuzzReplayRecordedFrames(f *testing.F) {
	var b bytes.Buffer
	gf := fixture.GPUFrame()
	gf.Ranks = []sample.Rank{{Rank: 0, URL: "http://127.0.0.1:6061", Connected: true}, {Rank: 1, URL: "http://127.0.0.1:6062"}}
	lines.NewJSONWriter(&b).WriteFrame(gf, nil)
	f.Add(b.String())
	f.Add(`{"type":"frame","time":"2026-11-21T09:00:00Z","ranks":[{"rank":0,"url":"u","connected":true,"wait_share":1.5,"step_sec":-1},` +
		`{"rank":0,"url":"v","connected":true,"wait_share":0.2}],"loader":{"source":"x","wait_mean_ms":-5,"workers":-3,` +
		`"timeline":[{"wait_ms":-5,"step_ms":1e300}]}}`)
	f.Add(`{"type":"frame","time":"2026-11-21T09:00:00Z","cpu":{"busy_pct":1e308,"cores":[{"busy_pct":-1}]},"gpus":[{"util_pct":500,"util_samples":{"p5":-3,"p95":900}}],` +
		`"profile":{"categories":[{"name":"reading","share":7}],"top":[{"name":"f","flat":-1,"cum":2}]}}`)
	f.Fuzz(func(t *testing.T, frame string) {
		var in bytes.Buffer
		in.WriteString(`{"type":"header","format":"gpuwatch-recording","version":1,"cores":2}` + "\n")
		for range 3 {
			in.WriteString(frame + "\n")
		}
		rec, err := recording.Read(bytes.NewReader(in.Bytes()), int64(in.Len()))
		if err != nil || rec.Len() == 0 {
			return
		}
		th := diagnose.DefaultThresholds()
		for _, asJSON := range []bool{false, true} {
			if err := ReplayLines(rec, th, asJSON, io.Discard); err != nil {
				t.Fatal(err)
			}
		}
		s := report.Build(rec, "fuzz.jsonl", th, time.Unix(0, 0))
		markdown := func(w io.Writer, s *report.Summary) error { return report.WriteMarkdown(w, s, "") }
		for _, write := range []func(io.Writer, *report.Summary) error{report.WriteHTML, markdown, report.WriteJSON} {
			var out bytes.Buffer
			if err := write(&out, s); err != nil {
				t.Fatal(err)
			}
			if out.Len() > 8<<20 {
				t.Fatalf("a report of 6 frames is %d MiB", out.Len()>>20)
			}
		}
		m := tui.New(tui.Options{Replay: &tui.Replay{Pause: func(bool) {}, Seek: func(time.Duration) {}, Speed: func(float64) float64 { return 1 }}})
		d := diagnose.NewDiagnoser(th)
		rec.Each(func(i int, r *recording.Recorded) error {
			m.Observe(tui.Feed{Frame: &r.Frame, Verdict: d.Observe(&r.Frame), Position: &tui.Position{Frame: i + 1, Frames: rec.Len()}})
			return nil
		})
		for _, size := range [][2]int{{80, 24}, {130, 45}, {250, 70}} {
			m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			for _, key := range []string{"", "tab", "tab", "enter", "d"} { // loader panel zoomed, then the details
				if key != "" {
					m.Update(keyPress(key))
				}
				if out := m.Render(); len(out) > 4<<20 {
					t.Fatalf("a %dx%d view is %d MiB", size[0], size[1], len(out)>>20)
				}
			}
			m.Update(keyPress("esc"))
			m.Update(keyPress("esc"))
		}
	})
}

// keyPress is the key named as the dashboard's help names it.
func keyPress(name string) tea.KeyPressMsg {
	switch name {
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	}
	r := []rune(name)[0]
	return tea.KeyPressMsg{Code: r, Text: name}
}
