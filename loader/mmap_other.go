//go:build !linux

package loader

import "errors"

// Off Linux, --read mmap and --page-cache are refused: the page-cache
// calls they rest on (mincore, posix_fadvise) are Linux's here.
var errNoMmap = errors.New("memory-mapped reads and --page-cache are Linux's")

var pageSize = 4096

func mapShard(string) ([]byte, error)                   { return nil, errNoMmap }
func unmapShard([]byte)                                 {}
func residentPages([]byte, []byte) (int, []byte, error) { return 0, nil, errNoMmap }
func dropShard(string, []byte) error                    { return errNoMmap }
