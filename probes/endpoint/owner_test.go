package endpoint

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readListeners(t *testing.T, name string, port uint16) []listener {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "proc-net", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ls, err := parseListeners(f, port)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func TestParseListeners(t *testing.T) {
	for _, c := range []struct {
		name, file string
		port       uint16
		want       []listener
	}{
		{"a loopback listener, its accepted connection not one", "tcp", 6061, []listener{{netip.MustParseAddr("127.0.0.1"), 6061, 1000, 4242}}},
		{"the IPv4 wildcard", "tcp", 6062, []listener{{netip.MustParseAddr("0.0.0.0"), 6062, 1001, 5151}}},
		{"another loopback address", "tcp", 6063, []listener{{netip.MustParseAddr("127.0.0.2"), 6063, 1000, 6000}}},
		{"the IPv6 wildcard", "tcp6", 6062, []listener{{netip.MustParseAddr("::"), 6062, 1002, 8888}}},
		{"IPv6 loopback", "tcp6", 6064, []listener{{netip.MustParseAddr("::1"), 6064, 1000, 9999}}},
		{"a port nobody listens on", "tcp", 1, nil},
		{"a client's port is no listener", "tcp", 0xA5E6, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := readListeners(t, c.file, c.port)
			if len(got) != len(c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("got %+v, want %+v", got[i], c.want[i])
				}
			}
		})
	}
}

func TestParseListenersRefusesWhatIsNotTheKernels(t *testing.T) {
	const head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	for name, line := range map[string]string{
		"too few fields":   "   0: 0100007F:17AD 00000000:0000 0A\n",
		"an address short": "   0: 0100007:17AD 00000000:0000 0A 0:0 00:0 0 1000 0 4242\n",
		"not hex":          "   0: 0100007G:17AD 00000000:0000 0A 0:0 00:0 0 1000 0 4242\n",
		"a bad state":      "   0: 0100007F:17AD 00000000:0000 ZZ 0:0 00:0 0 1000 0 4242\n",
		"a bad uid":        "   0: 0100007F:17AD 00000000:0000 0A 0:0 00:0 0 -1 0 4242\n",
		"a bad inode":      "   0: 0100007F:17AD 00000000:0000 0A 0:0 00:0 0 1000 0 x\n",
	} {
		if ls, err := parseListeners(strings.NewReader(head+line), 6061); err == nil {
			t.Errorf("%s: read %+v", name, ls)
		}
	}
}

func TestListenerTakes(t *testing.T) {
	v4, v4b, v6 := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("::1")
	for _, c := range []struct {
		on   string
		host netip.Addr
		want bool
	}{
		{"127.0.0.1", v4, true},
		{"127.0.0.1", v4b, false},
		{"0.0.0.0", v4, true},
		{"0.0.0.0", v6, false},
		{"::", v4, true}, // dual stack unless IPV6_V6ONLY, which the table does not say
		{"::", v6, true},
		{"::1", v4, false},
		{"::ffff:127.0.0.1", v4, true},
	} {
		if got := (listener{Addr: netip.MustParseAddr(c.on)}).takes(c.host); got != c.want {
			t.Errorf("a socket on %s takes %s: %v, want %v", c.on, c.host, got, c.want)
		}
	}
}

func TestDecideProof(t *testing.T) {
	mine := listener{Addr: netip.MustParseAddr("127.0.0.1"), Port: 6061, UID: 1000, Inode: 4242}
	theirs := listener{Addr: netip.MustParseAddr("::"), Port: 6061, UID: 1001, Inode: 5151}
	for _, c := range []struct {
		name string
		p    proof
		want string // "" proven; else in the error
	}{
		{"the announced process of the user holds the socket", proof{[]listener{mine}, 7, 1000, []int{1000, 1000}, map[uint64]bool{4242: true}}, ""},
		{"nobody listens (the loader is gone)", proof{nil, 7, 1000, nil, nil}, "nothing listens"},
		{"another user took the port", proof{[]listener{theirs}, 7, 1000, []int{1000, 1000}, nil}, "user 1001's"},
		{"the PID is another user's now", proof{[]listener{mine}, 7, 1000, []int{1001, 1001}, nil}, "pid 7 is user 1001's"},
		{"a setuid process of another user", proof{[]listener{mine}, 7, 1000, []int{1000, 0}, nil}, "user 0's"},
		{"the PID lives but does not hold the socket", proof{[]listener{mine}, 7, 1000, []int{1000, 1000}, map[uint64]bool{1: true}}, "not pid 7's"},
		{"a second listener that would take the connection is another's", proof{[]listener{mine, theirs}, 7, 1000, []int{1000, 1000}, map[uint64]bool{4242: true}}, "user 1001's"},
		{"no PID: the user's listener", proof{[]listener{mine}, 0, 1000, nil, nil}, ""},
		{"no PID: another user's listener", proof{[]listener{mine}, 0, 1001, nil, nil}, "user 1000's, not user 1001's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := decideProof(c.p, "127.0.0.1:6061")
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("not proven: %v", err)
			case c.want != "" && (err == nil || !errors.Is(err, ErrNotProven) || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an ErrNotProven saying %q", err, c.want)
			}
		})
	}
}

// FuzzParseListeners: any text is a table or an error, never a panic, and
// every listener read is on the port asked for.
func FuzzParseListeners(f *testing.F) {
	for _, name := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join("testdata", "proc-net", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(6061))
		f.Add(b, uint16(6062))
	}
	f.Add([]byte("h\n 0: 0100007F:17AD 0:0 0A 0 0 0 1 0 2\n"), uint16(6061))
	f.Fuzz(func(t *testing.T, b []byte, port uint16) {
		ls, err := parseListeners(strings.NewReader(string(b)), port)
		if err != nil {
			return
		}
		for _, l := range ls {
			if l.Port != port || !l.Addr.IsValid() {
				t.Fatalf("read %+v for port %d", l, port)
			}
		}
	})
}
