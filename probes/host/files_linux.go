//go:build linux

package host

import (
	"bytes"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/sample"
)

// readOpenFiles looks at the descriptors of the focused processes that
// read (files.go says the bounds), in up to filesRounds rounds: each round
// lists a process's data files and compares them with the listing before
// (the last tick's last, at the first); the highest-numbered descriptor on
// a file opened since is inspected at once, while it is still open, and
// ends that process's look. The processes looked at get their figures
// over their last looks; the others (not reading now) none.
func (p *Proc) readOpenFiles(list []sample.Proc, now time.Time) {
	type look struct {
		i     int // in list and p.selected
		found *sample.OpenFile
		first bool
	}
	var looks []look
	for i := range list {
		e := p.selected[i]
		if r := list[i].ReadBytesPerSec; r != nil && *r >= filesReadRate && len(looks) < filesLooksPerTick {
			looks = append(looks, look{i: i, first: e.files == nil})
			if e.files == nil {
				e.files = &fileLook{prev: make(map[int]uint64)}
			}
		}
	}
	for round := range filesRounds {
		pending := false
		for k := range looks {
			l := &looks[k]
			if l.found != nil {
				continue
			}
			if round > 0 && !pending {
				probes.SleepUntil(time.Now().Add(filesRoundGap)) // only while a look is still pending
			}
			pending = true
			e := p.selected[l.i]
			fd, target := p.listFiles(e)
			if fd >= 0 && !(l.first && round == 0) { // a first listing has nothing to tell new files from
				if of, ok := p.inspect(e.pid, fd, target, now); ok {
					l.found = of
				}
			}
		}
		if !pending {
			break
		}
	}
	for _, l := range looks {
		fl := p.selected[l.i].files
		r := lookResult{}
		if of := l.found; of != nil {
			r = lookResult{opened: true, sized: !of.SizeUnknown, bytes: of.Bytes}
		}
		fl.add(r, l.found)
		list[l.i].Files = fl.summary()
	}
}

// listFiles lists a process's data files now (its lowest filesMaxFDs
// descriptors on regular paths that are not libraries, devices, shared
// memory or deleted), keeps them as the next listing's "before", and
// returns the highest descriptor on a file that was not there at the
// last listing, and its path: -1 if none.
func (p *Proc) listFiles(e *procEntry) (int, string) {
	fl := e.files
	p.fds = p.fds[:0]
	_ = p.r.ReadDirNamesMax(p.pidPath(e.pid, "", 0, "/fd"), filesMaxFDs, func(name []byte) {
		if fd, ok := probes.ParseUint(name); ok && fd > 2 && fd < 1<<30 {
			p.fds = append(p.fds, int(fd))
		}
	})
	if p.fdsNow == nil {
		p.fdsNow = make(map[int]uint64)
	}
	cur := p.fdsNow
	clear(cur)
	opened, openedPath := -1, ""
	var link [512]byte
	for _, fd := range p.fds {
		k, err := syscall.Readlink(p.pidPath(e.pid, "/fd/", fd, ""), link[:])
		if err != nil || k <= 1 || k == len(link) || link[0] != '/' {
			continue // a socket, a pipe, an anonymous inode; or a path too long to be sure of
		}
		target := link[:k]
		h := pathHash(target)
		if was, ok := fl.prev[fd]; ok && was == h {
			cur[fd] = h
			continue
		}
		t := string(target)
		if systemPath(t) || strings.HasSuffix(t, " (deleted)") {
			continue
		}
		cur[fd] = h
		if fd > opened {
			opened, openedPath = fd, t
		}
	}
	fl.prev, p.fdsNow = cur, fl.prev // this listing is the next one's "before"
	return opened, openedPath
}

// inspect reads what a process's descriptor fd, on target, is: a data
// file opened for reading (not a directory, not written only), its size
// and its file system. It opens the descriptor's magic link with O_PATH
// (no open of the file itself, no permission check of its file system)
// and reads the file's mount, type and size from that: the same file,
// even where the process has since closed fd and opened another on its
// number. The flags and position are the descriptor's own (its fdinfo),
// read between two looks that find target, with its inode checked
// against the file's where both are known.
func (p *Proc) inspect(pid, fd int, target string, now time.Time) (*sample.OpenFile, bool) {
	if fd < 0 {
		return nil, false
	}
	// The file first, then what the process's descriptor says of it, then
	// the descriptor's target once more: flags and position read between
	// two looks that both find target are target's (a number closed and
	// reused in between shows as another path).
	h, err := unix.Open(p.pidPath(pid, "/fd/", fd, ""), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(h)
	var link [512]byte
	if k, err := syscall.Readlink("/proc/self/fd/"+strconv.Itoa(h), link[:]); err != nil || string(link[:k]) != target {
		return nil, false // the number was reused between the looks
	}
	info, ok := readFdinfo(p.pidPath(pid, "/fdinfo/", fd, ""))
	if !ok || info.flags&syscall.O_ACCMODE == syscall.O_WRONLY || info.flags&syscall.O_DIRECTORY != 0 {
		return nil, false
	}
	if k, err := syscall.Readlink(p.pidPath(pid, "/fd/", fd, ""), link[:]); err != nil || string(link[:k]) != target {
		return nil, false // reused while its fdinfo was read
	}
	own, ok := readFdinfo("/proc/self/fdinfo/" + strconv.Itoa(h))
	if !ok {
		return nil, false
	}
	of := &sample.OpenFile{Path: sample.Printable(truncPath(target)), Bytes: info.pos, SizeUnknown: true}
	m, known := p.mountOf(pid, own.mntID, now)
	if known {
		of.FS, of.Mount, of.Network = sample.Printable(m.fstype), sample.Printable(truncPath(m.point)), NetworkFS(m.fstype)
	}
	if known && cachedAttrs(m.fstype) {
		var st unix.Statx_t
		err := unix.Statx(h, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|unix.STATX_SIZE|unix.STATX_INO, &st)
		switch {
		case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
			return nil, false
		case err == nil && info.ino != 0 && st.Mask&unix.STATX_INO != 0 && st.Ino != info.ino:
			return nil, false // the same path opened anew on the number: another file
		case err == nil:
			of.Bytes, of.SizeUnknown = st.Size, false
		}
		// An error (root on a user's FUSE mount without allow_other):
		// the size stays unknown, the bytes read stand for it.
	}
	return of, true
}

// fdinfo is what /proc/PID/fdinfo/FD says of a descriptor.
type fdinfo struct {
	pos, flags uint64
	mntID      int
	ino        uint64 // 0 where fdinfo has no "ino:" line (before Linux 5.14)
}

// readFdinfo reads a descriptor's position, flags and mount ID: the
// first 256 bytes of its fdinfo, where they are (the lines after, one per
// lock or watch, can be many).
func readFdinfo(path string) (fdinfo, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fdinfo{}, false
	}
	defer syscall.Close(fd)
	var buf [256]byte
	n, err := syscall.Read(fd, buf[:])
	if err != nil || n <= 0 {
		return fdinfo{}, false
	}
	return parseFdinfo(buf[:n])
}

// parseFdinfo reads "pos:", "flags:" (octal) and "mnt_id:" lines, and
// "ino:" where there is one.
func parseFdinfo(b []byte) (fdinfo, bool) {
	info, have := fdinfo{mntID: -1}, 0
	for line := range bytes.Lines(b) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch string(k) {
		case "pos":
			if n, err := strconv.ParseUint(string(v), 10, 64); err == nil {
				info.pos, have = n, have|1
			}
		case "flags":
			if n, err := strconv.ParseUint(string(v), 8, 64); err == nil {
				info.flags, have = n, have|2
			}
		case "mnt_id":
			if n, err := strconv.Atoi(string(v)); err == nil && n >= 0 {
				info.mntID, have = n, have|4
			}
		case "ino":
			if n, err := strconv.ParseUint(string(v), 10, 64); err == nil {
				info.ino = n
			}
		}
	}
	return info, have == 7
}

// mountOf is the mount of a process's mount namespace with ID id: its
// table is read once per namespace, again after a minute, or after 10 s
// when an ID is not in it (a mount made since).
func (p *Proc) mountOf(pid, id int, now time.Time) (mount, bool) {
	var link [64]byte
	k, err := syscall.Readlink(p.pidPath(pid, "", 0, "/ns/mnt"), link[:])
	if err != nil || k == len(link) {
		return mount{}, false
	}
	ns := p.mountNS[string(link[:k])]
	if ns != nil {
		if m, ok := ns.mounts[id]; ok && now.Sub(ns.at) < time.Minute {
			return m, true
		}
		if now.Sub(ns.at) < 10*time.Second {
			if m, ok := ns.mounts[id]; ok {
				return m, true
			}
			return mount{}, false
		}
	}
	f, err := probes.OpenRegular(p.pidPath(pid, "", 0, "/mountinfo"))
	if err != nil {
		return mount{}, false
	}
	mounts := parseMountinfo(f)
	f.Close()
	if p.mountNS == nil {
		p.mountNS = make(map[string]*nsMounts)
	}
	for k := range p.mountNS { // the bound: one out, any one
		if len(p.mountNS) < mountNamespaces {
			break
		}
		delete(p.mountNS, k)
	}
	p.mountNS[string(link[:k])] = &nsMounts{mounts: mounts, at: now}
	m, ok := mounts[id]
	return m, ok
}
