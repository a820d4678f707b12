package peeruid

import (
	"errors"
	"net/netip"
	"runtime"
	"testing"
)

// A /proc/net/tcp with a listener on 9400, a client of uid 65534 connected
// to it from port 40000, the server's end of that connection (uid 0), and
// a client of 65534 gone to TIME_WAIT (its uid printed 0). Little-endian
// words, as on x86 and arm64.
const fixtureTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:24B8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:9C40 0100007F:24B8 01 00000000:00000000 00:00000000 00000000 65534        0 1002 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:24B8 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 1003 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:9C41 0100007F:24B8 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000
`

// A tcp6 row of uid 1000: a dual-stack client, v4-mapped, to 127.0.0.1:9400.
const fixtureTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0000000000000000FFFF00000100007F:9C42 0000000000000000FFFF00000100007F:24B8 01 00000000:00000000 00:00000000 00000000  1000        0 2001 1 0000000000000000 20 4 30 10 -1
`

func TestOwnerUIDReadsTheClientsRow(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("the fixture's words are little-endian")
	}
	local := netip.MustParseAddrPort("127.0.0.1:9400")
	cases := []struct {
		name  string
		table string
		peer  string
		v6    bool
		uid   uint32
		err   bool
	}{
		{"the client's row, not the server's", fixtureTCP, "127.0.0.1:40000", false, 65534, false},
		{"TIME_WAIT prints 0: not root's", fixtureTCP, "127.0.0.1:40001", false, 0, true},
		{"no row", fixtureTCP, "127.0.0.1:40002", false, 0, true},
		{"v4-mapped in tcp6", fixtureTCP6, "127.0.0.1:40002", true, 1000, false},
		{"a cut row", "   1: 0100007F:9C40 0100007F:24B8 01 0:0", "127.0.0.1:40000", false, 0, true},
		{"a uid that is not a number", "   1: 0100007F:9C40 0100007F:24B8 01 0:0 00:0 0 x 0 0\n", "127.0.0.1:40000", false, 0, true},
	}
	for _, c := range cases {
		uid, err := ownerUID([]byte(c.table), netip.MustParseAddrPort(c.peer), local, c.v6)
		if (err != nil) != c.err || uid != c.uid {
			t.Errorf("%s: uid %d, err %v; want %d, error %v", c.name, uid, err, c.uid, c.err)
		}
		if err != nil && !errors.Is(err, ErrUnknown) {
			t.Errorf("%s: %v does not wrap ErrUnknown", c.name, err)
		}
	}
}
