//go:build !linux

package textpages

import "errors"

// Release does nothing here: only Linux maps a binary's pages in folios
// this way.
func Release() (int64, error) { return 0, errors.ErrUnsupported }
