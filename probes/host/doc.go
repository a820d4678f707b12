// Package host is the probe family that reads the machine from /proc and
// /sys: CPU (cpu.go), memory (mem.go), disks (disk.go), network (net.go),
// pressure stall information (psi.go), and processes with their threads
// and mapped files (proc.go, maps.go), whose reading proctable.go shares
// with the training finder.
//
// Each probe reads a root injected at construction (probes.Roots) and
// parses in a pure function, tested on the fixture trees under testdata/
// (written by testdata/gen.py) and fuzzed. It imports the probes framework
// and sample, and no other family.
package host
