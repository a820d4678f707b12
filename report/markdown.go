package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

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
	mdGPUs(&b, s.GPUs) // gpu.go
	mdLoader(&b, s.Loader)
	mdRanks(&b, s.Ranks)
	mdProfile(&b, s.Profile)
	_, err := io.WriteString(w, b.String())
	return err
}

// mdRecording is the Markdown report's paragraphs on the recording: where,
// when, on what, the job, and the reader's warnings.
func mdRecording(b *strings.Builder, r RecordingInfo) {
	fmt.Fprintf(b, "%s on **%s** (%s, %s), %s, %d frames, gpuwatch %s.\n\n", r.Start.UTC().Format("2006-01-02 15:04:05 UTC"), md(orDash(r.Host)),
		coresWords(r.Cores), md(gpusWords(r.GPUs)), dur(r.DurationSec), r.Frames, md(versionWords(r.GpuwatchVersion)))
	if r.Job != "" {
		fmt.Fprintf(b, "Job: %s.\n\n", md(r.Job))
	}
	if r.Self != nil {
		fmt.Fprintf(b, "%s.\n\n", md(r.Self.Line()))
	}
	if r.Hook != nil {
		fmt.Fprintf(b, "%s.\n\n", md(r.Hook.Line()))
	}
	for _, wmsg := range r.Warnings {
		fmt.Fprintf(b, "> warning: %s\n\n", md(wmsg))
	}
}

// mdFinding is one finding in Markdown: its heading, evidence, what else
// was seen, the computed changes, the advice and what was not seen.
func mdFinding(b *strings.Builder, f Finding) {
	fmt.Fprintf(b, "\n### %s — %s\n\n%s, confidence %.0f %%; %s.\n\n", f.Kind, f.Title, f.Severity, 100*f.Confidence, f.readAt())
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
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", md(c.Knob), md(c.Flag), md(c.From), md(changeTo(c)), md(c.Why))
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
	fmt.Fprintf(b, "\n## Loader\n\n%s: %d batches, mean wait share %s, %s.\n",
		md(l.Source), l.Batches, pctStr(l.MeanWaitShare), md(l.rateWords()))
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
	if l.SettingsLine != "" {
		fmt.Fprintf(b, "\nThe job: %s.\n", md(l.SettingsLine))
	}
	if l.StepProfileLine != "" {
		fmt.Fprintf(b, "\n%s.\n", md(l.StepProfileLine))
	}
}

// mdRanks is the Markdown report's per-rank table; nothing for a job of
// one rank. Loaders of separate jobs (world size 1, found side by side)
// are named by their process, not as ranks (ranksTitle).
func mdRanks(b *strings.Builder, ranks []RankInfo) {
	if len(ranks) == 0 {
		return
	}
	title, own := ranksTitle(ranks)
	if !own {
		b.WriteString("\n## Ranks\n\n| rank | loader | mean wait | mean step | samples/s | named the straggler |\n|---:|---|---:|---:|---:|---:|\n")
	} else {
		fmt.Fprintf(b, "\n## %s\n\n| job | loader | mean wait | mean step | samples/s | named the straggler |\n|---|---|---:|---:|---:|---:|\n", title)
	}
	for _, r := range ranks {
		who := strconv.Itoa(r.Rank)
		if own {
			who = md(rankName(r))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %d frames |\n", who, md(r.URL), pctStr(r.MeanWaitShare), dur(r.MeanStepSec), optRate(r.MeanSamplesPerSec), r.StragglerFrames)
	}
}

// rankName is a row's name: Name, else "rank N" (a summary written
// before names were).
func rankName(r RankInfo) string {
	if r.Name != "" {
		return r.Name
	}
	return fmt.Sprintf("rank %d", r.Rank)
}

// ranksTitle is the heading of the per-rank section, and whether any
// row is a job of its own (world size 1): then they are loaders, of
// separate jobs where none is a rank, not one job's ranks.
func ranksTitle(ranks []RankInfo) (string, bool) {
	own := 0
	for _, r := range ranks {
		if r.WorldSize != nil && *r.WorldSize <= 1 {
			own++
		}
	}
	switch {
	case own == 0:
		return "Ranks", false
	case own == 1 && len(ranks) == 1:
		return "Loaders: one job of its own, no ranks", true
	case own == len(ranks):
		return fmt.Sprintf("Loaders: %d separate jobs, not ranks of one", own), true
	}
	return fmt.Sprintf("Ranks and loaders: %s, %s", sample.Plural(len(ranks)-own, "rank"), sample.Plural(own, "separate job")), true
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
