package probes

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"unsafe"
)

// FileReader reads small kernel files (/proc/stat, /proc/PID/stat …) into a
// reused buffer with raw openat/read/close, so a steady-state tick allocates
// nothing per file: os.ReadFile costs about five allocations a file, which on
// a box with a thousand processes is thousands a tick.
type FileReader struct {
	path []byte // NUL-terminated copy of the path being opened
	buf  []byte
	st   syscall.Stat_t
	kept map[string]int // ReadKept's descriptors, by path
}

// maxKept bounds the descriptors ReadKept keeps: a probe reads a handful
// of the kernel's files each tick (/proc/stat and /proc/loadavg, the three
// /proc/pressure files).
const maxKept = 8

// ReadKept is Read through a descriptor kept open from call to call (two
// preads a read, where Read takes five system calls), for the kernel's
// own files a probe reads every tick: /proc/stat, /proc/meminfo. Only a
// procfs file is kept (a file elsewhere, as tests' snapshots are, may be
// replaced between reads), at most maxKept of them; Close closes them.
func (r *FileReader) ReadKept(path string) ([]byte, error) {
	if fd, ok := r.kept[path]; ok {
		if b, err := r.ReadFD(fd); err == nil {
			return b, nil
		}
		CloseFD(fd)
		delete(r.kept, path)
	}
	if len(r.kept) >= maxKept {
		return r.Read(path)
	}
	fd, err := r.OpenFD(path)
	if err != nil {
		return nil, err
	}
	b, err := r.readWhole(fd, path, false)
	var fs syscall.Statfs_t
	if err != nil || syscall.Fstatfs(fd, &fs) != nil || fs.Type != procSuperMagic {
		CloseFD(fd)
		return b, err
	}
	if r.kept == nil {
		r.kept = make(map[string]int, maxKept)
	}
	r.kept[strings.Clone(path)] = fd
	return b, nil
}

// procSuperMagic is procfs's f_type (statfs(2)).
const procSuperMagic = 0x9fa0

// Close closes the descriptors ReadKept keeps.
func (r *FileReader) Close() error {
	for _, fd := range r.kept {
		CloseFD(fd)
	}
	r.kept = nil
	return nil
}

var atFDCWD = -100 // AT_FDCWD: resolve a relative path from the working directory

// maxKernelFile bounds a file read whole: /proc/stat of a 1,024-core box
// is under 200 KiB. A --sys-root is outside input: a file past this is an
// error, not a buffer grown without end.
const maxKernelFile = 16 << 20

// errNotRegular is a path that is no regular file (a FIFO, a device, a
// folder): never read, since a FIFO would block and a device never end.
var errNotRegular = errors.New("not a regular file")

// Read returns the whole content of path, a regular file of at most
// maxKernelFile bytes. It opens with O_NONBLOCK and checks the type before
// reading, so a FIFO put in a --sys-root cannot stall a probe. The
// returned slice is valid until the next call.
func (r *FileReader) Read(path string) ([]byte, error) {
	fd, err := r.OpenFD(path)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	return r.readWhole(fd, path, false)
}

// OpenFD opens path, a regular file (checked as Read checks it), to be
// read again and again by ReadFD until CloseFD: two preads a read (the
// content, then its end) where Read takes five system calls (open, fstat,
// read, read, close); the process probe's
// /proc/PID/stat each tick is most of the dashboard's CPU (issue 53). A
// /proc/PID file held open reads that one process: once it has exited
// ReadFD fails (ESRCH), never reading another that took its PID.
func (r *FileReader) OpenFD(path string) (int, error) {
	r.path = append(append(r.path[:0], path...), 0)
	fd, _, errno := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(atFDCWD),
		uintptr(unsafe.Pointer(&r.path[0])), syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0, 0, 0)
	if errno != 0 {
		return -1, &pathError{op: "open", path: strings.Clone(path), err: errno}
	}
	if err := syscall.Fstat(int(fd), &r.st); err != nil || r.st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(int(fd))
		if err == nil {
			err = errNotRegular
		}
		return -1, &pathError{op: "open", path: strings.Clone(path), err: err}
	}
	return int(fd), nil
}

// ReadFD returns the whole content of an OpenFD file, read from its
// start (pread); valid until the next call.
func (r *FileReader) ReadFD(fd int) ([]byte, error) { return r.readWhole(fd, "", true) }

// ReadStatFD is ReadFD for a file the kernel makes in one piece and hands
// over whole to a read with room for it: /proc/PID/stat,
// /proc/PID/task/TID/stat, /proc/PID/io (seq_file's single_open; a file
// of many records, /proc/diskstats, may stop short at a record's end and
// is not one). A read that comes back short of the buffer has it all: one
// pread, not two. The second, at the end, cost as much as the first: the
// kernel makes the file again to find its end (issue 53: the process
// scan's stat files were most of the dashboard's own system calls).
func (r *FileReader) ReadStatFD(fd int) ([]byte, error) {
	if r.buf == nil {
		r.buf = make([]byte, 4096)
	}
	for {
		m, err := syscall.Pread(fd, r.buf, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &pathError{op: "read", path: "", err: err}
		}
		if m < len(r.buf) {
			return r.buf[:m], nil
		}
		return r.readWhole(fd, "", true) // it filled the buffer: read on
	}
}

// CloseFD closes an OpenFD file.
func CloseFD(fd int) { syscall.Close(fd) }

// readWhole reads fd to its end, at most maxKernelFile bytes, into r.buf:
// from offset 0 by pread where again, else from where it is (a file just
// opened; a file that cannot pread reads too).
func (r *FileReader) readWhole(fd int, path string, again bool) ([]byte, error) {
	if r.buf == nil {
		r.buf = make([]byte, 4096)
	}
	n := 0
	for {
		if n == len(r.buf) {
			if n >= maxKernelFile {
				return nil, &pathError{op: "read", path: strings.Clone(path), err: errors.New("larger than 16 MiB")}
			}
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		var m int
		var err error
		if again {
			m, err = syscall.Pread(fd, r.buf[n:], int64(n))
		} else {
			m, err = syscall.Read(fd, r.buf[n:])
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &pathError{op: "read", path: strings.Clone(path), err: err}
		}
		if m == 0 {
			return r.buf[:n], nil
		}
		n += m
	}
}

// ReadDirNames calls fn with the name of each entry of dir, without
// allocating per entry. The name is valid only during the call.
func (r *FileReader) ReadDirNames(dir string, fn func(name []byte)) error {
	return r.ReadDirNamesMax(dir, -1, fn)
}

// ReadDirNamesMax is ReadDirNames that stops after max entries (all of
// them when max < 0), reading no further: a process's million
// descriptors cost no more than max.
func (r *FileReader) ReadDirNamesMax(dir string, max int, fn func(name []byte)) error {
	seen := 0
	r.path = append(append(r.path[:0], dir...), 0)
	fd, _, errno := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(atFDCWD),
		uintptr(unsafe.Pointer(&r.path[0])), syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_DIRECTORY, 0, 0, 0)
	if errno != 0 {
		return &pathError{op: "open", path: strings.Clone(dir), err: errno}
	}
	defer syscall.Close(int(fd))
	if len(r.buf) < 8192 {
		r.buf = make([]byte, 8192)
	}
	for {
		n, err := syscall.Getdents(int(fd), r.buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &pathError{op: "getdents", path: strings.Clone(dir), err: err}
		}
		if n <= 0 {
			return nil
		}
		// struct linux_dirent64 { u64 ino; s64 off; u16 reclen; u8 type; char name[]; }
		for off := 0; off+19 <= n; {
			reclen := int(*(*uint16)(unsafe.Pointer(&r.buf[off+16]))) // native byte order
			if reclen == 0 || off+reclen > n {
				break
			}
			name := r.buf[off+19 : off+reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			if seen++; max >= 0 && seen > max {
				return nil
			}
			fn(name)
			off += reclen
		}
	}
}

// OpenRegular opens path for reading when it is a regular file: with
// O_NONBLOCK, its type checked before anything is read (a FIFO swapped in
// for a mapped file, or put in a --sys-root, would block a read).
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &pathError{op: "open", path: path, err: errNotRegular}
		}
		return nil, err
	}
	return f, nil
}

// pathError is os.PathError without importing os's allocation habits; it
// unwraps to the errno so errors.Is(err, fs.ErrNotExist) works.
type pathError struct {
	op, path string
	err      error
}

func (e *pathError) Error() string { return e.op + " " + e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// UnsafeString views b as a string without copying; b must not change while
// the string is in use.
func UnsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
