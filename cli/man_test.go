//go:build manpages

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManPagesFromTheCommandTree: one page per command, with the flags
// and text of the tree, and the date from SOURCE_DATE_EPOCH (the same
// commit gives the same pages).
func TestManPagesFromTheCommandTree(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000") // 2023-11-14
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := Run([]string{"man", dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	root := newRootCmd(&out, &errb)
	for _, c := range append(root.Commands(), root) {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		name := "gpuwatch.1"
		if c != root {
			name = "gpuwatch-" + c.Name() + ".1"
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("no page for %q: %v", c.CommandPath(), err)
		}
		page := string(b)
		if !strings.HasPrefix(page, ".nh\n.TH \"GPUWATCH\" \"1\" \"Nov 2023\"") {
			t.Fatalf("%s: header %q", name, page[:min(80, len(page))])
		}
		if !strings.Contains(page, c.Short) {
			t.Fatalf("%s does not say %q", name, c.Short)
		}
	}
	attach, _ := os.ReadFile(filepath.Join(dir, "gpuwatch-attach.1"))
	if !strings.Contains(string(attach), `\fB--profile-every\fP=15s`) {
		t.Fatal("gpuwatch-attach.1 lacks its flags")
	}
	if _, err := os.Stat(filepath.Join(dir, "gpuwatch-man.1")); err == nil {
		t.Fatal("the hidden man command has a page of its own")
	}
}
