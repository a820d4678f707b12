package diagnose

import "github.com/gpuwatch/gpuwatch/sample"

// decompress: decompressing samples in __getitem__ (zlib, gzip, bz2, lzma,
// zstd, lz4), read from the workers' own CPU profile (causes_profile.go).
// Not decode: a reduced-size image decode or a decode on the GPU does
// nothing for a zlib stream; the fixes are to decompress once, or a codec
// that decompresses faster.
func init() {
	registerProfileCause("decompress", sample.CatDecompressing, anyStage(`decompress once, not every epoch: store the samples uncompressed, or cache them decompressed (local disk, RAM) where space allows; else a codec that decompresses several times faster (LZ4, or zstd at a low level, in place of gzip/zlib; bz2 and xz/lzma are slower still)`))
	// Its rows of causeExclusions (cause.go), as decode's: the storage's
	// causes leave it out (the workers' time is the storage's), and it
	// leaves out getitem (it says which part of the dataset's stage).
	causeExclusions = append(causeExclusions,
		struct {
			cause, excludes []string
			why             string
		}{[]string{"random_reads", "small_files"}, []string{"decompress"},
			"the dataset's stage faults a mapped file's pages in, or reads small files: its time is the storage's"},
		struct {
			cause, excludes []string
			why             string
		}{[]string{"decompress"}, []string{"getitem"},
			"the workers' profile says which part of the dataset's stage: its causes take the place of the whole's"})
}
