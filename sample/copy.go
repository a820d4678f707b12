package sample

import (
	"fmt"
	"strconv"
)

// Summary says the loop's copy to the GPU in one line for views and
// reports: "to the GPU 1.0MiB a batch: the loop 680µs in the copy, the
// GPU 610µs, 1.6GiB/s (3 % of its PCIe 5.0 x16 link's 59GiB/s);
// pageable, blocking". What was not read is left out.
func (c *HostCopy) Summary() string {
	if c == nil {
		return ""
	}
	s := fmt.Sprintf("to the GPU %s a batch: the loop %s in the copy", FormatBytes(c.BytesPerBatch), FormatDuration(c.HostMsPerBatch/1000))
	if c.DeviceMsPerBatch != nil {
		s += ", the GPU " + FormatDuration(*c.DeviceMsPerBatch/1000)
	}
	if c.BytesPerSec != nil {
		s += ", " + FormatBytes(*c.BytesPerSec) + "/s"
		if c.LinkShare != nil && c.LinkBytesPerSec != nil {
			s += " (" + strconv.FormatFloat(100**c.LinkShare, 'f', 0, 64) + " % of its " + Printable(c.Link) + " link's " + FormatBytes(*c.LinkBytesPerSec) + "/s)"
		}
	}
	return s + "; " + part(c.PinnedShare, "pinned", "pageable") + ", " + part(c.NonBlockingShare, "non_blocking", "blocking")
}

// part names a share of the bytes: all, none, or the share.
func part(share float64, all, none string) string {
	switch {
	case share >= 0.995:
		return all
	case share <= 0.005:
		return none
	}
	return strconv.FormatFloat(100*share, 'f', 0, 64) + " % " + all
}
