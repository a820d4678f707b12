package report

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"

	"github.com/gpuwatch/gpuwatch/sample"
)

// SweepRow is one configuration of a sweep, as the sweep's HTML page
// shows it.
type SweepRow struct {
	Configuration string // the knobs set ("num_workers=4")
	Command       string // the command line that ran it

	SamplesPerSec  float64
	WaitShare      float64
	Verdict        string
	Best, Cheapest bool
}

var sweepPage = template.Must(template.New("sweep").Funcs(template.FuncMap{
	"pct": func(f float64) string { return fmt.Sprintf("%.0f %%", 100*f) },
	"num": func(f float64) string { return fmt.Sprintf("%.0f", f) },
	"inc": func(i int) int { return i + 1 },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>gpuwatch sweep</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:60em;padding:0 1em;color:#222}
table{border-collapse:collapse;width:100%}td,th{padding:.3em .6em;border-bottom:1px solid #ddd;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}code{font-size:90%;word-break:break-all}
.best{font-weight:600}.bar{fill:#4a7fd0}.bar.best{fill:#2a9d55}.bar.cheap{stroke:#222;stroke-width:1.5}
svg text{font:12px system-ui,sans-serif}
</style></head><body>
<h1>gpuwatch sweep</h1>
<p>{{.Title}}</p>
<figure>
<svg viewBox="0 0 640 {{.Height}}" width="100%" role="img" aria-label="samples per second by configuration">
{{range .Bars}}<rect class="bar{{if .Best}} best{{end}}{{if .Cheapest}} cheap{{end}}" x="40" y="{{.Y}}" width="{{.W}}" height="18"><title>{{.Label}}: {{num .Rate}} samples/s</title></rect>
<text x="36" y="{{.TextY}}" text-anchor="end">{{.N}}</text><text x="{{.EndX}}" y="{{.TextY}}">{{num .Rate}}{{if .Best}} ★ best{{end}}{{if .Cheapest}} ~ cheapest{{end}}</text>
{{end}}</svg>
<figcaption>samples/s per configuration, numbered as in the table: ★ the most, ~ the fewest workers within 95 % of it</figcaption>
</figure>
<table><thead><tr><th>#</th><th>samples/s</th><th>wait</th><th>verdict</th><th>configuration</th></tr></thead><tbody>
{{range $i, $r := .Rows}}<tr{{if $r.Best}} class="best"{{end}}><td>{{inc $i}}</td><td class="n">{{num $r.SamplesPerSec}}</td><td class="n">{{pct $r.WaitShare}}</td><td>{{$r.Verdict}}</td><td><code title="{{$r.Command}}">{{$r.Configuration}}</code></td></tr>
{{end}}</tbody></table>
</body></html>
`))

// WriteSweepHTML writes a sweep's page — a bar chart of samples/s per
// configuration and the table — to a new file at path (it refuses an
// existing one). Every string is escaped for HTML and made printable.
func WriteSweepHTML(path, title string, rows []SweepRow) error {
	type bar struct {
		N                 int
		Y, W, TextY, EndX float64
		Rate              float64
		Label             string
		Best, Cheapest    bool
	}
	top := 0.0
	for _, r := range rows {
		top = max(top, r.SamplesPerSec)
	}
	bars := make([]bar, len(rows))
	for i, r := range rows {
		w := 0.0
		if top > 0 {
			w = 380 * r.SamplesPerSec / top
		}
		y := 10 + 26*float64(i)
		bars[i] = bar{N: i + 1, Y: y, W: w, TextY: y + 14, EndX: 46 + w, Rate: r.SamplesPerSec, Label: sample.Printable(r.Configuration), Best: r.Best, Cheapest: r.Cheapest}
		rows[i].Configuration = sample.Printable(r.Configuration)
		rows[i].Command = sample.Printable(r.Command)
		rows[i].Verdict = sample.Printable(r.Verdict)
	}
	var b bytes.Buffer
	if err := sweepPage.Execute(&b, map[string]any{"Title": sample.Printable(title), "Rows": rows, "Bars": bars, "Height": 20 + 26*len(rows)}); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Clean(path), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	_, werr := f.Write(b.Bytes())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}
