package report

import (
	"encoding/json"
	"io"
)

// WriteJSON writes the report as indented JSON (schema: docs/report.md).
func WriteJSON(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(s)
}
