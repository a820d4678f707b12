package probes

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// snapshots lets a probe built on one root read a scenario's snapshots in
// turn: the root is a symlink that the test repoints, as if the kernel's
// counters had moved on.
type snapshots struct {
	t    *testing.T
	link string
	dir  string
	at   time.Time
}

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func newSnapshots(t *testing.T, scenario string) *snapshots {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", scenario))
	if err != nil {
		t.Fatal(err)
	}
	s := &snapshots{t: t, link: filepath.Join(t.TempDir(), "root"), dir: dir, at: t0.Add(-time.Second)}
	s.use("t0")
	return s
}

// use points the root at snapshot snap ("t0", "t1" …).
func (s *snapshots) use(snap string) {
	s.t.Helper()
	_ = os.Remove(s.link)
	if err := os.Symlink(filepath.Join(s.dir, snap), s.link); err != nil {
		s.t.Fatal(err)
	}
}

func (s *snapshots) roots() Roots {
	return Roots{Proc: filepath.Join(s.link, "proc"), Sys: filepath.Join(s.link, "sys")}
}

// collect reads snapshot snap with p, one second after the previous read.
func (s *snapshots) collect(p Probe, snap string) (*sample.Frame, error) {
	s.use(snap)
	s.at = s.at.Add(time.Second)
	f := &sample.Frame{Time: s.at}
	err := p.Collect(context.Background(), f)
	return f, err
}

func (s *snapshots) mustCollect(p Probe, snap string) *sample.Frame {
	s.t.Helper()
	f, err := s.collect(p, snap)
	if err != nil {
		s.t.Fatalf("collect %s: %v", snap, err)
	}
	return f
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func nearPtr(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s is nil, want %v", what, want)
		return
	}
	near(t, what, *got, want)
}

func frameAt(t time.Time) *sample.Frame { return &sample.Frame{Time: t} }
