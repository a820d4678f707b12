package job

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrialLogsRotate: a capped log keeps its last part and the one before
// it, and says that earlier output was dropped.
func TestTrialLogsRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run-1.log")
	l, err := openJobLog(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		_, _ = l.Write([]byte(strings.Repeat("x", 90) + string(rune('a'+i%26)) + "\n"))
	}
	l.Close()
	for _, p := range []string{path, path + ".1"} {
		st, err := os.Stat(p)
		if err != nil || st.Size() > 1000 || st.Size() == 0 {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if !strings.Contains(l.Note(), "earlier output was dropped") || l.tail.last(1)[0] != strings.Repeat("x", 90)+"v" {
		t.Fatalf("note %q, tail %q", l.Note(), l.tail.last(1))
	}
}
