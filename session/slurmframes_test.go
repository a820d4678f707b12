package session

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/internal/fixture"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/sample"
	"golang.org/x/sys/unix"
)

// TestSlurmFramesKeepsTheMappedJobsFrames: only the frames that name a
// mapped job by its cgroup go to that job's file — a frame that names no
// job is nobody's, even while one job alone is mapped (issue 54); a job's
// file is closed when its mapping goes, and a file an earlier serve left
// is started anew.
func TestSlurmFramesKeepsTheMappedJobsFrames(t *testing.T) {
	mapDir, framesDir := t.TempDir(), t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(mapDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(framesDir, "4242.jsonl"), []byte("left by an earlier serve\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &SlurmFrames{MapDir: mapDir, FramesDir: framesDir, MaxBytes: 1 << 20, Th: diagnose.DefaultThresholds()}
	defer s.Close()
	t0 := fixture.Frame().Time
	frame := func(i int, job string) *sample.Frame {
		f := fixture.Frame()
		f.Time = t0.Add(time.Duration(i) * time.Second)
		if job != "" {
			f.Job = &sample.Job{Identity: &sample.JobIdentity{SlurmJob: job}}
		}
		return f
	}
	s.Frame(frame(0, ""), diagnose.Verdict{Kind: diagnose.Idle}) // nothing mapped: nothing kept
	write("4242", "user=alice\ngpus=0\n")
	s.Frame(frame(1, "4242"), diagnose.Verdict{Kind: diagnose.GPUStarved})
	s.Frame(frame(2, "4242"), diagnose.Verdict{Kind: diagnose.GPUStarved})
	s.Frame(frame(3, ""), diagnose.Verdict{Kind: diagnose.GPUStarved}) // one job mapped, none named: nobody's
	write("77", "user=bob\n")
	s.Frame(frame(4, ""), diagnose.Verdict{Kind: diagnose.GPUStarved})     // two jobs, none named: neither
	s.Frame(frame(5, "77"), diagnose.Verdict{Kind: diagnose.Healthy})      // bob's
	s.Frame(frame(6, "4242"), diagnose.Verdict{Kind: diagnose.GPUStarved}) // alice's
	if err := os.Remove(filepath.Join(mapDir, "4242")); err != nil {
		t.Fatal(err)
	}
	s.Frame(frame(7, "4242"), diagnose.Verdict{Kind: diagnose.GPUStarved}) // unmapped: closed, not kept
	if len(s.open) != 1 || s.open["77"] == nil {
		t.Errorf("open recordings %v", s.open)
	}
	for _, c := range []struct {
		id    string
		times []int
	}{{"4242", []int{1, 2, 6}}, {"77", []int{5}}} {
		rec, err := recording.Open(s.Path(c.id))
		if err != nil {
			t.Fatalf("job %s: %v", c.id, err)
		}
		var got []int
		_ = rec.Each(func(_ int, r *recording.Recorded) error {
			got = append(got, int(r.Frame.Time.Sub(t0)/time.Second))
			return nil
		})
		rec.Close()
		if len(got) != len(c.times) {
			t.Errorf("job %s: frames at %v s, want %v", c.id, got, c.times)
			continue
		}
		for i := range got {
			if got[i] != c.times[i] {
				t.Errorf("job %s: frames at %v s, want %v", c.id, got, c.times)
				break
			}
		}
	}
}

// TestSlurmFramesRemovesFramesOlderThanTheirJob (issue 54 item 4): an
// epilog that never ran (a node rebooted, a job killed with it) leaves
// its job's frames; serve removes those of jobs no longer mapped that
// nothing wrote for 15 minutes — a link among them removed, never
// followed — and keeps a mapped job's, a recent one's (its epilog may be
// reading it) and every name not of the form JOBID.jsonl[.1].
func TestSlurmFramesRemovesFramesOlderThanTheirJob(t *testing.T) {
	mapDir, framesDir, outside := t.TempDir(), t.TempDir(), t.TempDir()
	old := time.Now().Add(-time.Hour)
	put := func(name string, mtime time.Time) string {
		p := filepath.Join(framesDir, name)
		if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := os.WriteFile(filepath.Join(mapDir, "55"), []byte("user=alice\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(outside, "precious")
	if err := os.WriteFile(target, []byte("not serve's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(framesDir, "66.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(target, old, old); err != nil { // Lstat of a link: the link's own time, now
		t.Fatal(err)
	}
	gone := []string{put("11.jsonl", old), put("11.jsonl.1", old)}
	kept := []string{put("55.jsonl", old), put("12.jsonl", time.Now()), put("notes.jsonl", old), put("13.txt", old), put("1x3.jsonl", old)}
	s := &SlurmFrames{MapDir: mapDir, FramesDir: framesDir, MaxBytes: 1 << 20, Th: diagnose.DefaultThresholds()}
	defer s.Close()
	f := fixture.Frame()
	f.Time = time.Now()
	s.Frame(f, diagnose.Verdict{Kind: diagnose.Idle})
	for _, p := range gone {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s: kept", p)
		}
	}
	for _, p := range append(kept, link) {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	// The link, once old, is removed and what it led to is not touched.
	if err := unix.Lutimes(link, []unix.Timeval{unix.NsecToTimeval(old.UnixNano()), unix.NsecToTimeval(old.UnixNano())}); err != nil {
		t.Fatal(err)
	}
	f.Time = f.Time.Add(2 * time.Minute)
	s.Frame(f, diagnose.Verdict{Kind: diagnose.Idle})
	if _, err := os.Lstat(link); err == nil {
		t.Errorf("the old link was kept")
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "not serve's\n" {
		t.Errorf("what the link led to: %q %v", b, err)
	}
}
