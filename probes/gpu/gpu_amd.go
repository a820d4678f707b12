package gpu

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/sample"
)

// amdVendorID is AMD's PCI vendor ID, as sysfs writes it.
const amdVendorID = "0x1002"

// AMD reads AMD GPUs from the amdgpu driver's sysfs files
// (Documentation/gpu/amdgpu/thermal.rst and driver-misc.rst):
// device/gpu_busy_percent, mem_info_vram_used/total (bytes), and hwmon's
// power1_average or power1_input (µW), power1_cap (µW), temp1_input (m°C).
type AMD struct {
	drm string // SYS/class/drm
	r   probes.FileReader
}

// NewAMD returns the AMD source reading sysRoot/class/drm.
func NewAMD(sysRoot string) *AMD {
	if sysRoot == "" {
		sysRoot = "/sys"
	}
	return &AMD{drm: filepath.Join(sysRoot, "class", "drm")}
}

// Vendor implements GPUSource.
func (p *AMD) Vendor() string { return "amd" }

// cards lists cardN entries (not connectors like card0-DP-1), in number order.
func (p *AMD) cards() ([]int, error) {
	ents, err := os.ReadDir(p.drm)
	if err != nil {
		return nil, err
	}
	var ns []int
	for _, e := range ents {
		if n, ok := strings.CutPrefix(e.Name(), "card"); ok {
			if i, err := strconv.Atoi(n); err == nil {
				ns = append(ns, i)
			}
		}
	}
	slices.Sort(ns)
	return ns, nil
}

// readNumber reads a sysfs file holding one integer.
func (p *AMD) readNumber(path string) (float64, error) {
	b, err := p.r.Read(path)
	if err != nil {
		return 0, err
	}
	v, ok := probes.ParseUint(bytes.TrimSpace(b))
	if !ok {
		return 0, errors.New("not a number: " + strconv.Quote(string(bytes.TrimSpace(b))))
	}
	return float64(v), nil
}

// GPUs implements GPUSource.
func (p *AMD) GPUs(context.Context) ([]sample.GPU, error) {
	cards, err := p.cards()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, probes.Unavailable("no %s", p.drm)
		}
		return nil, err
	}
	var out []sample.GPU
	for _, n := range cards {
		if g, ok := p.card(n); ok {
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		return nil, probes.Unavailable("no AMD GPU")
	}
	return out, nil
}

// card reads DRM card n; false when it is not an AMD device (or its vendor
// cannot be read). A reading that fails is nil with its reason.
func (p *AMD) card(n int) (sample.GPU, bool) {
	dev := filepath.Join(p.drm, "card"+strconv.Itoa(n), "device")
	vendor, err := p.r.Read(filepath.Join(dev, "vendor"))
	if err != nil || string(bytes.TrimSpace(vendor)) != amdVendorID {
		return sample.GPU{}, false
	}
	g := sample.GPU{Index: n, Vendor: "amd", Name: "AMD GPU", Processes: []sample.GPUProcess{}}
	if b, err := p.r.Read(filepath.Join(dev, "product_name")); err == nil && len(bytes.TrimSpace(b)) > 0 {
		g.Name = string(bytes.TrimSpace(b))
	}
	if b, err := p.r.Read(filepath.Join(dev, "uevent")); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "PCI_SLOT_NAME="); ok {
				g.BusID = v
			}
		}
	}
	if v, err := p.readNumber(filepath.Join(dev, "gpu_busy_percent")); err == nil {
		g.UtilPct = probes.Ptr(v)
	} else {
		amdMiss(&g, "util_pct", err)
	}
	if v, err := p.readNumber(filepath.Join(dev, "mem_busy_percent")); err == nil {
		g.MemUtilPct = probes.Ptr(v)
	}
	if v, err := p.readNumber(filepath.Join(dev, "mem_info_vram_used")); err == nil {
		g.MemUsedBytes = probes.Ptr(uint64(v))
	} else {
		amdMiss(&g, "mem_used_bytes", err)
	}
	if v, err := p.readNumber(filepath.Join(dev, "mem_info_vram_total")); err == nil {
		g.MemTotalBytes = probes.Ptr(uint64(v))
	} else {
		amdMiss(&g, "mem_total_bytes", err)
	}
	p.readHwmon(dev, &g)
	return g, true
}

// readHwmon fills the card's power, power limit and temperature from its
// hwmon folder (amdgpu reports microwatts and millidegrees Celsius).
func (p *AMD) readHwmon(dev string, g *sample.GPU) {
	hw := p.hwmon(dev)
	if hw == "" {
		amdMiss(g, "power_watts", fs.ErrNotExist)
		amdMiss(g, "temp_c", fs.ErrNotExist)
		return
	}
	// Newer kernels report power1_input, older power1_average.
	if v, err := p.readNumber(filepath.Join(hw, "power1_average")); err == nil {
		g.PowerWatts = probes.Ptr(v / 1e6)
	} else if v, err := p.readNumber(filepath.Join(hw, "power1_input")); err == nil {
		g.PowerWatts = probes.Ptr(v / 1e6)
	} else {
		amdMiss(g, "power_watts", err)
	}
	if v, err := p.readNumber(filepath.Join(hw, "power1_cap")); err == nil {
		g.PowerLimitWatts = probes.Ptr(v / 1e6)
	}
	if v, err := p.readNumber(filepath.Join(hw, "temp1_input")); err == nil {
		g.TempC = probes.Ptr(v / 1000)
	} else {
		amdMiss(g, "temp_c", err)
	}
}

// amdMiss marks a field unavailable with err's reason, a file the driver
// does not have as "not reported by this driver".
func amdMiss(g *sample.GPU, field string, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		markUnavailable(g, field, "not reported by this driver")
	} else {
		markUnavailable(g, field, err.Error())
	}
}

// hwmon returns the device's hwmon folder, or "" if it has none.
func (p *AMD) hwmon(dev string) string {
	ents, err := os.ReadDir(filepath.Join(dev, "hwmon"))
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "hwmon") {
			return filepath.Join(dev, "hwmon", e.Name())
		}
	}
	return ""
}
