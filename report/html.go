package report

import (
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// esc escapes a string from a recording for HTML, its control bytes
// (ESC, BEL …) replaced first: a report is often cat-ed in a terminal.
func esc(s string) string { return html.EscapeString(sample.Printable(s)) }

// htmlRecording is the report's paragraph on the recording: where, when,
// what it ran, the job, and the reader's warnings.
func htmlRecording(b *strings.Builder, r RecordingInfo) {
	fmt.Fprintf(b, "<p>%s on <b>%s</b> (%s, %s, %s) — %s, %d frames, gpuwatch %s.<br><code>%s</code></p>",
		r.Start.UTC().Format("2006-01-02 15:04:05 UTC"), esc(orDash(r.Host)), coresWords(r.Cores), esc(gpusWords(r.GPUs)), ramWords(r.MemTotalBytes),
		dur(r.DurationSec), r.Frames, esc(versionWords(r.GpuwatchVersion)), esc(strings.Join(r.Command, " ")))
	if r.Job != "" {
		fmt.Fprintf(b, "<p>Job: %s.</p>", esc(r.Job))
	}
	if r.Self != nil {
		fmt.Fprintf(b, "<p>%s.</p>", esc(r.Self.Line()))
	}
	if r.Hook != nil {
		fmt.Fprintf(b, "<p>%s.</p>", esc(r.Hook.Line()))
	}
	for _, wmsg := range r.Warnings {
		fmt.Fprintf(b, "<p><b>warning:</b> %s</p>", esc(wmsg))
	}
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
	// On a phone a wide table scrolls inside itself and a long path
	// breaks, rather than widening the page (a review: 754 px at 500).
	b.WriteString(`<style>body{font:15px/1.45 system-ui,sans-serif;max-width:980px;margin:auto;padding:12px;color:#222;overflow-wrap:anywhere}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}table{border-collapse:collapse;margin:.5em 0;display:block;overflow-x:auto;max-width:100%}
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
	htmlGPUs(&b, s.GPUs) // gpu.go
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
	fmt.Fprintf(b, `<h3 style="color:%s">%s — %s</h3><p>%s, confidence %.0f %%; %s.</p><ul>`, kindColour(f.Kind), f.Kind, esc(f.Title), f.Severity, 100*f.Confidence, esc(f.readAt()))
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
			fmt.Fprintf(b, "<tr><td>%s</td><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td></tr>", esc(c.Knob), esc(c.Flag), esc(c.From), esc(changeTo(c)), esc(c.Why))
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
	b.WriteString(markedChart("chart-accel", ser.T, []line{{ser.Accel, "#2e9e44", "busy %"}}, &band{ser.AccelP5, ser.AccelP95}, yAxis{100, "%"}, ser.CeilingReplay))
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
	fmt.Fprintf(b, `<h2>Loader: wait vs step per batch</h2><p>%s — %d batches, mean wait share %s, %s.</p>`,
		esc(l.Source), l.Batches, pctStr(l.MeanWaitShare), esc(l.rateWords()))
	b.WriteString(markedChart("chart-train", ser.T, []line{{ser.WaitMs, "#d62f2f", "wait ms"}, {ser.StepMs, "#2e9e44", "step ms"}}, nil, yAxis{0, "ms"}, ser.CeilingReplay))
	b.WriteString(histogram("chart-wait-hist", l.WaitHistMs))
	if l.WaitHistWhy != "" {
		fmt.Fprintf(b, `<p style="color:#888">No histogram of the waits: %s.</p>`, esc(l.WaitHistWhy))
	}
	htmlThroughput(b, l, ser) // ceiling.go
	htmlStages(b, l)
	if len(l.Knobs) > 0 {
		b.WriteString("<table><tr><th>knob</th><th>value</th></tr>")
		for _, k := range sortedKeys(l.Knobs) {
			fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td></tr>", esc(k), esc(l.Knobs[k]))
		}
		b.WriteString("</table>")
	}
	if l.SettingsLine != "" {
		fmt.Fprintf(b, "<p>The job: %s.</p>", esc(l.SettingsLine))
	}
	if l.StepProfileLine != "" {
		fmt.Fprintf(b, "<p>%s.</p>", esc(l.StepProfileLine))
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
// one line per rank; loaders of separate jobs (world size 1) are named
// by their process (ranksTitle).
func htmlRanks(b *strings.Builder, s *Summary) {
	if len(s.Ranks) == 0 {
		return
	}
	title, own := ranksTitle(s.Ranks)
	if !own {
		b.WriteString(`<h2>Ranks: wait and step per rank</h2><table id="ranks"><tr><th>rank</th>`)
	} else {
		fmt.Fprintf(b, `<h2>%s: wait and step per loader</h2><table id="ranks"><tr><th>job</th>`, esc(title))
	}
	b.WriteString(`<th>loader</th><th>mean wait</th><th>mean step</th><th>samples/s</th><th>named the straggler</th></tr>`)
	var waits, steps []line
	for i, r := range s.Ranks {
		who := strconv.Itoa(r.Rank)
		if own {
			who = esc(rankName(r))
		}
		fmt.Fprintf(b, `<tr><td class="n">%s</td><td>%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%d frames</td></tr>`,
			who, esc(r.URL), pctStr(r.MeanWaitShare), dur(r.MeanStepSec), optRate(r.MeanSamplesPerSec), r.StragglerFrames)
		c := rankColours[i%len(rankColours)]
		name := esc(rankName(r)) // lineChart writes names as they are
		if i < len(s.Series.RankWait) {
			waits = append(waits, line{s.Series.RankWait[i], c, name})
			steps = append(steps, line{s.Series.RankStepMs[i], c, name})
		}
	}
	if own {
		b.WriteString("</table><p>Wait for the next batch, % of each loader's time:</p>")
	} else {
		b.WriteString("</table><p>Wait for the next batch, % of each rank's time:</p>")
	}
	b.WriteString(lineChart("chart-rank-wait", s.Series.T, waits, nil, 100, "%"))
	if own {
		b.WriteString("<p>Mean step, ms (separate jobs wait for no all-reduce between them):</p>")
	} else {
		b.WriteString("<p>Mean step, ms (in a synchronous job it includes the all-reduce, where fast ranks wait for the slow one):</p>")
	}
	b.WriteString(lineChart("chart-rank-step", s.Series.T, steps, nil, 0, "ms"))
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

// changeTo is a change's target as the reports' tables give it, with the
// code change it needs where it needs one ("true (with the DataLoader
// built once, before the epoch loop)"): a knob already set that keeps
// nothing read "true → true" there (a review).
func changeTo(c diagnose.Change) string {
	if c.With == "" {
		return c.To
	}
	return c.To + " (with " + c.With + ")"
}
