package host

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// The data files a focused process opens are looked for only while it
// reads, in its lowest descriptors, a bounded number of processes a tick:
// a process may hold a million descriptors, and a mount table can be
// hostile. docs/diagnosis.md, "Small files on network storage". The
// reading of /proc is files_linux.go; this file is what it parses and
// keeps.
const (
	// filesReadRate is the read-call bytes per second (rchar) above which
	// a process's descriptors are worth a look.
	filesReadRate = 64 << 10
	// filesMaxFDs: descriptors listed at most, the lowest first (getdents
	// order): the kernel gives each open the lowest free number, so a
	// file opened per sample sits among them.
	filesMaxFDs = 256
	// filesLooksPerTick bounds the processes looked at in one tick.
	filesLooksPerTick = 16
	// A tick's look is filesRounds listings of the descriptors,
	// filesRoundGap apart: a file per sample is open only between its
	// open and its close (on sshfs 2 ms away, a fifth of the time), so one
	// listing a second found it at a fifth of the looks; four over 9 ms
	// find it at most. Every process looked at is listed in each round,
	// so a tick's looks take 9 ms however many there are.
	filesRounds   = 4
	filesRoundGap = 3 * time.Millisecond
	// fileLookSpan is how many looks a process's figures cover (one a
	// tick while it reads: the last 20 s or so).
	fileLookSpan = 20
	mountinfoMax = 1 << 20 // bytes of a mountinfo read at most
	// mountNamespaces bounds the mount tables kept (one per namespace):
	// twice the processes a tick can look at, one dropped when full.
	mountNamespaces = 2 * filesLooksPerTick
)

// mount is one line of /proc/PID/mountinfo: where a mount is and its
// file system type. The source (a server, a bucket, an address with a
// user name) is not kept.
type mount struct {
	point, fstype string
}

// parseMountinfo reads /proc/PID/mountinfo lines ("36 35 98:0 /root
// /point opts [optional…] - fstype source superopts") into their mount
// IDs. At most mountinfoMax bytes are read, and a last line cut there is
// left out (its type could be cut short); malformed lines are left out.
func parseMountinfo(r io.Reader) map[int]mount {
	b, _ := io.ReadAll(io.LimitReader(r, mountinfoMax))
	if len(b) == mountinfoMax {
		b = b[:bytes.LastIndexByte(b, '\n')+1]
	}
	out := make(map[int]mount)
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		sep := slices.IndexFunc(f, func(b []byte) bool { return string(b) == "-" })
		if len(f) < 7 || sep < 6 || sep+1 >= len(f) {
			continue
		}
		id, err := strconv.Atoi(string(f[0]))
		if err != nil || id < 0 {
			continue
		}
		out[id] = mount{point: unescapeOctal(string(f[4])), fstype: string(f[sep+1])}
	}
	return out
}

// unescapeOctal undoes mountinfo's escapes (\040 for a space, \011, \012,
// \134 for a backslash).
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// nsMounts is one mount namespace's table, as last read.
type nsMounts struct {
	mounts map[int]mount
	at     time.Time
}

// networkFS are the file system types whose every open, read and close
// can be a round trip to another machine: NFS, SMB, the cluster file
// systems, and the FUSE clients of remote storage and object stores.
var networkFS = map[string]bool{
	"nfs": true, "nfs4": true, "cifs": true, "smb3": true, "smbfs": true, "ceph": true, "glusterfs": true,
	"lustre": true, "gpfs": true, "beegfs": true, "wekafs": true, "afs": true, "orangefs": true, "pvfs2": true,
	"9p": true, "fuse.sshfs": true, "fuse.s3fs": true, "fuse.gcsfuse": true, "fuse.goofys": true,
	"fuse.rclone": true, "fuse.mountpoint-s3": true, "fuse.juicefs": true, "fuse.blobfuse": true,
	"fuse.blobfuse2": true, "fuse.glusterfs": true, "fuse.ceph-fuse": true, "fuse.alluxio-fuse": true,
	"fuse.geesefs": true, "fuse.lustre": true,
}

// NetworkFS says whether a mountinfo file system type is network storage.
func NetworkFS(fstype string) bool { return networkFS[fstype] }

// cachedAttrs says a file's size can be read on fstype without a round
// trip to a server that may hang: local file systems, and those whose
// getattr honours AT_STATX_DONT_SYNC (NFS; FUSE since Linux 4.15, whose
// daemon can otherwise be the watched job itself). CIFS, 9p, Lustre, GPFS
// and the rest may ask their server anyway: there the size is not read.
func cachedAttrs(fstype string) bool {
	if strings.HasPrefix(fstype, "fuse.") || fstype == "fuse" {
		return fuseDontSync
	}
	return fstype == "nfs" || fstype == "nfs4" || localFS[fstype]
}

// fuseDontSync: this kernel's FUSE honours AT_STATX_DONT_SYNC (4.15 and
// later); before, a getattr always asked the daemon, which may be the
// watched job.
var fuseDontSync = kernelAtLeast(4, 15)

var localFS = map[string]bool{
	"ext2": true, "ext3": true, "ext4": true, "xfs": true, "btrfs": true, "zfs": true, "f2fs": true, "tmpfs": true,
	"overlay": true, "squashfs": true, "vfat": true, "exfat": true, "ntfs3": true, "bcachefs": true, "ramfs": true,
}

// fileLook is what a process's descriptors showed at its recent looks:
// the data files at the last listing (descriptor → a hash of its path: 8
// bytes each, however long the paths), to tell a file opened since, and
// the last fileLookSpan looks' results.
type fileLook struct {
	prev   map[int]uint64
	looks  [fileLookSpan]lookResult
	n, at  int // looks kept; where the next goes
	newest *sample.OpenFile
}

// lookResult is one look: whether it found a data file opened since the
// look before, and that file's size where it was read (sized).
type lookResult struct {
	opened, sized bool
	bytes         uint64
}

// add keeps a look's result.
func (fl *fileLook) add(r lookResult, of *sample.OpenFile) {
	fl.looks[fl.at] = r
	fl.at = (fl.at + 1) % fileLookSpan
	fl.n = min(fl.n+1, fileLookSpan)
	if of != nil {
		fl.newest = of
	}
}

// summary is the looks as the frame has them: nil before any.
func (fl *fileLook) summary() *sample.FileLooks {
	if fl.n == 0 {
		return nil
	}
	s := &sample.FileLooks{Looks: fl.n}
	var sizes []uint64
	for _, r := range fl.looks[:fl.n] {
		if r.opened {
			s.Opened++
		}
		if r.opened && r.sized {
			sizes = append(sizes, r.bytes)
		}
	}
	s.Sized = len(sizes)
	if len(sizes) > 0 {
		slices.Sort(sizes)
		s.MedianBytes = &sizes[len(sizes)/2]
	}
	if s.Opened > 0 {
		s.Newest = fl.newest
	}
	return s
}

// pathHash is a path's 64-bit FNV-1a: what a listing keeps of it.
func pathHash(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// kernelAtLeast says the running kernel's release is at least major.minor
// (false where it cannot be read).
func kernelAtLeast(major, minor int) bool {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return false
	}
	maj, rest, _ := strings.Cut(strings.TrimSpace(string(b)), ".")
	mnr, _, _ := strings.Cut(rest, ".")
	a, err1 := strconv.Atoi(maj)
	m, err2 := strconv.Atoi(strings.TrimRightFunc(mnr, func(r rune) bool { return r < '0' || r > '9' }))
	return err1 == nil && err2 == nil && (a > major || a == major && m >= minor)
}

// truncPath keeps at most mapsPathMax bytes of a path, on a rune boundary.
func truncPath(s string) string {
	if len(s) <= mapsPathMax {
		return s
	}
	return strings.ToValidUTF8(s[:mapsPathMax], "") + "…"
}
