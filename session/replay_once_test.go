package session

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
)

// TestReplayOnceJudgesTheLastStretch: the demo tour's recording ends on
// io_bound. Judged whole or over its last 20 s, the verdict is io_bound
// (exit 3) from the frames of that stretch only; its last 3 s (4 frames, 1 s apart) are too
// short for any verdict to hold 5 s (exit 4, saying why).
func TestReplayOnceJudgesTheLastStretch(t *testing.T) {
	rec, err := recording.Open(filepath.Join("..", "recording", "testdata", "tour.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	th := diagnose.DefaultThresholds()
	for _, c := range []struct {
		last   time.Duration
		frames int
		want   error
	}{{0, 37, ErrBottleneck}, {20 * time.Second, 20, ErrBottleneck}, {3 * time.Second, 4, ErrUnsettled}} {
		var b strings.Builder
		err := ReplayOnce(context.Background(), rec, th, c.last, true, &b)
		if !errors.Is(err, c.want) {
			t.Errorf("--last %v: %v, want %v", c.last, err, c.want)
		}
		var sum onceSummary
		if err := json.Unmarshal([]byte(b.String()), &sum); err != nil {
			t.Fatalf("--last %v: %v in %q", c.last, err, b.String())
		}
		if sum.Frames != c.frames || sum.Verdict.Kind != diagnose.IOBound || sum.Settled != (c.want != ErrUnsettled) {
			t.Errorf("--last %v: %d frames, %v, settled %v", c.last, sum.Frames, sum.Verdict.Kind, sum.Settled)
		}
		// What gives more frames is replay's --last, not a live
		// session's --duration, which replay does not have.
		if !sum.Settled && (!strings.Contains(sum.Unsettled, "held") || !strings.Contains(sum.Unsettled, "a longer --last") || strings.Contains(sum.Unsettled, "--duration")) {
			t.Errorf("--last %v: why %q", c.last, sum.Unsettled)
		}
	}
	if err := ReplayOnce(context.Background(), recording.New(recording.Header{}, nil, nil), th, 0, false, &strings.Builder{}); err == nil {
		t.Error("an empty recording judged")
	}
}

// TestReplayOnceStopsWhenCancelled: a cancelled context (replay's, on
// SIGTERM) stops the judging before the first frame: no summary, an error
// that wraps context.Canceled, so the epilog's time limit is not spent.
func TestReplayOnceStopsWhenCancelled(t *testing.T) {
	rec, err := recording.Open(filepath.Join("..", "recording", "testdata", "tour.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var b strings.Builder
	err = ReplayOnce(ctx, rec, diagnose.DefaultThresholds(), 0, false, &b)
	if !errors.Is(err, context.Canceled) || b.Len() != 0 {
		t.Errorf("cancelled: %v, printed %q", err, b.String())
	}
}
