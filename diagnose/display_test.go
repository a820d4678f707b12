package diagnose

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestViewsCompareNoBareNumbers: the views mark figures with the display
// predicates (Bursty, PSIHigh, Hot, Listed), never by comparing a metric
// with a number of their own: the dashboard once called a GPU bursty at
// p95 − p5 ≥ 60 where the verdict needs p95 ≥ 70 and p5 < 10, and painted
// every PSI ≥ 30 red where the verdict's marks are 50, 30 and 10. A
// comparison of a metric-like expression (…Pct, …Share, P95, P5, Avg10,
// …Ratio, Busy…, Wait…) with a literal other than 0 or 1 fails here.
func TestViewsCompareNoBareNumbers(t *testing.T) {
	metric := regexp.MustCompile(`Pct|Share|P95|P5\b|Avg10|Ratio|Busy|Wait`)
	for _, dir := range []string{"../tui", "../lines", "../report", "../fleet"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			for _, bad := range bareComparisons(t, path, metric) {
				t.Errorf("%s: compares a metric with a bare number: %s (use a Thresholds predicate)", path, bad)
			}
		}
	}
}

// bareComparisons lists the ordered comparisons in a file between an
// expression whose text matches metric and a numeric literal.
func bareComparisons(t *testing.T, path string, metric *regexp.Regexp) []string {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fs := token.NewFileSet()
	file, err := parser.ParseFile(fs, path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	text := func(n ast.Node) string { return string(src[fs.Position(n.Pos()).Offset:fs.Position(n.End()).Offset]) }
	var out []string
	ast.Inspect(file, func(n ast.Node) bool {
		b, ok := n.(*ast.BinaryExpr)
		if !ok || (b.Op != token.GEQ && b.Op != token.GTR && b.Op != token.LSS && b.Op != token.LEQ) {
			return true
		}
		for _, pair := range [][2]ast.Expr{{b.X, b.Y}, {b.Y, b.X}} {
			lit, ok := pair[1].(*ast.BasicLit)
			if ok && (lit.Kind == token.INT || lit.Kind == token.FLOAT) && lit.Value != "0" && lit.Value != "1" && metric.MatchString(text(pair[0])) {
				out = append(out, fs.Position(b.Pos()).String()+": "+text(b))
			}
		}
		return true
	})
	return out
}

// TestDisplayPredicatesUseTheThresholds: each predicate moves with its
// threshold, as the verdict does.
func TestDisplayPredicatesUseTheThresholds(t *testing.T) {
	th := DefaultThresholds()
	saw := &sample.UtilSamples{P95: 80, P5: 5}
	if !th.Bursty(saw) || th.Bursty(&sample.UtilSamples{P95: 65, P5: 0}) || th.Bursty(nil) {
		t.Fatal("Bursty does not follow p95 ≥ 70 with p5 < 10")
	}
	th.BurstyP95 = 90
	if th.Bursty(saw) {
		t.Fatal("Bursty ignores bursty_p95")
	}
	th = DefaultThresholds()
	for _, c := range []struct {
		r        PSIResource
		at, less float64
	}{{PSICPU, 50, 49}, {PSIIO, 30, 29}, {PSIMemory, 10, 9}} {
		if !th.PSIHigh(c.r, c.at) || th.PSIHigh(c.r, c.less) {
			t.Errorf("PSIHigh(%d) at %v/%v", c.r, c.at, c.less)
		}
	}
	if !th.Hot(90) || th.Hot(89) {
		t.Fatal("Hot does not follow single_thread_pct")
	}
	th.SingleThreadPct = 95
	if th.Hot(90) || th.HotPct() != 95 {
		t.Fatal("Hot ignores single_thread_pct")
	}
}
