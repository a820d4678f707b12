//go:build !linux

package loader

import "errors"

// oDirect: off Linux there is none (macOS has F_NOCACHE, a different
// thing); CheckDirectIO refuses --direct-io.
const oDirect = 0

var errNoDirectIO = errors.New("O_DIRECT is Linux's")

// freeBytes: not checked off Linux.
func freeBytes(string) (int64, bool) { return 0, false }
