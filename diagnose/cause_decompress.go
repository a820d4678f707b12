package diagnose

import "github.com/gpuwatch/gpuwatch/sample"

// decompress: decompressing samples in __getitem__ (zlib, gzip, bz2, lzma,
// zstd, lz4), read from the workers' own CPU profile (causes_profile.go).
// Not decode: a reduced-size image decode or a decode on the GPU does
// nothing for a zlib stream; the fixes are to decompress once, or a codec
// that decompresses faster.
func init() {
	registerProfileCause("decompress", sample.CatDecompressing, anyStage(`decompress once, not every epoch: store the samples uncompressed, or cache them decompressed (local disk, RAM) where space allows; else a codec that decompresses several times faster (LZ4, or zstd at a low level, in place of gzip/zlib; bz2 and xz/lzma are slower still)`))
}
