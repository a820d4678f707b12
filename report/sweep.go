package report

import (
	"bytes"
	"fmt"
	"html"
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

// sweepHead is the page up to its figure. The page is written with
// fmt and html.EscapeString rather than html/template, whose text/template
// reaches reflect's MethodByName and makes the linker keep every exported
// method in the binary (docs/architecture.md, "What gpuwatch costs").
const sweepHead = `<!doctype html>
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
`

// WriteSweepHTML writes a sweep's page — a bar chart of samples/s per
// configuration and the table — to a new file at path (it refuses an
// existing one). Every string is escaped for HTML and made printable.
func WriteSweepHTML(path, title string, rows []SweepRow) error {
	top := 0.0
	for _, r := range rows {
		top = max(top, r.SamplesPerSec)
	}
	esc := func(s string) string { return html.EscapeString(sample.Printable(s)) }
	var b bytes.Buffer
	b.WriteString(sweepHead)
	fmt.Fprintf(&b, "<p>%s</p>\n<figure>\n<svg viewBox=\"0 0 640 %d\" width=\"100%%\" role=\"img\" aria-label=\"samples per second by configuration\">\n", esc(title), 20+26*len(rows))
	for i, r := range rows {
		w := 0.0
		if top > 0 {
			w = 380 * r.SamplesPerSec / top
		}
		y := 10 + 26*float64(i)
		class, mark := "bar", ""
		if r.Best {
			class, mark = class+" best", " ★ best"
		}
		if r.Cheapest {
			class, mark = class+" cheap", mark+" ~ cheapest"
		}
		rate := fmt.Sprintf("%.0f", r.SamplesPerSec)
		fmt.Fprintf(&b, "<rect class=\"%s\" x=\"40\" y=\"%g\" width=\"%g\" height=\"18\"><title>%s: %s samples/s</title></rect>\n", class, y, w, esc(r.Configuration), rate)
		fmt.Fprintf(&b, "<text x=\"36\" y=\"%g\" text-anchor=\"end\">%d</text><text x=\"%g\" y=\"%g\">%s%s</text>\n", y+14, i+1, 46+w, y+14, rate, mark)
	}
	b.WriteString("</svg>\n<figcaption>samples/s per configuration, numbered as in the table: ★ the most, ~ the fewest workers within 95 % of it</figcaption>\n</figure>\n")
	b.WriteString("<table><thead><tr><th>#</th><th>samples/s</th><th>wait</th><th>verdict</th><th>configuration</th></tr></thead><tbody>\n")
	for i, r := range rows {
		class := ""
		if r.Best {
			class = ` class="best"`
		}
		fmt.Fprintf(&b, "<tr%s><td>%d</td><td class=\"n\">%.0f</td><td class=\"n\">%.0f %%</td><td>%s</td><td><code title=\"%s\">%s</code></td></tr>\n",
			class, i+1, r.SamplesPerSec, 100*r.WaitShare, esc(r.Verdict), esc(r.Command), esc(r.Configuration))
	}
	b.WriteString("</tbody></table>\n</body></html>\n")
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
