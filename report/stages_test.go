package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestReportStagesAndPayload: the loader's stage times are averaged over
// the frames that have them (a frame without is not a zero), shown as a
// table in Markdown and HTML with the workers' shares, and the last look
// at the batches is said in one sentence, escaped.
func TestReportStagesAndPayload(t *testing.T) {
	var frames []recording.Recorded
	for i := range 6 {
		w := 0.6
		l := &sample.Loader{Source: "http://127.0.0.1:6061", WaitShare: &w, BatchesPerSec: 10, SamplesPerSec: 320}
		if i%2 == 0 { // every other frame timed stages: the means are over those
			l.Stages = &sample.LoaderStages{GetitemMs: ptrF(30 + float64(i)), CollateMs: ptrF(8), HandoverMs: ptrF(2),
				TakeMs: ptrF(0.4), GetitemShare: ptrF(0.75), CollateShare: ptrF(0.2), HandoverShare: ptrF(0.05)}
			l.Payload = &sample.BatchPayload{BatchesLooked: uint64(i + 1), BytesPerBatch: 19.7e6, Float64Share: ptrF(0.99), PaddingShare: ptrF(0.78),
				Tensors: []sample.PayloadTensor{{Path: "<img>", DType: "float64"}},
				Copy:    &sample.HostCopy{BatchesCopied: 2, BytesPerBatch: 19.7e6, HostMsPerBatch: 0.25, PinnedShare: 1, NonBlockingShare: 1}}
		}
		frames = append(frames, recording.Recorded{Frame: sample.Frame{Time: generated.Add(time.Duration(i) * time.Second), IntervalSec: 1, Loader: l}})
	}
	s := Build(recording.New(recording.Header{Host: "h", Cores: 2}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	st := s.Loader.Stages
	if st == nil || math.Abs(*st.GetitemMs-32) > 1e-9 || *st.CollateMs != 8 || st.PinMs != nil || *st.GetitemShare != 0.75 {
		t.Fatalf("stages %+v", st)
	}
	if s.Loader.Payload == nil || s.Loader.Payload.BatchesLooked != 5 {
		t.Fatalf("payload %+v", s.Loader.Payload)
	}
	// These frames list no batch (the hook's): no histogram of waits, and
	// why, rather than 13 bars of 0.
	if s.Loader.WaitHistMs != nil || !strings.Contains(s.Loader.WaitHistWhy, "histogram per interval") {
		t.Errorf("wait histogram %+v, why %q", s.Loader.WaitHistMs, s.Loader.WaitHistWhy)
	}
	var m, h bytes.Buffer
	if err := WriteMarkdown(&m, s, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| getitem (worker) | 32ms | 75 % |", "| hand-over (worker: pickling) | 2.0ms | 5 % |", "| take (loop: unpickling) | 400µs |  |",
		"A batch holds 19MiB of tensors, 99 % of it float64; 78 % of its tokens are padding (5 batches looked inside). The loop copies it to the GPU 19MiB a batch: the loop 250µs in the copy; pinned, non\\_blocking."} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, m.String())
		}
	}
	if err := WriteHTML(&h, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), `<table id="stages">`) || !strings.Contains(h.String(), "<td>getitem (worker)</td><td>32ms</td><td>75 %</td>") {
		t.Error("the HTML report lacks the stage table")
	}
}
