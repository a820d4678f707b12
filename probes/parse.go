package probes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
)

// ReadRequired reads a kernel file a probe cannot work without: a missing
// one makes the source unavailable ("no /proc/stat: is procfs mounted?"),
// any other failure is an error to retry. It reads through a descriptor
// kept open (FileReader.ReadKept): the probe reads it every tick, and
// closes its reader (FileReader.Close) when it is done.
func ReadRequired(r *FileReader, path string) ([]byte, error) {
	b, err := r.ReadKept(path)
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		return nil, Unavailable("no %s: is procfs mounted?", path)
	}
	return b, err
}

// The helpers below parse kernel text without allocating: fields are
// sub-slices of the buffer that was read.

// NextLine splits b at the first newline.
func NextLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

// FieldBuf keeps the slice that fields are split into, so it grows once to
// the widest line seen and is reused after. A nil *FieldBuf works, allocating.
type FieldBuf struct{ f [][]byte }

// Split returns the space- or tab-separated fields of line, valid until the
// next call.
func (b *FieldBuf) Split(line []byte) [][]byte {
	if b == nil {
		return fields(line, nil)
	}
	b.f = fields(line, b.f)
	return b.f
}

// fields appends the space- or tab-separated fields of line to dst[:0].
func fields(line []byte, dst [][]byte) [][]byte {
	dst = dst[:0]
	start := -1
	for i, c := range line {
		if c == ' ' || c == '\t' {
			if start >= 0 {
				dst = append(dst, line[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		dst = append(dst, line[start:])
	}
	return dst
}

// ParseUint parses a decimal unsigned integer; false on anything else.
func ParseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false // overflow
		}
		n = n*10 + d
	}
	return n, true
}

// ParseFloat parses a decimal number such as "0.52".
func ParseFloat(b []byte) (float64, bool) {
	v, err := strconv.ParseFloat(string(b), 64)
	return v, err == nil
}

// ReadCapped reads at most limit bytes, failing past it.
func ReadCapped(r io.Reader, limit int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s larger than %d MiB", what, limit>>20)
	}
	return b, nil
}
