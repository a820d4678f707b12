package sample

import (
	"math"
	"strconv"
)

// FormatBytes renders n bytes with binary prefixes: "512B", "1.5KiB",
// "20.3GiB". Three significant digits are enough for a dashboard.
func FormatBytes(n float64) string {
	const unit = 1024
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return "?"
	}
	if n < 0 {
		return "-" + FormatBytes(-n)
	}
	if n < unit {
		return strconv.FormatFloat(n, 'f', 0, 64) + "B"
	}
	suffixes := [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := -1
	for n >= unit && i < len(suffixes)-1 {
		n /= unit
		i++
	}
	prec := 0
	if n < 10 {
		prec = 1
	}
	return strconv.FormatFloat(n, 'f', prec, 64) + suffixes[i]
}
