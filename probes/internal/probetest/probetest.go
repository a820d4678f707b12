// Package probetest holds what the tests of every probe family share: the
// fixture trees under a family's testdata/ read one snapshot after another,
// a fixed clock, and float comparisons. It is imported by tests only, and
// imports only probes and sample.
package probetest

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/sample"
)

// T0 is the time of the first frame the tests build.
var T0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// Snapshots lets a probe built on one root read a scenario's snapshots in
// turn: the root is a symlink that the test repoints, as if the kernel's
// counters had moved on.
type Snapshots struct {
	t    *testing.T
	link string
	dir  string
	at   time.Time
}

// NewSnapshots opens scenario, a folder under the test's testdata/ (or a
// path relative to the test's folder), at its snapshot t0.
func NewSnapshots(t *testing.T, scenario string) *Snapshots {
	t.Helper()
	dir := scenario
	if !filepath.IsAbs(dir) && filepath.Dir(dir) == "." {
		dir = filepath.Join("testdata", scenario)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := &Snapshots{t: t, link: filepath.Join(t.TempDir(), "root"), dir: dir, at: T0.Add(-time.Second)}
	s.Use("t0")
	return s
}

// Use points the root at snapshot snap ("t0", "t1" …).
func (s *Snapshots) Use(snap string) {
	s.t.Helper()
	_ = os.Remove(s.link)
	if err := os.Symlink(filepath.Join(s.dir, snap), s.link); err != nil {
		s.t.Fatal(err)
	}
}

// Roots are the /proc and /sys of the snapshot in use.
func (s *Snapshots) Roots() probes.Roots {
	return probes.Roots{Proc: filepath.Join(s.link, "proc"), Sys: filepath.Join(s.link, "sys")}
}

// Collect reads snapshot snap with p, one second after the previous read.
func (s *Snapshots) Collect(p probes.Probe, snap string) (*sample.Frame, error) {
	s.Use(snap)
	s.at = s.at.Add(time.Second)
	f := &sample.Frame{Time: s.at}
	err := p.Collect(context.Background(), f)
	return f, err
}

// MustCollect is Collect, failing the test on an error.
func (s *Snapshots) MustCollect(p probes.Probe, snap string) *sample.Frame {
	s.t.Helper()
	f, err := s.Collect(p, snap)
	if err != nil {
		s.t.Fatalf("collect %s: %v", snap, err)
	}
	return f
}

// Near fails t when got is not want within a relative 1e-6.
func Near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// NearPtr is Near for a field that may be nil (a failure when it is).
func NearPtr(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s is nil, want %v", what, want)
		return
	}
	Near(t, what, *got, want)
}

// FrameAt is an empty frame taken at t.
func FrameAt(t time.Time) *sample.Frame { return &sample.Frame{Time: t} }
