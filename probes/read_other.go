//go:build !linux

package probes

import (
	"errors"
	"os"
)

// FileReader reads whole files; off Linux there is no /proc to read often.
type FileReader struct{}

// Read returns the contents of the file at path.
func (r *FileReader) Read(path string) ([]byte, error) { return os.ReadFile(path) }

// ReadKept is Read: elsewhere files are read whole each time.
func (r *FileReader) ReadKept(path string) ([]byte, error) { return r.Read(path) }

// Close has nothing to close elsewhere.
func (r *FileReader) Close() error { return nil }

// OpenFD is Linux's alone: elsewhere files are read whole each time.
func (r *FileReader) OpenFD(path string) (int, error) { return -1, errors.ErrUnsupported }

// ReadFD is Linux's alone.
func (r *FileReader) ReadFD(fd int) ([]byte, error) { return nil, errors.ErrUnsupported }

// ReadStatFD is Linux's alone.
func (r *FileReader) ReadStatFD(fd int) ([]byte, error) { return nil, errors.ErrUnsupported }

// CloseFD is Linux's alone.
func CloseFD(fd int) {}

// ReadDirNames calls fn with the name of each entry of dir.
func (r *FileReader) ReadDirNames(dir string, fn func(name []byte)) error {
	ents, err := os.ReadDir(dir)
	for _, e := range ents {
		fn([]byte(e.Name()))
	}
	return err
}

// UnsafeString is b as a string (a copy off Linux).
func UnsafeString(b []byte) string { return string(b) }

// OpenRegular opens path for reading when it is a regular file.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &os.PathError{Op: "open", Path: path, Err: os.ErrInvalid}
		}
		return nil, err
	}
	return f, nil
}
