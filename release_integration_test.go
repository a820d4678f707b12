//go:build integration

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/fleet"
)

// The installed package, as scripts/ci-release.sh leaves it
// (apt-get install ./dist/gpuwatch_*_amd64.deb).
const (
	installedBin  = "/usr/bin/gpuwatch"
	installedUnit = "/usr/lib/systemd/system/gpuwatch.service"
)

// sandbox runs "$@" the way gpuwatch.service's sandbox would, on a machine
// whose PID 1 is not systemd (CI's), in the one process it is started as
// (unshare, sh, setpriv and gpuwatch exec each other): a mount namespace of
// its own where every mount is read-only (ProtectSystem=strict,
// ReadOnlyPaths=/proc /sys), an empty /home and /root (ProtectHome=yes) and
// a private /tmp (PrivateTmp=yes); then the unit's user, no capabilities
// and no new privileges (User=, CapabilityBoundingSet=, NoNewPrivileges=yes).
// The system-call filter and address families are not reproduced:
// `systemd-analyze verify` and `security` read them.
const sandbox = `set -eu
user=$1; shift
mount --make-rprivate /
awk '{print $2}' /proc/self/mounts | while read -r m; do
	case "$m" in /dev|/dev/*) continue ;; esac
	mount -o remount,bind,ro "$m" 2>/dev/null || true
done
mount -t tmpfs -o mode=1777 tmpfs /tmp
for h in /home /root; do [ -d "$h" ] && mount -t tmpfs -o ro,mode=0755 tmpfs "$h"; done
exec setpriv --reuid="$user" --regid="$user" --init-groups --no-new-privs \
	--bounding-set=-all --inh-caps=-all -- "$@"`

// TestInstalledServiceScrapedByPrometheus: the installed package's node
// service, run as its unit says (its ExecStart, its environment file, its
// user) inside the unit's sandbox, attached to an input-bound loader
// (num_workers=0, heavy decoding); Debian's Prometheus scrapes it, and
// `gpuwatch fleet` shows the node waiting for its input, as the README's
// cluster section says.
func TestInstalledServiceScrapedByPrometheus(t *testing.T) {
	if os.Getenv("GPUWATCH_RELEASE_TESTS") != "1" {
		t.Skip("GPUWATCH_RELEASE_TESTS=1 runs it on a machine with the package installed (scripts/ci-release.sh)")
	}
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus not installed: apt-get install prometheus")
	}
	for _, f := range []string{installedBin, installedUnit} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the package is not installed: %v", err)
		}
	}
	unit, err := readUnit(installedUnit)
	if err != nil {
		t.Fatal(err)
	}
	svcUser, err := user.Lookup(unit.user)
	if err != nil {
		t.Fatalf("the unit's user: %v (the package's postinstall creates it)", err)
	}

	ld := exec.Command(installedBin, "loader", "--listen", "127.0.0.1:0", "--progress-every", "1h",
		"--dataset-size", "64MiB", "--step-time", "20ms", "--workers", "0", "--decode-cost", "2ms")
	_, out := startCmd(t, ld)
	first := make([]byte, 512)
	n, _ := out.Read(first)
	loader := loaderURL(t, string(first[:n]))

	// What `systemctl edit gpuwatch` would add: this test's port and loader.
	addr := freePort(t)
	unit.env["GPUWATCH_LISTEN"] = addr
	unit.env["ARGS"] = unit.env["ARGS"] + " --interval 500ms --attach " + loader
	argv, err := unit.execStart()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ExecStart as %s: %q", unit.user, argv)
	svc := exec.Command("unshare", append([]string{"--mount", "--", "sh", "-c", sandbox, "sh", unit.user}, argv...)...)
	svc.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + svcUser.HomeDir, "LANG=C.UTF-8"}
	_, svcOut := startCmd(t, svc)
	line, err := bufio.NewReader(svcOut).ReadString('\n')
	if !strings.Contains(line, addr) {
		t.Fatalf("the service did not start: %q %v", line, err)
	}
	promtoolCheck(t, "http://"+addr+"/metrics")
	checkServiceCredentials(t, addr, svcUser.Uid)

	promAddr, promLog := startPrometheus(t, promBin, addr)
	var snap fleet.Snapshot
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, err := exec.Command(installedBin, "fleet", "http://"+promAddr, "--job", "gpuwatch", "--once", "--json").Output()
		if err == nil && json.Unmarshal(out, &snap) == nil && len(snap.Rows) > 0 &&
			snap.Rows[0].WaitShare != nil && *snap.Rows[0].WaitShare >= 0.2 && snap.Rows[0].Kind != "warming_up" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fleet never showed the node waiting for input: %+v (%v)\nPrometheus log:\n%s", snap.Rows, err, promLog)
		}
		time.Sleep(500 * time.Millisecond)
	}
	row := snap.Rows[0]
	if row.Instance != addr || row.Kind == "healthy" || row.Kind == "idle" {
		t.Fatalf("fleet's first row %+v: want the service at %s with a bottleneck", row, addr)
	}
	t.Logf("fleet: %s %s, waits %.0f %% for input", row.Instance, row.Kind, 100**row.WaitShare)
}

// checkServiceCredentials finds the process serving on addr and checks
// that it runs as uid with no capabilities and no new privileges.
func checkServiceCredentials(t *testing.T, addr, uid string) {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.HasPrefix(string(cmdline), installedBin+"\x00serve\x00") || !strings.Contains(string(cmdline), addr) {
			continue
		}
		status, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"Uid:\t" + uid + "\t" + uid, "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1"}
		for _, w := range want {
			if !strings.Contains(string(status), w) {
				t.Errorf("the service (pid %s): want %q in its status:\n%s", e.Name(), w, status)
			}
		}
		return
	}
	t.Fatalf("no %s serve process on %s", installedBin, addr)
}

// unitFile is what the test reads of a systemd unit: its user, its
// environment (Environment= then EnvironmentFile=, as systemd.exec(5)
// orders them) and its ExecStart= line.
type unitFile struct {
	user, exec string
	env        map[string]string
}

// readUnit reads the [Service] settings the test needs from path.
func readUnit(path string) (*unitFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	u := &unitFile{env: map[string]string{}}
	var envFiles []string
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		switch {
		case !ok || strings.HasPrefix(line, "#"):
		case k == "User":
			u.user = v
		case k == "ExecStart":
			u.exec = v
		case k == "Environment":
			for _, kv := range strings.Fields(v) {
				ek, ev, _ := strings.Cut(kv, "=")
				u.env[ek] = ev
			}
		case k == "EnvironmentFile":
			envFiles = append(envFiles, v)
		}
	}
	for _, f := range envFiles {
		b, err := os.ReadFile(strings.TrimPrefix(f, "-"))
		if err != nil {
			if strings.HasPrefix(f, "-") && os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
			if ok && !strings.HasPrefix(line, "#") {
				u.env[k] = strings.Trim(v, `"'`)
			}
		}
	}
	if u.user == "" || u.exec == "" {
		return nil, fmt.Errorf("%s: no User= or ExecStart=", path)
	}
	return u, nil
}

// execStart expands ExecStart= as systemd.service(5) does: ${VAR} is one
// word, $VAR is split at white space, an unset one is empty.
func (u *unitFile) execStart() ([]string, error) {
	var argv []string
	for _, w := range strings.Fields(u.exec) {
		switch {
		case strings.HasPrefix(w, "${") && strings.HasSuffix(w, "}"):
			argv = append(argv, u.env[w[2:len(w)-1]])
		case strings.HasPrefix(w, "$"):
			argv = append(argv, strings.Fields(u.env[w[1:]])...)
		case strings.Contains(w, "$"):
			return nil, fmt.Errorf("ExecStart word %q: a variable inside a word is not read by this test", w)
		default:
			argv = append(argv, w)
		}
	}
	return argv, nil
}
