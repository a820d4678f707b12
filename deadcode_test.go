package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestLinkerDropsUnusedMethods: nothing linked into gpuwatch calls
// reflect's Method or MethodByName with a name known only at run time (a
// text/template or html/template does: cobra's SetUsageTemplate, a page
// written by a template). Where one is reachable the linker keeps every
// exported method of every type that may reach an interface, and the
// binary grew 3.8 MB (28.1 against 24.3 MB), all of it mapped into the
// dashboard's memory (docs/architecture.md §7). The linker's own
// dependency dump marks such a function <ReflectMethod>.
func TestLinkerDropsUnusedMethods(t *testing.T) {
	if testing.Short() {
		t.Skip("links the binary")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command(goBin, "build", "-ldflags=-dumpdep", "-o", os.DevNull, ".")
	cmd.Env = os.Environ()
	if os.Getenv("CGO_CFLAGS") == "" { // go-nvml's header marks calls deprecated: quiet, as the README's build is
		cmd.Env = append(cmd.Env, "CGO_CFLAGS=-Wno-deprecated-declarations")
	}
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build -ldflags=-dumpdep: %v\n%s", err, errs.String())
	}
	s := bufio.NewScanner(&errs) // the linker writes its dump to stderr
	s.Buffer(make([]byte, 1<<20), 1<<20)
	edges := 0
	for s.Scan() {
		line := s.Text()
		edges++
		if caller, _, ok := strings.Cut(line, " <ReflectMethod> ->"); ok {
			t.Errorf("%s calls reflect's Method or MethodByName: the linker keeps every exported method (%s)", caller, line)
		}
	}
	if edges < 1000 {
		t.Fatalf("the linker's dependency dump had %d lines: -dumpdep no longer writes it there", edges)
	}
}
