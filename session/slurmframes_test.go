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
