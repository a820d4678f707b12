package sample

import (
	"math"
	"reflect"
	"testing"
)

func TestHistoryKeepsNewestInOrder(t *testing.T) {
	tests := []struct {
		name     string
		capacity int
		add      int
		want     []int // IntervalSec of the held frames, oldest first
	}{
		{"empty", 3, 0, nil},
		{"partly filled", 3, 2, []int{0, 1}},
		{"exactly full", 3, 3, []int{0, 1, 2}},
		{"wrapped twice drops oldest", 3, 7, []int{4, 5, 6}},
		{"capacity below one is one", 0, 4, []int{3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistory(tc.capacity)
			for i := 0; i < tc.add; i++ {
				h.Add(&Frame{IntervalSec: float64(i)})
			}
			var got []int
			for _, f := range h.Last(nil, h.Len()) {
				got = append(got, int(f.IntervalSec))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("held %v, want %v", got, tc.want)
			}
			if h.Len() > len(h.buf) {
				t.Fatalf("Len %d > capacity %d", h.Len(), len(h.buf))
			}
		})
	}
}

func TestHistoryLastTakesAtMostK(t *testing.T) {
	h := NewHistory(10)
	for i := 0; i < 10; i++ {
		h.Add(&Frame{IntervalSec: float64(i)})
	}
	got := h.Last(nil, 3)
	if len(got) != 3 || got[0].IntervalSec != 7 || got[2].IntervalSec != 9 {
		t.Fatalf("Last(3) = %v", got)
	}
	if h.At(h.Len()-1) != got[2] {
		t.Fatal("the newest frame is not the last of Last")
	}
}

func TestHistoryMemoryIsBounded(t *testing.T) {
	h := NewHistory(4)
	for i := 0; i < 10000; i++ {
		h.Add(&Frame{})
	}
	if len(h.buf) != 4 || h.Len() != 4 {
		t.Fatalf("buffer grew to %d", len(h.buf))
	}
}

// TestMergeCoversEveryPart fails when a part is added to Frame without
// teaching Merge about it: it fills every pointer, slice and map field by
// reflection and checks that Merge carries each one over.
func TestMergeCoversEveryPart(t *testing.T) {
	var from Frame
	v := reflect.ValueOf(&from).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Map:
			f.Set(reflect.MakeMap(f.Type()))
			f.SetMapIndex(reflect.ValueOf("k").Convert(f.Type().Key()), reflect.ValueOf("v"))
		}
	}
	var into Frame
	into.Merge(&from)
	iv := reflect.ValueOf(into)
	for i := 0; i < iv.NumField(); i++ {
		f := iv.Field(i)
		switch f.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			if f.IsNil() || f.Kind() != reflect.Pointer && f.Len() == 0 {
				t.Errorf("Merge drops %s", iv.Type().Field(i).Name)
			}
		}
	}
}

func TestMergeKeepsPartsTheSourceLacks(t *testing.T) {
	into := Frame{CPU: &CPU{BusyPct: 5}, Unavailable: map[Source]string{"gpu": "no driver"}}
	into.Merge(&Frame{Mem: &Mem{TotalBytes: 1}, Unavailable: map[Source]string{"psi": "missing"}})
	if into.CPU == nil || into.CPU.BusyPct != 5 || into.Mem == nil {
		t.Fatalf("parts lost: %+v", into)
	}
	if len(into.Unavailable) != 2 {
		t.Fatalf("unavailable = %v", into.Unavailable)
	}
}

// TestMergeTheAcceleratorGoesWithItsLoader: a sampled loop's virtual
// accelerator does not stay beside an attached loader that times no step
// (the Sampler merges the loop's probe before the loaders'), and it stays
// where the sampled loop keeps the frame from a loader that does not
// answer.
func TestMergeTheAcceleratorGoesWithItsLoader(t *testing.T) {
	sampled := func() *Frame {
		return &Frame{Loader: &Loader{Source: "sampled: pid 7's main thread", Sampled: &SampledLoop{}}, Accel: &VirtualAccel{BusyPct: 94}}
	}
	attached := &Frame{Loader: &Loader{Source: "http://127.0.0.1:41000", BatchesPerSec: 40}}
	into := *sampled()
	into.Merge(attached)
	if into.Loader.Source != attached.Loader.Source || into.Accel != nil {
		t.Errorf("loader %q, accel %+v: want the attached loader and no accelerator", into.Loader.Source, into.Accel)
	}
	no := false
	down := &Frame{Loader: &Loader{Source: "http://127.0.0.1:41000", Connected: &no}}
	into = *sampled()
	into.Merge(down)
	if into.Loader.Sampled == nil || into.Accel == nil || into.Accel.BusyPct != 94 {
		t.Errorf("loader %q, accel %+v: want the sampled loop's, beside a loader that does not answer", into.Loader.Source, into.Accel)
	}
}

func TestThroughputSaysBatchesWhenSamplesAreUnknown(t *testing.T) {
	for _, tc := range []struct {
		l    Loader
		want string
	}{
		{Loader{BatchesPerSec: 10, SamplesPerSec: 320}, "320 samples/s"},
		{Loader{BatchesPerSec: 12.5}, "12.5 batches/s"}, // the hook could not read batch sizes
		{Loader{}, "0 samples/s"},                       // stopped
	} {
		if got := tc.l.Throughput(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.l, got, tc.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for _, c := range []struct {
		sec  float64
		want string
	}{
		{0, "0s"}, {0.00035, "350µs"}, {0.0009996, "1.0ms"}, {0.000999, "999µs"}, {0.001, "1.0ms"}, {0.0041, "4.1ms"}, {0.041, "41ms"}, {0.9994, "999ms"},
		{0.9996, "1.0s"}, {1.234, "1.2s"}, {9.96, "10s"}, {42.4, "42s"}, {59.6, "1m00s"}, {190, "3m10s"}, {3599.4, "59m59s"},
		{3599.6, "1h00m"}, {7500, "2h05m"}, {-0.041, "-41ms"}, {math.NaN(), "?"}, {math.Inf(1), "?"},
	} {
		if got := FormatDuration(c.sec); got != c.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", c.sec, got, c.want)
		}
	}
}

func TestJoinInts(t *testing.T) {
	for _, c := range []struct {
		v    []int
		most int
		want string
	}{{nil, 4, ""}, {[]int{7}, 4, "7"}, {[]int{1, 2, 3}, 3, "1, 2, 3"}, {[]int{1, 2, 3, 4, 5}, 2, "1, 2, and 3 more"}} {
		if got := JoinInts(c.v, c.most); got != c.want {
			t.Errorf("JoinInts(%v, %d) = %q, want %q", c.v, c.most, got, c.want)
		}
	}
}
