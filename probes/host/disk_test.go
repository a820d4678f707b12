package host

import (
	"testing"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
	"github.com/gpuwatch/gpuwatch/sample"
)

func diskNames(ds []sample.Disk) []string {
	var n []string
	for _, d := range ds {
		n = append(n, d.Name)
	}
	return n
}

func TestDiskWholeDevicesRates(t *testing.T) {
	s := probetest.NewSnapshots(t, "normal")
	p := NewDisk(s.Roots(), DiskOptions{})
	if f := s.MustCollect(p, "t0"); len(f.Disks) != 0 {
		t.Fatalf("first reading has rates: %+v", f.Disks)
	}
	ds := s.MustCollect(p, "t1").Disks
	if len(ds) != 1 || ds[0].Name != "vda" {
		t.Fatalf("disks = %v, want only vda (no partition, no loop)", diskNames(ds))
	}
	d := ds[0]
	probetest.Near(t, "read bytes/s", d.ReadBytesPerSec, 2048*512)
	probetest.Near(t, "write bytes/s", d.WriteBytesPerSec, 1024*512)
	probetest.Near(t, "read IOPS", d.ReadIOPS, 100)
	probetest.Near(t, "write IOPS", d.WriteIOPS, 50)
	probetest.Near(t, "busy", d.BusyPct, 25)
	probetest.NearPtr(t, "await", d.AwaitMs, 300.0/150)
	if d.InFlight != 2 {
		t.Errorf("in flight = %d, want 2", d.InFlight)
	}
}

func TestDiskAllIncludesPartitionsAndVirtual(t *testing.T) {
	s := probetest.NewSnapshots(t, "normal")
	p := NewDisk(s.Roots(), DiskOptions{All: true})
	s.MustCollect(p, "t0")
	if got := diskNames(s.MustCollect(p, "t1").Disks); len(got) != 3 {
		t.Fatalf("disks = %v, want loop0, vda, vda1", got)
	}
}

func TestDiskSaturatedNVMe(t *testing.T) {
	s := probetest.NewSnapshots(t, "nvme-saturated")
	p := NewDisk(s.Roots(), DiskOptions{})
	s.MustCollect(p, "t0")
	ds := s.MustCollect(p, "t1").Disks
	if len(ds) != 1 || ds[0].Name != "nvme0n1" {
		t.Fatalf("disks = %v, want nvme0n1 alone", diskNames(ds))
	}
	d := ds[0]
	probetest.Near(t, "busy (io_ticks ran 1% ahead of the clock)", d.BusyPct, 100)
	probetest.Near(t, "read IOPS", d.ReadIOPS, 50000)
	probetest.Near(t, "read bytes/s", d.ReadBytesPerSec, 50000*4096)
	probetest.NearPtr(t, "await", d.AwaitMs, 0.5)
	if d.InFlight != 64 {
		t.Errorf("in flight = %d", d.InFlight)
	}
}

func TestDiskCounterWrapResetsInsteadOfNegative(t *testing.T) {
	s := probetest.NewSnapshots(t, "backwards")
	p := NewDisk(s.Roots(), DiskOptions{})
	s.MustCollect(p, "t0")
	if ds := s.MustCollect(p, "t1").Disks; len(ds) != 0 {
		t.Fatalf("wrapped counters gave %+v, want no reading this interval", ds)
	}
	ds := s.MustCollect(p, "t2").Disks
	if len(ds) != 1 {
		t.Fatalf("disks after wrap = %+v", ds)
	}
	probetest.Near(t, "read IOPS after wrap", ds[0].ReadIOPS, 100)
	probetest.Near(t, "read bytes/s after wrap", ds[0].ReadBytesPerSec, 800*512)
}

func TestDiskThatDisappearsAndReturnsStartsOver(t *testing.T) {
	s := probetest.NewSnapshots(t, "disappearing")
	p := NewDisk(s.Roots(), DiskOptions{})
	s.MustCollect(p, "t0")
	for _, snap := range []string{"t1", "t2"} {
		ds := s.MustCollect(p, snap).Disks
		if got := diskNames(ds); len(got) != 1 || got[0] != "sda" {
			t.Fatalf("%s: disks = %v, want sda only (sdb gone, then back without a baseline)", snap, got)
		}
		for _, d := range ds {
			if d.ReadBytesPerSec < 0 || d.ReadIOPS < 0 {
				t.Fatalf("negative rate %+v", d)
			}
		}
	}
}

func TestIsWholeByNameWithoutSys(t *testing.T) {
	p := &Disk{}
	for name, want := range map[string]bool{
		"sda": true, "sda1": false, "vdb": true, "vdb3": false, "nvme0n1": true,
		"nvme0n1p2": false, "mmcblk0": true, "mmcblk0p1": false, "md0": true, "xvda": true,
	} {
		if got := p.isWhole(name); got != want {
			t.Errorf("isWhole(%q) = %v, want %v", name, got, want)
		}
	}
}
