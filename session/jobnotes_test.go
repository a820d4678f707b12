package session

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/lines"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session/job"
)

// TestTheJobsExitSaysExitedOnce: the event of gpuwatch run's job's end
// is named "exited", and where its name and detail are shown together
// (the headless line, the dashboard's status bar) the word came twice:
// "exited pid 7 (sh) exited with status 3".
func TestTheJobsExitSaysExitedOnce(t *testing.T) {
	for _, c := range []struct {
		script, how string
	}{
		{"exit 3", "with status 3"},
		{"kill -TERM $$", "killed by SIGTERM"},
	} {
		t.Run(c.how, func(t *testing.T) {
			j, err := job.Start(job.Options{Argv: []string{"sh", "-c", c.script}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { j.Stop(time.Second) })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			notes, stop := JobNotes(ctx, j, nil, false, cancel)
			defer stop()
			n, ok := (<-notes).(sample.Event)
			if !ok || n.Name != "exited" {
				t.Fatalf("note %#v, want the event exited", n)
			}
			var line bytes.Buffer
			if err := lines.WriteNoteLine(&line, n); err != nil {
				t.Fatal(err)
			}
			d := &dashboard{}
			if err := d.Note(n); err != nil {
				t.Fatal(err)
			}
			for _, shown := range []string{line.String(), d.note} {
				if strings.Count(shown, "exited") != 1 || !strings.Contains(shown, c.how) || !strings.Contains(shown, "(sh -c ") {
					t.Errorf("%q: want \"exited\" once, the command, and %q", shown, c.how)
				}
			}
		})
	}
}
