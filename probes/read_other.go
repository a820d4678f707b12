//go:build !linux

package probes

import "os"

// fileReader reads whole files; off Linux there is no /proc to read often.
type fileReader struct{}

func (r *fileReader) read(path string) ([]byte, error) { return os.ReadFile(path) }

func (r *fileReader) readDirNames(dir string, fn func(name []byte)) error {
	ents, err := os.ReadDir(dir)
	for _, e := range ents {
		fn([]byte(e.Name()))
	}
	return err
}

func unsafeString(b []byte) string { return string(b) }
