package pprofsum

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/google/pprof/profile"
)

// BenchmarkProfileParts splits BenchmarkSummarize5MBProfile's time:
// gunzip, pprof's own decoding, and our summary.
func BenchmarkProfileParts(b *testing.B) {
	data := bigProfile(b)
	zr, _ := gzip.NewReader(bytes.NewReader(data))
	raw, _ := io.ReadAll(zr)
	p, _ := profile.ParseData(raw)
	b.Logf("gz %d MiB, raw %d MiB, %d samples, %d locations", len(data)>>20, len(raw)>>20, len(p.Sample), len(p.Location))
	b.Run("gunzip", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			zr, _ := gzip.NewReader(bytes.NewReader(data))
			io.Copy(io.Discard, zr)
		}
	})
	b.Run("parse-raw", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			profile.ParseData(raw)
		}
	})
	b.Run("summarize", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			summarize(p, 10)
		}
	})
}
