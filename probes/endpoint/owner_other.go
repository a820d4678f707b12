//go:build !linux

package endpoint

import (
	"fmt"
	"net/netip"

	"github.com/gpuwatch/gpuwatch/probes"
)

// proveListener cannot prove a listener here: there is no /proc/net/tcp.
// Discovery refuses announcements it cannot prove; an explicit attach
// goes on and says it is not proven.
func proveListener(procRoot string, pid, uid int, host netip.Addr, port uint16) error {
	return fmt.Errorf("%w: who listens on %s cannot be told on this system", probes.ErrUnavailable, netip.AddrPortFrom(host, port))
}

// pidHolds cannot tell here: there is no /proc/net/tcp.
func pidHolds(procRoot string, pid int, host netip.Addr, port uint16) (holding, string) {
	return holdCannotTell, "who listens cannot be told on this system"
}
