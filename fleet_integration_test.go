//go:build integration

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/fleet"
)

// TestFleetFromARealPrometheus: two `gpuwatch serve` processes on
// loopback — node A attached to two loader ranks, rank 1 input-bound
// (num_workers=0, heavy decoding), node B to one healthy loader — scraped
// by Debian's Prometheus; `gpuwatch fleet` reads both nodes and A's ranks
// from Prometheus's API and puts A's rank 1 first, as the fleet's
// straggler.
func TestFleetFromARealPrometheus(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (CI installs Debian's)")
	}
	rankLoader := func(rank string, args ...string) string {
		cmd := exec.Command(binary(t), append([]string{"loader", "--listen", "127.0.0.1:0", "--progress-every", "1h", "--dataset-size", "64MiB", "--step-time", "20ms"}, args...)...)
		cmd.Env = append(os.Environ(), "RANK="+rank, "WORLD_SIZE=2")
		_, out := startCmd(t, cmd)
		first := make([]byte, 512)
		n, _ := out.Read(first)
		return loaderURL(t, string(first[:n]))
	}
	r0 := rankLoader("0", "--workers", "2", "--decode-cost", "50us")
	r1 := rankLoader("1", "--workers", "0", "--decode-cost", "2ms")
	healthy := rankLoader("", "--workers", "2", "--decode-cost", "50us")
	nodeA, nodeB := freePort(t), freePort(t)
	for _, s := range [][]string{{nodeA, r0, r1}, {nodeB, healthy}} {
		args := []string{"serve", "--listen", s[0], "--interval", "500ms", "--discover=false"}
		for _, u := range s[1:] {
			args = append(args, "--attach", u)
		}
		if _, _, first := startBinary(t, args...); !strings.Contains(first, s[0]) {
			t.Fatalf("serve: %q", first)
		}
	}
	promAddr, promLog := startPrometheus(t, promBin, nodeA, nodeB)

	// Poll (bounded) until Prometheus has scraped both nodes' ranks.
	var snap fleet.Snapshot
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := exec.Command(binary(t), "fleet", "http://"+promAddr, "--job", "gpuwatch", "--once", "--json").Output()
		if err == nil && json.Unmarshal(out, &snap) == nil && len(snap.Rows) >= 4 && snap.Rows[0].FleetStraggler {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fleet never showed both nodes and the straggler first: %+v (%v)\nPrometheus log:\n%s", snap.Rows, err, promLog)
		}
		time.Sleep(500 * time.Millisecond)
	}
	top := snap.Rows[0]
	if top.Instance != nodeA || top.Rank == nil || *top.Rank != 1 || top.WaitShare == nil || *top.WaitShare < 0.2 {
		t.Fatalf("first row %+v: want node A's rank 1, waiting", top)
	}
	instances := map[string]int{}
	for _, r := range snap.Rows {
		instances[r.Instance]++
		if r.Kind == "" {
			t.Errorf("row without the node's verdict: %+v", r)
		}
	}
	if instances[nodeA] != 3 || instances[nodeB] != 1 {
		t.Errorf("rows per node %v: want A (node + 2 ranks) and B (node)", instances)
	}
	// The text form of the same finding. Each call is a new query, and the
	// mark needs the straggler's wait at twice the next one's: on a loaded
	// 2-core machine rank 0 waits too at moments (CI3 saw 58 % against 31 %),
	// so ask again until the deadline, as above.
	var text []byte
	for {
		text, err = exec.Command(binary(t), "fleet", "http://"+promAddr, "--once").Output()
		if err == nil && strings.Contains(string(text), "◀ the fleet's straggler") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fleet --once never marked the fleet's straggler: %v\n%s", err, text)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("fleet:\n%s", text)
}
