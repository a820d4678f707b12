package report

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// WriteJSON writes the report as indented JSON (schema: docs/report.md).
func WriteJSON(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(s)
}

func pctStr(v float64) string { return fmt.Sprintf("%.0f %%", 100*v) }

func dur(sec float64) string { return sample.FormatDuration(sec) }

// esc escapes a string from a recording for HTML, its control bytes
// (ESC, BEL …) replaced first: a report is often cat-ed in a terminal.
func esc(s string) string { return html.EscapeString(sample.Printable(s)) }

// WriteMarkdown writes the report as Markdown tables; htmlName, when set,
// is linked as the report with charts.
func WriteMarkdown(w io.Writer, s *Summary, htmlName string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# gpuwatch report: %s\n\n", orDash(s.Dominant))
	if htmlName != "" {
		fmt.Fprintf(&b, "Charts: [%s](%s)\n\n", htmlName, htmlName)
	}
	mdRecording(&b, s.Recording)
	b.WriteString("## Verdicts\n\n| verdict | time | share |\n|---|---:|---:|\n")
	for _, v := range s.Verdicts {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", v.Kind, dur(v.Seconds), pctStr(v.Share))
	}
	b.WriteString("\n## Timeline\n\n| from | to | verdict |\n|---|---|---|\n")
	for _, seg := range s.Timeline {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", seg.Start.UTC().Format("15:04:05"), seg.End.UTC().Format("15:04:05"), seg.Kind)
	}
	b.WriteString("\n## Findings\n")
	for _, f := range s.Findings {
		mdFinding(&b, f)
	}
	mdLoader(&b, s.Loader)
	mdRanks(&b, s.Ranks)
	mdProfile(&b, s.Profile)
	_, err := io.WriteString(w, b.String())
	return err
}

// mdRecording is the Markdown report's paragraphs on the recording: where,
// when, on what, the job, and the reader's warnings.
func mdRecording(b *strings.Builder, r RecordingInfo) {
	fmt.Fprintf(b, "%s on **%s** (%d cores", r.Start.UTC().Format("2006-01-02 15:04:05 UTC"), md(orDash(r.Host)), r.Cores)
	if len(r.GPUs) > 0 {
		fmt.Fprintf(b, ", %d GPU: %s", len(r.GPUs), md(strings.Join(r.GPUs, ", ")))
	} else {
		b.WriteString(", no GPU")
	}
	fmt.Fprintf(b, "), %s, %d frames, gpuwatch %s.\n\n", dur(r.DurationSec), r.Frames, md(r.GpuwatchVersion))
	if r.Job != "" {
		fmt.Fprintf(b, "Job: %s.\n\n", md(r.Job))
	}
	for _, wmsg := range r.Warnings {
		fmt.Fprintf(b, "> warning: %s\n\n", md(wmsg))
	}
}

// mdFinding is one finding in Markdown: its heading, evidence, what else
// was seen, the computed changes, the advice and what was not seen.
func mdFinding(b *strings.Builder, f Finding) {
	fmt.Fprintf(b, "\n### %s — %s\n\n%s, confidence %.0f %%.\n\n", f.Kind, f.Title, f.Severity, 100*f.Confidence)
	for _, e := range f.Evidence {
		fmt.Fprintf(b, "- %s\n", md(e))
	}
	if len(f.Secondary) > 0 {
		b.WriteString("\nAlso seen:\n\n")
		for _, e := range f.Secondary {
			fmt.Fprintf(b, "- %s\n", md(e))
		}
	}
	if len(f.Changes) > 0 {
		b.WriteString("\n| knob | flag | from | to | why |\n|---|---|---|---|---|\n")
		for _, c := range f.Changes {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", md(c.Knob), md(c.Flag), md(c.From), md(c.To), md(c.Why))
		}
	}
	if len(f.Advice) > 0 {
		b.WriteString("\nWhat to change:\n\n")
		for _, a := range f.Advice {
			fmt.Fprintf(b, "1. %s\n", md(a))
		}
	}
	if len(f.Missing) > 0 {
		fmt.Fprintf(b, "\nNot seen: %s.\n", md(strings.Join(f.Missing, "; ")))
	}
}

// mdLoader is the Markdown report's loader section and its knobs; nothing
// without a loader.
func mdLoader(b *strings.Builder, l *LoaderInfo) {
	if l == nil {
		return
	}
	fmt.Fprintf(b, "\n## Loader\n\n%s: %d batches, mean wait share %s, mean %.0f samples/s.\n",
		md(l.Source), l.Batches, pctStr(l.MeanWaitShare), l.MeanSamplesPerSec)
	if c := ceilingSentence(l); c != "" {
		fmt.Fprintf(b, "\n%s\n", md(c)) // ceiling.go
	}
	mdStages(b, l)
	if len(l.Knobs) > 0 {
		b.WriteString("\n| knob | value |\n|---|---|\n")
		for _, k := range sortedKeys(l.Knobs) {
			fmt.Fprintf(b, "| %s | %s |\n", md(k), md(l.Knobs[k]))
		}
	}
}

// mdRanks is the Markdown report's per-rank table; nothing for a job of
// one rank.
func mdRanks(b *strings.Builder, ranks []RankInfo) {
	if len(ranks) == 0 {
		return
	}
	b.WriteString("\n## Ranks\n\n| rank | loader | mean wait | mean step | samples/s | named the straggler |\n|---:|---|---:|---:|---:|---:|\n")
	for _, r := range ranks {
		fmt.Fprintf(b, "| %d | %s | %s | %s | %.0f | %d frames |\n", r.Rank, md(r.URL), pctStr(r.MeanWaitShare), dur(r.MeanStepSec), r.MeanSamplesPerSec, r.StragglerFrames)
	}
}

// mdProfile is the Markdown report's loader CPU profile: category shares
// and the top functions; nothing without a profile.
func mdProfile(b *strings.Builder, p *sample.Profile) {
	if p == nil {
		return
	}
	b.WriteString("\n## Loader CPU profile\n\n| category | share |\n|---|---:|\n")
	for _, c := range p.Categories {
		fmt.Fprintf(b, "| %s | %s |\n", md(c.Name), pctStr(c.Share))
	}
	b.WriteString("\n| function | where | flat | cum |\n|---|---|---:|---:|\n")
	for _, f := range p.Top {
		fmt.Fprintf(b, "| %s | %s | %.1f %% | %.1f %% |\n", md(f.Name), md(f.Where()), 100*f.Flat, 100*f.Cum)
	}
}

// htmlRecording is the report's paragraph on the recording: where, when,
// what it ran, the job, and the reader's warnings.
func htmlRecording(b *strings.Builder, r RecordingInfo) {
	gpus := "no GPU"
	if len(r.GPUs) > 0 {
		gpus = fmt.Sprintf("%d GPU: %s", len(r.GPUs), esc(strings.Join(r.GPUs, ", ")))
	}
	fmt.Fprintf(b, "<p>%s on <b>%s</b> (%d cores, %s, %s RAM) — %s, %d frames, gpuwatch %s.<br><code>%s</code></p>",
		r.Start.UTC().Format("2006-01-02 15:04:05 UTC"), esc(orDash(r.Host)), r.Cores, gpus, sample.FormatBytes(float64(r.MemTotalBytes)),
		dur(r.DurationSec), r.Frames, esc(r.GpuwatchVersion), esc(strings.Join(r.Command, " ")))
	if r.Job != "" {
		fmt.Fprintf(b, "<p>Job: %s.</p>", esc(r.Job))
	}
	for _, wmsg := range r.Warnings {
		fmt.Fprintf(b, "<p><b>warning:</b> %s</p>", esc(wmsg))
	}
}

// md escapes a string from a recording for Markdown: no HTML (< > & as
// entities), no emphasis, code, link or table syntax (a backslash before
// each such character), no line break, no control byte (U+FFFD, as in the
// live view). It renders as the text it was.
func md(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\n', '\r':
			b.WriteByte(' ')
		case '\\', '`', '*', '_', '[', ']', '|', '~', '#', '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteString(sample.Printable(string(r)))
		}
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// toneColour is each tone's colour in the HTML report: a verdict is
// coloured by its situation's tone (diagnose.Tone), never by a colour of
// its own kept here.
var toneColour = map[diagnose.Tone]string{
	diagnose.ToneGood: "#2e9e44", diagnose.ToneWarn: "#e67e00", diagnose.ToneBad: "#d62f2f", diagnose.ToneNeutral: "#888",
}

// kindColour is the colour of the verdict whose identifier is id; grey
// for one this build does not know (a newer recording).
func kindColour(id string) string {
	var k diagnose.Kind
	if k.UnmarshalText([]byte(id)) != nil {
		return toneColour[diagnose.ToneNeutral]
	}
	return toneColour[k.Tone()]
}

// WriteHTML writes the report as one self-contained HTML file: inline CSS
// and SVG, no script, no network.
func WriteHTML(w io.Writer, s *Summary) error {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">`)
	fmt.Fprintf(&b, "<title>gpuwatch report: %s</title>", esc(orDash(s.Dominant)))
	b.WriteString(`<style>body{font:15px/1.45 system-ui,sans-serif;max-width:980px;margin:auto;padding:12px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}table{border-collapse:collapse;margin:.5em 0}
td,th{padding:2px 10px;border-bottom:1px solid #eee;text-align:left}td.n{text-align:right}.k{font-weight:600}
svg{width:100%;height:auto;background:#fafafa;border:1px solid #eee}.legend span{margin-right:14px}
code{font-size:.9em}@media print{body{max-width:none}h2{break-after:avoid}svg{break-inside:avoid}}</style></head><body>`)
	fmt.Fprintf(&b, `<h1>gpuwatch report: <span class="k" style="color:%s">%s</span></h1>`, kindColour(s.Dominant), esc(orDash(s.Dominant)))
	htmlRecording(&b, s.Recording)
	b.WriteString(`<h2>Verdicts</h2>`)
	b.WriteString(timelineSVG(s))
	b.WriteString(`<table><tr><th>verdict</th><th>time</th><th>share</th></tr>`)
	for _, v := range s.Verdicts {
		fmt.Fprintf(&b, `<tr><td class="k" style="color:%s">%s</td><td class="n">%s</td><td class="n">%s</td></tr>`, kindColour(v.Kind), v.Kind, dur(v.Seconds), pctStr(v.Share))
	}
	b.WriteString(`</table><h2>Findings</h2>`)
	for _, f := range s.Findings {
		htmlFinding(&b, f)
	}
	htmlMachineCharts(&b, s.Series)
	htmlLoader(&b, s.Loader, s.Series)
	htmlRanks(&b, s)
	htmlProfile(&b, s.Profile)
	fmt.Fprintf(&b, "<p style=\"color:#888\">Generated %s by gpuwatch.</p></body></html>\n", s.Generated.UTC().Format(time.RFC3339))
	_, err := io.WriteString(w, b.String())
	return err
}

// htmlFinding is one finding in HTML, in its kind's colour: its heading,
// evidence, what else was seen, the computed changes and the advice.
func htmlFinding(b *strings.Builder, f Finding) {
	fmt.Fprintf(b, `<h3 style="color:%s">%s — %s</h3><p>%s, confidence %.0f %%.</p><ul>`, kindColour(f.Kind), f.Kind, esc(f.Title), f.Severity, 100*f.Confidence)
	for _, e := range f.Evidence {
		fmt.Fprintf(b, "<li>%s</li>", esc(e))
	}
	b.WriteString("</ul>")
	if len(f.Secondary) > 0 {
		b.WriteString("<p>Also seen:</p><ul>")
		for _, e := range f.Secondary {
			fmt.Fprintf(b, "<li>%s</li>", esc(e))
		}
		b.WriteString("</ul>")
	}
	if len(f.Changes) > 0 {
		b.WriteString("<table><tr><th>knob</th><th>flag</th><th>from</th><th>to</th><th>why</th></tr>")
		for _, c := range f.Changes {
			fmt.Fprintf(b, "<tr><td>%s</td><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td></tr>", esc(c.Knob), esc(c.Flag), esc(c.From), esc(c.To), esc(c.Why))
		}
		b.WriteString("</table>")
	}
	if len(f.Advice) > 0 {
		b.WriteString("<p>What to change:</p><ol>")
		for _, a := range f.Advice {
			fmt.Fprintf(b, "<li>%s</li>", esc(a))
		}
		b.WriteString("</ol>")
	}
}

// htmlMachineCharts are the machine's charts: the accelerator (GPU
// utilization with its band, or the virtual accelerator), CPU per core,
// disks and pressure stall.
func htmlMachineCharts(b *strings.Builder, ser Series) {
	accelTitle := "Accelerator (virtual: loader step time / wall time)"
	if ser.AccelReal {
		accelTitle = "GPU utilization, mean over GPUs, with the p5–p95 band of each second"
	}
	b.WriteString("<h2>" + accelTitle + "</h2>")
	b.WriteString(lineChart("chart-accel", ser.T, []line{{ser.Accel, "#2e9e44", "busy %"}}, &band{ser.AccelP5, ser.AccelP95}, 100, "%"))
	b.WriteString(`<h2>CPU per core over time</h2>`)
	b.WriteString(heatmap("chart-cores", ser))
	b.WriteString(`<h2>Disks</h2>`)
	b.WriteString(lineChart("chart-disk", ser.T, []line{{ser.DiskRead, "#2f7fd6", "read B/s"}, {ser.DiskWrite, "#e67e00", "write B/s"}}, nil, 0, "B/s"))
	b.WriteString(lineChart("chart-disk-busy", ser.T, []line{{ser.DiskBusy, "#d62f2f", "busiest device %"}}, nil, 100, "%"))
	b.WriteString(`<h2>Pressure stall (some, % of time)</h2>`)
	b.WriteString(lineChart("chart-psi", ser.T, []line{{ser.PSICPU, "#d62f2f", "cpu"}, {ser.PSIIO, "#2f7fd6", "io"}, {ser.PSIMem, "#9b4dca", "memory"}}, nil, 0, "%"))
}

// htmlLoader is the loader section: wait against step per batch, the wait
// histogram and the knobs; nothing without a loader.
func htmlLoader(b *strings.Builder, l *LoaderInfo, ser Series) {
	if l == nil {
		return
	}
	fmt.Fprintf(b, `<h2>Loader: wait vs step per batch</h2><p>%s — %d batches, mean wait share %s, %.0f samples/s.</p>`,
		esc(l.Source), l.Batches, pctStr(l.MeanWaitShare), l.MeanSamplesPerSec)
	b.WriteString(lineChart("chart-train", ser.T, []line{{ser.WaitMs, "#d62f2f", "wait ms"}, {ser.StepMs, "#2e9e44", "step ms"}}, nil, 0, "ms"))
	b.WriteString(histogram("chart-wait-hist", l.WaitHistMs))
	htmlThroughput(b, l, ser) // ceiling.go
	htmlStages(b, l)
	if len(l.Knobs) > 0 {
		b.WriteString("<table><tr><th>knob</th><th>value</th></tr>")
		for _, k := range sortedKeys(l.Knobs) {
			fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td></tr>", esc(k), esc(l.Knobs[k]))
		}
		b.WriteString("</table>")
	}
}

// htmlProfile is the loader's CPU profile: category shares and the top
// functions; nothing without a profile.
func htmlProfile(b *strings.Builder, p *sample.Profile) {
	if p == nil {
		return
	}
	b.WriteString(`<h2>Loader CPU profile</h2><table id="profile"><tr><th>category</th><th>share</th></tr>`)
	for _, c := range p.Categories {
		fmt.Fprintf(b, `<tr><td>%s</td><td class="n">%s</td></tr>`, esc(c.Name), pctStr(c.Share))
	}
	b.WriteString(`</table><table><tr><th>function</th><th>where</th><th>flat</th><th>cum</th></tr>`)
	for _, f := range p.Top {
		fmt.Fprintf(b, `<tr><td><code>%s</code></td><td title="%s"><code>%s</code></td><td class="n">%.1f %%</td><td class="n">%.1f %%</td></tr>`,
			esc(f.Name), esc(f.File), esc(f.Where()), 100*f.Flat, 100*f.Cum)
	}
	b.WriteString("</table>")
}

// rankColours tell ranks apart on the per-rank charts (cycled).
var rankColours = []string{"#2f7fd6", "#d62f2f", "#2e9e44", "#e67e00", "#9b4dca", "#17a2b8", "#8c564b", "#e377c2"}

// htmlRanks is the per-rank section: a table and the wait and step charts,
// one line per rank.
func htmlRanks(b *strings.Builder, s *Summary) {
	if len(s.Ranks) == 0 {
		return
	}
	b.WriteString(`<h2>Ranks: wait and step per rank</h2><table id="ranks"><tr><th>rank</th><th>loader</th><th>mean wait</th><th>mean step</th><th>samples/s</th><th>named the straggler</th></tr>`)
	var waits, steps []line
	for i, r := range s.Ranks {
		fmt.Fprintf(b, `<tr><td class="n">%d</td><td>%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%.0f</td><td class="n">%d frames</td></tr>`,
			r.Rank, esc(r.URL), pctStr(r.MeanWaitShare), dur(r.MeanStepSec), r.MeanSamplesPerSec, r.StragglerFrames)
		c := rankColours[i%len(rankColours)]
		name := fmt.Sprintf("rank %d", r.Rank)
		if i < len(s.Series.RankWait) {
			waits = append(waits, line{s.Series.RankWait[i], c, name})
			steps = append(steps, line{s.Series.RankStepMs[i], c, name})
		}
	}
	b.WriteString("</table><p>Wait for the next batch, % of each rank's time:</p>")
	b.WriteString(lineChart("chart-rank-wait", s.Series.T, waits, nil, 100, "%"))
	b.WriteString("<p>Mean step, ms (in a synchronous job it includes the all-reduce, where fast ranks wait for the slow one):</p>")
	b.WriteString(lineChart("chart-rank-step", s.Series.T, steps, nil, 0, "ms"))
}

const chartW, chartH, padL, padB = 900.0, 180.0, 56.0, 22.0

type line struct {
	v     []*float64
	color string
	name  string
}

type band struct{ lo, hi []*float64 }

// lineChart draws lines over time; maxY 0 scales to the data.
func lineChart(id string, t []float64, lines []line, bd *band, maxY float64, unit string) string {
	if maxY == 0 {
		for _, l := range lines {
			for _, v := range l.v {
				if v != nil {
					maxY = max(maxY, *v)
				}
			}
		}
		if maxY == 0 {
			maxY = 1
		}
	}
	tMax := 1.0
	if len(t) > 0 {
		tMax = t[len(t)-1] + t[0]
	}
	x := func(ti float64) float64 { return padL + ti/tMax*(chartW-padL-8) }
	y := func(v float64) float64 { return chartH - padB - min(v, maxY)/maxY*(chartH-padB-8) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" viewBox="0 0 %.0f %.0f" role="img">`, id, chartW, chartH)
	fmt.Fprintf(&b, `<text x="4" y="14" font-size="11">%s %s</text><text x="4" y="%.0f" font-size="11">0</text>`, axis(maxY), unit, chartH-padB)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%s</text>`, chartW-8, chartH-6, dur(tMax))
	if bd != nil {
		var pts []string
		for i := range t {
			if i < len(bd.hi) && bd.hi[i] != nil {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(t[i]), y(*bd.hi[i])))
			}
		}
		for i := len(t) - 1; i >= 0; i-- {
			if i < len(bd.lo) && bd.lo[i] != nil {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(t[i]), y(*bd.lo[i])))
			}
		}
		if len(pts) > 2 {
			fmt.Fprintf(&b, `<polygon class="band" points="%s" fill="#2e9e44" fill-opacity="0.18"/>`, strings.Join(pts, " "))
		}
	}
	for _, l := range lines {
		var pts []string
		for i := range t {
			if i < len(l.v) && l.v[i] != nil {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(t[i]), y(*l.v[i])))
			}
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`, strings.Join(pts, " "), l.color)
		}
	}
	b.WriteString(`</svg><div class="legend">`)
	for _, l := range lines {
		fmt.Fprintf(&b, `<span style="color:%s">━ %s</span>`, l.color, l.name)
	}
	if bd != nil && hasData(bd.lo) {
		b.WriteString(`<span style="color:#2e9e44">▒ p5–p95</span>`)
	}
	b.WriteString("</div>")
	return b.String()
}

func axis(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.1fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// heatmap draws per-core (or per core group) busy % over time.
func heatmap(id string, s Series) string {
	rows := len(s.Cores)
	if rows == 0 || len(s.T) == 0 {
		return "<p>no CPU data</p>"
	}
	cell := (chartW - padL - 8) / float64(len(s.T))
	rowH := math.Max(3, math.Min(14, 220/float64(rows)))
	h := rowH*float64(rows) + 16
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" viewBox="0 0 %.0f %.0f" role="img">`, id, chartW, h)
	label := "core"
	if s.CoreGroup > 1 {
		label = fmt.Sprintf("%d cores/row", s.CoreGroup)
	}
	fmt.Fprintf(&b, `<text x="4" y="12" font-size="10">%s</text>`, label)
	for r, vals := range s.Cores {
		for i, v := range vals {
			if v == nil {
				continue
			}
			a := math.Min(1, math.Max(0, *v/100))
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.2f" height="%.1f" fill="#d62f2f" fill-opacity="%.2f"/>`,
				padL+float64(i)*cell, 14+float64(r)*rowH, cell+0.05, rowH, 0.05+0.95*a)
		}
	}
	b.WriteString(`</svg><div class="legend"><span>darker = busier (0–100 %)</span></div>`)
	return b.String()
}

// timelineSVG is the verdicts over time as coloured bands.
func timelineSVG(s *Summary) string {
	if len(s.Timeline) == 0 {
		return ""
	}
	start, total := s.Recording.Start, math.Max(s.Recording.DurationSec, 1)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="chart-verdicts" viewBox="0 0 %.0f 40" role="img">`, chartW)
	for _, seg := range s.Timeline {
		x0 := padL + seg.Start.Sub(start).Seconds()/total*(chartW-padL-8)
		wd := math.Max(0.5, seg.Seconds/total*(chartW-padL-8))
		fmt.Fprintf(&b, `<rect x="%.1f" y="6" width="%.1f" height="22" fill="%s"><title>%s %s</title></rect>`, x0, wd, kindColour(seg.Kind), seg.Kind, dur(seg.Seconds))
	}
	b.WriteString(`<text x="4" y="22" font-size="11">verdict</text></svg><div class="legend">`)
	seen := map[string]bool{}
	for _, seg := range s.Timeline {
		if !seen[seg.Kind] {
			seen[seg.Kind] = true
			fmt.Fprintf(&b, `<span style="color:%s">■ %s</span>`, kindColour(seg.Kind), seg.Kind)
		}
	}
	b.WriteString("</div>")
	return b.String()
}

func histogram(id string, bins []HistBin) string {
	most := 0
	for _, bn := range bins {
		most = max(most, bn.Count)
	}
	if most == 0 {
		return ""
	}
	bw := (chartW - padL - 8) / float64(len(bins))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" viewBox="0 0 %.0f %.0f" role="img"><text x="4" y="14" font-size="11">batches</text>`, id, chartW, chartH)
	for i, bn := range bins {
		hgt := float64(bn.Count) / float64(most) * (chartH - padB - 20)
		x := padL + float64(i)*bw
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#d62f2f"/>`, x+2, chartH-padB-hgt, bw-4, hgt)
		lbl := fmt.Sprintf("≤%gms", bn.UpperMs)
		if bn.UpperMs < 0 {
			lbl = "more"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" font-size="10" text-anchor="middle">%s</text>`, x+bw/2, chartH-6, lbl)
	}
	b.WriteString(`</svg><div class="legend"><span>wait per batch: how many batches waited up to each bound</span></div>`)
	return b.String()
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
		return err
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

func hasData(v []*float64) bool {
	for _, x := range v {
		if x != nil {
			return true
		}
	}
	return false
}

// mdStages writes the loader's stage table and what a batch holds, in
// Markdown.
func mdStages(b *strings.Builder, l *LoaderInfo) {
	if rows := stageRows(l.Stages); len(rows) > 0 {
		b.WriteString("\n| stage (per batch) | time | share of a worker's time |\n|---|---:|---:|\n")
		for _, r := range rows {
			fmt.Fprintf(b, "| %s | %s | %s |\n", r[0], r[1], r[2])
		}
	}
	if p := l.Payload; p != nil {
		fmt.Fprintf(b, "\n%s\n", md(payloadText(p)))
	}
}

// htmlStages writes the loader's stage table and what a batch holds, in
// HTML.
func htmlStages(b *strings.Builder, l *LoaderInfo) {
	if rows := stageRows(l.Stages); len(rows) > 0 {
		b.WriteString(`<table id="stages"><tr><th>stage (per batch)</th><th>time</th><th>share of a worker's time</th></tr>`)
		for _, r := range rows {
			fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td>%s</td></tr>", esc(r[0]), esc(r[1]), esc(r[2]))
		}
		b.WriteString("</table>")
	}
	if p := l.Payload; p != nil {
		fmt.Fprintf(b, "<p>%s</p>", esc(payloadText(p)))
	}
}

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
