package job

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gpuwatch/gpuwatch/probes"
)

// A process in a private cgroup namespace (every container on cgroup v2
// by default: containerd, CRI-O, Docker) reads other cgroups' paths in
// /proc/PID/cgroup relative to its own namespace's root:
// "0::/../../kubepods-burstable-pod….slice/cri-containerd-….scope"
// (cgroup_namespaces(7)). gpuwatch in a DaemonSet's pod reads the host's
// cgroup tree at --sys-root (the host's /sys mounted there); to find such
// a cgroup in it, it needs where its own namespace root lies in that
// tree: the folder that is the same kernfs node (device and inode) as
// its own /sys/fs/cgroup, which the runtime mounts at the namespace root.

// Bounds on the search for the namespace root: a node has a few thousand
// cgroups; the search runs once.
const (
	maxCgroupWalk  = 100_000
	maxCgroupDepth = 16
)

var errWalkDone = errors.New("found")

// cgroupNSRoot is the path, under hostCgroup (the host's cgroup2 mount),
// of the folder that is ownCgroup (gpuwatch's own view of its cgroup
// namespace root).
func cgroupNSRoot(hostCgroup, ownCgroup string) (string, error) {
	var own syscall.Stat_t
	if err := syscall.Stat(ownCgroup, &own); err != nil {
		return "", err
	}
	found, n := "", 0
	err := filepath.WalkDir(hostCgroup, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a cgroup removed during the walk
		}
		if !d.IsDir() {
			return nil
		}
		if n++; n > maxCgroupWalk {
			return fmt.Errorf("more than %d cgroups under %s", maxCgroupWalk, hostCgroup)
		}
		rel, _ := filepath.Rel(hostCgroup, p)
		if rel != "." && strings.Count(rel, string(filepath.Separator)) >= maxCgroupDepth {
			return filepath.SkipDir
		}
		var st syscall.Stat_t
		if syscall.Stat(p, &st) == nil && st.Dev == own.Dev && st.Ino == own.Ino {
			found = "/" + filepath.ToSlash(rel)
			return errWalkDone
		}
		return nil
	})
	switch {
	case errors.Is(err, errWalkDone):
		return path.Clean(found), nil
	case err != nil:
		return "", err
	}
	return "", fmt.Errorf("%s is not under %s", ownCgroup, hostCgroup)
}

// resolveNS turns paths relative to gpuwatch's cgroup namespace ("/..…")
// into paths in the tree at --sys-root; others are left as they are.
func (p *Cgroup) resolveNS(paths cgroupPaths) error {
	for ctl, c := range paths {
		if c != "/.." && !strings.HasPrefix(c, "/../") {
			continue
		}
		if !p.nsDone {
			p.nsDone = true
			own := p.ownCgroup
			if own == "" {
				own = "/sys/fs/cgroup"
			}
			if filepath.Clean(p.roots.Sys) == "/sys" {
				p.nsErr = errors.New("gpuwatch runs in a cgroup namespace and sees only its own cgroups: mount the host's /sys and give it as --sys-root")
			} else {
				p.nsRoot, p.nsErr = cgroupNSRoot(filepath.Join(p.roots.Sys, "fs/cgroup"), own)
			}
		}
		if p.nsErr != nil {
			return probes.Unavailable("cgroup %s is outside gpuwatch's cgroup namespace: %v", c, p.nsErr)
		}
		paths[ctl] = path.Join(p.nsRoot, c)
	}
	return nil
}
