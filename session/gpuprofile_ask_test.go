package session

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/probes/endpoint"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestGPUProfileWhenBoundAsksOnceWhenTheGPUIsTheLimit: a starved loop is
// not asked, nor a healthy CPU job (no GPU); the first healthy frame of
// the hook's loader on a GPU is, once; a loader already recording is not.
func TestGPUProfileWhenBoundAsksOnceWhenTheGPUIsTheLimit(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.Method+" "+r.URL.String())
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte("recording the GPU's time over 5 steps from the next batch\n"))
	}))
	defer srv.Close()
	a, err := endpoint.NewAttach(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var told []string
	g := &GPUProfileWhenBound{Pacing: func() *endpoint.Attach { return a }, Told: func(s string) { told = append(told, s) }}
	gpu := []sample.GPU{{Index: 0, Name: "NVIDIA H200", Vendor: "nvidia"}}
	hook := &sample.Frame{Loader: &sample.Loader{Kind: "python"}, GPUs: gpu}
	g.Frame(hook, diagnose.Verdict{Kind: diagnose.GPUStarved})
	g.Frame(&sample.Frame{Loader: &sample.Loader{Kind: "python"}}, diagnose.Verdict{Kind: diagnose.Healthy}) // a CPU job: no GPU time to record
	g.Frame(&sample.Frame{Loader: &sample.Loader{Kind: "python", GPUProfile: &sample.GPUProfile{State: sample.GPUProfileRecording}}}, diagnose.Verdict{Kind: diagnose.Healthy})
	g.Frame(&sample.Frame{Loader: &sample.Loader{Kind: "go"}}, diagnose.Verdict{Kind: diagnose.Healthy})
	if len(asked) != 0 || g.Pending(hook) {
		t.Fatalf("asked %q", asked)
	}
	g.Frame(hook, diagnose.Verdict{Kind: diagnose.Healthy})
	if !g.Pending(hook) || g.Pending(&sample.Frame{Loader: &sample.Loader{GPUProfile: &sample.GPUProfile{State: sample.GPUProfileDone}}}) {
		t.Error("pending: asked, and until the frames carry its end")
	}
	g.Frame(hook, diagnose.Verdict{Kind: diagnose.Healthy})
	if len(asked) != 1 || asked[0] != "POST /gpu-profile?steps=5" || len(told) != 1 || !strings.Contains(told[0], "recording the GPU's time") {
		t.Fatalf("asked %q, told %q", asked, told)
	}
	if !GPUProfileUnderWay(&sample.Frame{Loader: &sample.Loader{GPUProfile: &sample.GPUProfile{State: sample.GPUProfileWaiting}}}) ||
		GPUProfileUnderWay(&sample.Frame{Loader: &sample.Loader{GPUProfile: &sample.GPUProfile{State: sample.GPUProfileDone}}}) || GPUProfileUnderWay(hook) {
		t.Error("under way")
	}
}

// TestAskGPUProfileTellsEachLoadersAnswer: attach --gpu-profile asks each
// URL; a refusal is a line.
func TestAskGPUProfileTellsEachLoadersAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte("the GPU's time is being recorded (recording)\n"))
	}))
	defer srv.Close()
	var told []string
	AskGPUProfile(context.Background(), []string{srv.URL}, t.TempDir(), 3, func(s string) { told = append(told, s) })
	if len(told) != 1 || !strings.Contains(told[0], "409") || !strings.Contains(told[0], "being recorded") {
		t.Fatalf("told %q", told)
	}
}
