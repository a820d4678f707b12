package probes

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func BenchmarkProfileParts(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	stacks := map[string]int64{}
	var data []byte
	for len(data) < 5<<20 {
		for i := 0; i < 20000; i++ {
			depth := 8 + rng.IntN(32)
			parts := make([]string, depth)
			for d := range parts {
				parts[d] = fmt.Sprintf("pkg%d.func%d", rng.IntN(30), rng.IntN(100))
			}
			stacks[strings.Join(parts, ";")] += 1 + int64(rng.IntN(5))
		}
		data = encode(b, synthetic(stacks))
	}
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
