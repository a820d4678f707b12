package sample

import "testing"

func f64(v float64) *float64 { return &v }

func TestAccessorsReduceAFrameOneWay(t *testing.T) {
	lost := GPU{Lost: true, UtilPct: f64(0), UtilSamples: &UtilSamples{P5: 0, P95: 0}}
	cases := []struct {
		name    string
		f       Frame
		util    float64
		utilOK  bool
		p5, p95 float64
		bandOK  bool
		disk    string
		diskOK  bool
	}{
		{"no GPU, no disk", Frame{}, 0, false, 0, 0, false, "", false},
		{"a lost GPU counts for nothing", Frame{GPUs: []GPU{{UtilPct: f64(80), UtilSamples: &UtilSamples{P5: 10, P95: 90}}, lost}},
			80, true, 10, 90, true, "", false},
		{"a GPU without utilization is left out of the mean", Frame{GPUs: []GPU{{UtilPct: f64(60)}, {}}}, 60, true, 0, 0, false, "", false},
		{"two GPUs average", Frame{GPUs: []GPU{{UtilPct: f64(100), UtilSamples: &UtilSamples{P5: 90, P95: 100}}, {UtilPct: f64(0), UtilSamples: &UtilSamples{P5: 0, P95: 20}}}},
			50, true, 45, 60, true, "", false},
		{"the busiest disk, the first of equals", Frame{Disks: []Disk{{Name: "sda", BusyPct: 5}, {Name: "nvme0n1", BusyPct: 95}, {Name: "sdb", BusyPct: 95}}},
			0, false, 0, 0, false, "nvme0n1", true},
		{"an idle disk is still a disk", Frame{Disks: []Disk{{Name: "vda"}}}, 0, false, 0, 0, false, "vda", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if u, ok := c.f.GPUUtil(); u != c.util || ok != c.utilOK {
				t.Errorf("GPUUtil = %v, %v; want %v, %v", u, ok, c.util, c.utilOK)
			}
			if p5, p95, ok := c.f.GPUBand(); p5 != c.p5 || p95 != c.p95 || ok != c.bandOK {
				t.Errorf("GPUBand = %v, %v, %v; want %v, %v, %v", p5, p95, ok, c.p5, c.p95, c.bandOK)
			}
			if d, ok := c.f.BusiestDisk(); d.Name != c.disk || ok != c.diskOK {
				t.Errorf("BusiestDisk = %q, %v; want %q, %v", d.Name, ok, c.disk, c.diskOK)
			}
		})
	}
}

func TestPressureSomeFallsBackToTheKernelsAverage(t *testing.T) {
	var none *Pressure
	if _, ok := none.Some(); ok {
		t.Error("a resource the kernel does not report has a value")
	}
	if v, ok := (&Pressure{SomeAvg10: 3}).Some(); v != 3 || !ok {
		t.Errorf("first reading: %v, %v; want the 10 s average 3", v, ok)
	}
	if v, ok := (&Pressure{SomeAvg10: 3, SomePct: f64(40)}).Some(); v != 40 || !ok {
		t.Errorf("with an interval: %v, %v; want the interval's 40", v, ok)
	}
}

// TestProfileFuncWhere: a function's place for a view is its file's last
// two path elements and its line.
func TestProfileFuncWhere(t *testing.T) {
	for _, c := range []struct {
		f    ProfileFunc
		want string
	}{
		{ProfileFunc{File: "/usr/lib/python3/dist-packages/PIL/ImageFile.py", Line: 155}, "PIL/ImageFile.py:155"},
		{ProfileFunc{File: "train.py", Line: 42}, "train.py:42"},
		{ProfileFunc{File: "/train.py", Line: 42}, "/train.py:42"},
		{ProfileFunc{File: "loader/loader.go"}, "loader/loader.go"},
		{ProfileFunc{Line: 3}, ""},
	} {
		if got := c.f.Where(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.f, got, c.want)
		}
	}
}
