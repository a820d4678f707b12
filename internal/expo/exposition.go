// Package expo parses the Prometheus text exposition format (0.0.4), the
// subset every exporter writes, keeping only the samples of one prefix:
// the loader protocol's reader (docs/architecture.md §6), cross-checked
// against expfmt and fuzzed in probes/endpoint. It imports only the
// standard library.
package expo

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sample is one sample line of the Prometheus text format.
type Sample struct {
	Labels []Label
	Value  float64
}

// Label is one label of a sample, its value unescaped.
type Label struct{ Name, Value string }

// Label is the value of the sample's label name; false when it has none.
func (s Sample) Label(name string) (string, bool) {
	for _, l := range s.Labels {
		if l.Name == name {
			return l.Value, true
		}
	}
	return "", false
}

// maxKeptSamples bounds the samples kept from one page: a loader serves a
// few dozen; a hostile page cannot grow memory past this.
const maxKeptSamples = 8192

// Parse reads the Prometheus text format (0.0.4) — the subset
// every exporter writes: comments, and `name{label="value",…} value
// [timestamp]` lines — keeping only the samples whose name starts with
// prefix. It is the loader protocol's reader, a tenth of the cost of
// expfmt's full parser, which builds every family of the page (the Go
// runtime's own included) and was most of an attached tick's CPU. A line
// that is not of that form is an error: the page is not metrics.
func Parse(page []byte, prefix string) (map[string][]Sample, error) {
	out := map[string][]Sample{}
	kept := 0
	text := string(page) // one copy; lines, names and values are slices of it
	for n := 1; len(text) > 0; n++ {
		var line string
		i := strings.IndexByte(text, '\n')
		if i < 0 && strings.TrimLeft(text, " \t") == "" {
			break // trailing blanks
		}
		if i < 0 {
			// Every line ends with a newline; one that does not is a
			// page cut short, whose last number may be cut too.
			return nil, fmt.Errorf("line %d: the page ends mid-line (truncated?)", n)
		}
		line, text = text[:i], text[i+1:]
		s := strings.TrimLeft(line, " \t")
		if s == "" || s[0] == '#' {
			continue
		}
		name, rest := metricName(s)
		if name == "" {
			return nil, fmt.Errorf("line %d: no metric name", n)
		}
		want := strings.HasPrefix(name, prefix) && kept < maxKeptSamples
		var sm Sample
		var err error
		if r := strings.TrimLeft(rest, " \t"); strings.HasPrefix(r, "{") { // blanks may come before the brace
			rest = r
			sm.Labels, rest, err = parseLabels(rest[1:], want)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
		}
		// Whatever cannot continue the name ends it: the value may follow
		// with no blank between ("name+0", "name{}0"), as expfmt reads it.
		// After the value: nothing, or blanks and a timestamp.
		r := strings.TrimLeft(rest, " \t")
		value, after, spaced := strings.Cut(r, " ")
		if i := strings.IndexByte(value, '\t'); i >= 0 {
			value, after, spaced = r[:i], r[i+1:], true
		}
		if value == "" {
			return nil, fmt.Errorf("line %d: want a value after %s", n, name)
		}
		if sm.Value, err = ParseValue(value); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if spaced {
			if _, err := strconv.ParseInt(strings.TrimLeft(after, " \t"), 10, 64); err != nil {
				return nil, fmt.Errorf("line %d: after the value, want a timestamp in milliseconds", n)
			}
		}
		if want {
			out[name] = append(out[name], sm)
			kept++
		}
	}
	return out, nil
}

// metricName splits a line into its metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)
// and the rest; "" when the line does not start with one.
func metricName(s string) (string, string) {
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			i++
			continue
		}
		break
	}
	return s[:i], s[i:]
}

// parseLabels reads `name="value",…}` (after the brace) and returns the
// labels (only when keep: a sample not kept needs no strings) and what
// follows the closing brace.
func parseLabels(s string, keep bool) ([]Label, string, error) {
	var out []Label
	var seen [8]string // the names so far, for duplicates, without allocating
	names := seen[:0]
	for {
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, "}") {
			return out, s[1:], nil
		}
		name, rest := metricName(s)
		if name == "" || strings.ContainsRune(name, ':') {
			return nil, "", errors.New("a label without a valid name")
		}
		rest = strings.TrimLeft(rest, " \t")
		if !strings.HasPrefix(rest, "=") {
			return nil, "", fmt.Errorf("label %s: no =", name)
		}
		rest = strings.TrimLeft(rest[1:], " \t")
		if !strings.HasPrefix(rest, `"`) {
			return nil, "", fmt.Errorf("label %s: the value is not quoted", name)
		}
		value, rest, err := quoted(rest[1:])
		if err != nil {
			return nil, "", fmt.Errorf("label %s: %w", name, err)
		}
		if slices.Contains(names, name) {
			return nil, "", fmt.Errorf("label %s twice", name)
		}
		names = append(names, name)
		if keep {
			out = append(out, Label{name, value})
		}
		s = strings.TrimLeft(rest, " \t")
		switch {
		case strings.HasPrefix(s, ","):
			s = s[1:]
		case strings.HasPrefix(s, "}"):
		default:
			return nil, "", errors.New("labels not closed with }")
		}
	}
}

// quoted reads a label value up to its closing quote, with the format's
// escapes (\\, \", \n); it must be UTF-8.
func quoted(s string) (string, string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			v := b.String()
			if !utf8.ValidString(v) {
				return "", "", errors.New("a value that is not UTF-8")
			}
			return v, s[i+1:], nil
		case '\\':
			if i+1 == len(s) {
				return "", "", errors.New("an escape at the end")
			}
			i++
			switch s[i] {
			case '\\', '"':
				b.WriteByte(s[i])
			case 'n':
				b.WriteByte('\n')
			default:
				return "", "", fmt.Errorf("unknown escape \\%c", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", errors.New("a value without its closing quote")
}

// ParseValue is a sample value as the format (and expfmt) reads it: Go's
// float syntax, NaN and Inf in any case, but no hex exponents or
// underscores.
func ParseValue(s string) (float64, error) {
	if strings.ContainsAny(s, "pP_") {
		return 0, fmt.Errorf("%q is not a sample value", s)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a sample value", s)
	}
	return v, nil
}
