// Package pprofsum summarises a CPU profile in pprof's format into the
// frame's top functions and the share of time in each category of loader
// work (reading, decoding, collating …), refusing gzip bombs and values
// that overflow. It imports pprof's profile package and sample.
package pprofsum

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/gpuwatch/gpuwatch/sample"
)

// categoryRules sort a CPU sample into what the loader was doing, in the
// job's terms: the one table of them (docs/diagnosis.md lists the
// categories). A stack is read from the innermost frame out, and the first
// function that a strong row matches decides, so a read under a decode
// loop counts as reading and PIL's resize under torchvision's transforms as
// augmenting. A weak row counts only for the innermost frame, and only
// when no frame of the stack matches a strong row: Go's runtime under the
// loader's reader is reading, but a stack of nothing else is the runtime's
// own overhead. The garbage collector's own goroutines are gc wherever
// they are; a stack nothing matches is other.
//
// A function takes the first row, in table order, with a pattern that
// matches it, so specific rows come before the general ones they carve
// out of (multiprocessing's wait is waiting before its connection is
// serializing; torchvision's to_tensor is converting before torchvision's
// transforms are augmenting; PIL's open and load are decoding before the
// rest of PIL.Image is augmenting). A pattern matches a function's name
// as pprof prints it by prefix ("PIL.ImageFile."), whole with a leading
// '=' ("=torch.tensor", not torch.tensordot), anywhere in the name with a
// leading '*' ("*ImagePlugin."), or anywhere in its file with a leading
// '/' ("/torchvision/transforms/"). Python functions from the hook are
// named "module.qualname" with their file beside. A C function the hook
// caught running (python/gpuwatch_hook/_callee.py, Python 3.11+) is an
// innermost frame named by what the caller's source calls,
// "torch.tensor", "numpy.array", "builtins.float", or a value's method as
// written ("rows.astype"), with the caller's file and line; a C function
// no row names counts where its caller is (default_collate's
// collate_tensor_fn for torch.stack, by the file).
var categoryRules = []categoryRule{
	// Helpers that work for whoever calls them: no category, their caller
	// decides (PIL's copy is decoding under Image.convert, which copies an
	// image already in the mode asked for, and augmenting under a crop; a
	// socket's accept is the hand-over under a worker's resource sharer,
	// which passes a shared tensor's descriptor, not a read).
	{category: "", match: []string{"PIL.Image.Image.copy", "PIL.Image.Image._new", "torch.nn.modules.module.Module._call_impl", "socket.socket.accept"}},
	{category: sample.CatGC, match: []string{
		"runtime.gcBgMarkWorker", "runtime.gcDrain", "runtime.scanobject", "runtime.markroot", "runtime.mallocgc",
		"runtime.gcAssist", "runtime.bgsweep", "runtime.bgscavenge", "runtime.memclrNoHeapPointers",
		"runtime.(*mheap)", "runtime.sweepone", "runtime.gcStart", "gc.",
	}},
	{category: sample.CatWaiting, match: []string{
		"runtime.chanrecv", "runtime.chansend", "runtime.selectgo", "runtime.gopark", "runtime.semacquire",
		"runtime.notesleep", "runtime.futex", "runtime.usleep", "runtime.netpoll", "runtime.epollwait",
		"sync.(*Mutex).Lock", "sync.(*RWMutex)", "sync.(*WaitGroup).Wait", "sync.(*Cond).Wait", "time.Sleep",
		"runtime.timeSleep", "runtime.mPark", "runtime.stopm", "runtime.findRunnable", "runtime.schedule",
		// Python: locks, conditions, queues, sleeps, and the DataLoader's
		// wait on its workers' queue (multiprocessing polls a pipe).
		"threading.Condition.wait", "threading.Event.wait", "threading.Semaphore.acquire", "threading.Barrier.wait",
		"threading.Thread.join", "threading.Thread._wait_for_tstate_lock", "threading.Lock", "threading.RLock",
		"queue.", "time.sleep", "select.", "selectors.", "multiprocessing.connection.wait",
		"multiprocessing.connection.Connection.poll", "multiprocessing.connection.Connection._poll",
		"multiprocessing.connection._ConnectionBase.poll", "multiprocessing.synchronize.",
		"concurrent.futures._base.Future.result", "concurrent.futures._base.wait", "concurrent.futures._base.as_completed",
	}},
	{category: sample.CatReading, match: []string{
		"syscall.read", "syscall.pread", "syscall.Read", "syscall.Pread", "internal/poll.(*FD).Read",
		"internal/poll.(*FD).Pread", "os.(*File).Read", "os.(*File).ReadAt", "net.(*conn).Read",
		"internal/poll.(*FD).ReadFrom", "io.ReadFull", "io.ReadAtLeast", "bufio.(*Reader).Read",
		"github.com/gpuwatch/gpuwatch/loader.(*reader).", // the embedded loader's reads (copies included)
		// Python: files, archives, object stores, the network; PIL's reads
		// of the encoded bytes.
		"read ", "readinto ", "pread ", "recv ", "recv_into ", "_io.", "io.", "_pyio.", "os.read", "socket.", "ssl.",
		"http.client.", "urllib.", "urllib3.", "requests.", "fsspec.", "s3fs.", "gcsfs.", "adlfs.", "boto3.",
		"botocore.", "s3transfer.", "aiohttp.", "h5py.", "lmdb.", "tarfile.", "zipfile.", "mmap.", "shutil.copyfileobj",
		"pathlib.Path.read_bytes", "pathlib.Path.read_text", "*ImageFile.load_read", "PIL.ImageFile._safe_read",
		// numpy's .npy files: np.load, its header's parse (Python's
		// tokenize module, below; numpy's safe_eval, ast.literal_eval,
		// under np.load(mmap_mode="r")) and the array's read (a user's
		// review: "tokenizing text ... a Rust-backed tokenizer" of
		// np.load; another: "per-sample array math" of its ast.parse).
		"numpy.lib.format.", "numpy.lib._format_impl.", "numpy.lib.npyio.load", "numpy.lib._npyio_impl.load",
		"numpy.load", "=numpy.fromfile", "=numpy.load", "numpy.lib.utils.safe_eval", "numpy.lib._utils_impl.safe_eval",
	}},
	{category: sample.CatSerializing, match: []string{
		// Python: pickling batches through the workers' queues, and
		// torch's tensors shared across processes.
		"pickle.", "_pickle.", "copyreg.", "multiprocessing.queues.", "multiprocessing.reduction.",
		"multiprocessing.connection.", "multiprocessing.resource_sharer.", "torch.multiprocessing.reductions.",
		"torch.storage._share", "torch.storage.TypedStorage._share", "torch.storage.UntypedStorage._share",
		"torch._utils._rebuild",
	}},
	// Python's own tokenize module reads Python source (inspect,
	// linecache, numpy's .npy header): no text a job trains on. Weak, so
	// its caller decides.
	{category: sample.CatInterpreter, weak: true, match: []string{"tokenize."}},
	{category: sample.CatTokenizing, match: []string{"*tokeniz", "*Tokeniz", "sentencepiece.", "tiktoken."}},
	{category: sample.CatCollating, match: []string{
		"torch.utils.data._utils.collate.", "/torch/utils/data/_utils/collate.py",
		"numpy.core.shape_base.", "numpy._core.shape_base.", // np.stack and concatenate's Python
		// The job's own collate_fn, under the hook's timing of it
		// (python/gpuwatch_hook/_stages.py, wrap_fetcher; Python < 3.11
		// names a frame without its qualified name): what no row closer
		// to the leaf names is collating (a user's review: a
		// collate_fn's pad_sequence was "55 % of its loading's CPU"
		// beside "do less per sample in __getitem__").
		"gpuwatch_hook._stages.wrap_fetcher.<locals>.timed_collate", "=gpuwatch_hook._stages.timed_collate",
	}},
	{category: sample.CatConverting, match: []string{
		// Python: samples made into tensors and arrays, batches copied
		// into pinned memory.
		"torchvision.transforms.functional.to_tensor", "torchvision.transforms.functional.pil_to_tensor",
		"torchvision.transforms.functional.to_pil_image", "torchvision.transforms.functional.convert_image_dtype",
		"torchvision.transforms.transforms.ToTensor.", "torchvision.transforms.transforms.PILToTensor.",
		"torchvision.transforms.transforms.ToPILImage.", "torchvision.transforms.transforms.ConvertImageDtype.",
		"torchvision.transforms.v2.functional._type_conversion.", "torchvision.transforms.v2._type_conversion.",
		"torchvision.transforms.v2.functional._misc.to_dtype", "torchvision.transforms.v2.functional._misc._to_dtype",
		"PIL.Image.Image.tobytes", "PIL.Image.Image.__array_interface__", "PIL.Image.Image.getdata",
		"PIL.Image.fromarray", "PIL.Image.frombuffer", "PIL.Image.frombytes",
		"numpy.core._asarray.", "numpy._core._asarray.", "numpy.core.numeric.asarray", "numpy.ndarray.astype",
		"torch._tensor.Tensor.__array__", "torch._tensor.Tensor.numpy", "torch.utils.data._utils.pin_memory.",
		"/torch/utils/data/_utils/pin_memory.py",
		// C functions, caught running (_callee.py): tensors and arrays
		// made from Python objects or other arrays, values made Python
		// floats one at a time (not list(), tuple() or int(): what they
		// consume, a csv.reader say, is the work).
		"=torch.tensor", "=torch.as_tensor", "=torch.asarray", "=torch.from_numpy", "=numpy.array",
		"=numpy.asarray", "=numpy.asanyarray", "=numpy.ascontiguousarray", "=numpy.frombuffer", "=numpy.fromiter",
		"*.astype", "*.tolist", "=builtins.float",
	}},
	// Decompressors (Python's modules and C calls the hook caught running,
	// Go's compress/): their own category, not decoding's, whose fixes
	// (a reduced-size image decode, a decode on the GPU) do nothing for a
	// zlib stream. Before decoding: a parser reading a compressed stream
	// (gzip under json.load) is decompressing where the decompressor runs.
	{category: sample.CatDecompressing, match: []string{
		"compress/", "zlib.", "gzip.", "bz2.", "_bz2.", "lzma.", "_lzma.", "_compression.", "zstandard.", "zstd", "lz4",
	}},
	{category: sample.CatDecoding, match: []string{
		"hash/", "image/", "encoding/", "crypto/", "github.com/gpuwatch/gpuwatch/loader.decode",
		// Python: image, audio and video decoders, parsers.
		"*ImagePlugin.", "PIL.ImageFile.", "/PIL/ImageFile.py", "PIL.Image.open", "PIL.Image._open_core",
		"PIL.Image.Image.load", "PIL.Image.Image.convert", "PIL.Image.Image.draft", "PIL.Image._decompression_bomb_check",
		"cv2.", "torchvision.io.", "/torchvision/io/", "torchvision.datasets.folder.pil_loader",
		"torchvision.datasets.folder.accimage_loader", "imageio.", "imageio_ffmpeg.", "soundfile.", "av.", "decord.",
		"torchaudio.load", "torchaudio._backend.", "torchaudio.backend.", "torchaudio.io.", "librosa.core.audio.",
		"simplejpeg.", "turbojpeg.", "json.", "orjson.", "msgpack.", "pyarrow.",
	}},
	{category: sample.CatAugmenting, match: []string{
		// Python: transforms and augmentations, and array math.
		"torchvision.transforms.", "/torchvision/transforms/", "albumentations.", "kornia.", "PIL.Image.",
		"PIL.ImageOps.", "PIL.ImageFilter.", "PIL.ImageEnhance.", "PIL.ImageDraw.", "numpy.", "scipy.ndimage.",
		"skimage.", "torch.nn.functional.", "torch.functional.", "torchaudio.transforms.", "torchaudio.functional.",
		"librosa.", "timm.data.", "monai.transforms.",
	}},
	{category: sample.CatInterpreter, match: []string{
		"importlib.", "zipimport.", "warnings.", "typing.", "abc.", "inspect.", "linecache.",
		"torch.autograd.profiler.record_function", // the DataLoader's own bookkeeping per batch
	}},
	// A comprehension's own code, calling nothing a row names, is Python
	// building a list (a set, a dict) value by value — a sample made into
	// lists one float at a time. Only as the innermost frame: the job's
	// own function it calls is that function's. Up to 3.11 a
	// comprehension is a frame of its own; from 3.12 it runs inline
	// (PEP 709) and the hook names the frame as 3.11 would
	// (python/gpuwatch_hook/_callee.py, comprehension).
	{category: sample.CatConverting, weak: true, match: []string{"*.<listcomp>", "*.<setcomp>", "*.<dictcomp>"}},
	{category: sample.CatInterpreter, weak: true, match: []string{"runtime."}}, // Go's scheduler, stack growth, copies
}

// categoryRule is one row of categoryRules: the functions that count for
// category, by pattern.
type categoryRule struct {
	category string
	weak     bool // only as the innermost frame, when no strong row matches the stack
	match    []string
}

// CCall is the system name the hook gives a C function it caught running
// (python/gpuwatch_hook/_callee.py).
const CCall = "<C call>"

// MaxProfileBytes caps a profile uncompressed (64 MiB): a bigger one is
// skipped.
const MaxProfileBytes = 64 << 20

// SummarizeProfile parses a pprof profile (gzipped or not) and summarizes
// its CPU time: shares per category, and the top functions by flat and
// cumulative share, cum counted once per function per sample as pprof does.
func SummarizeProfile(data []byte, top int) (*sample.Profile, error) {
	if len(data) == 0 {
		return nil, errors.New("empty profile")
	}
	raw, err := inflate(data)
	if err != nil {
		return nil, err
	}
	p, err := profile.ParseData(raw)
	if err != nil {
		return nil, fmt.Errorf("not a pprof profile: %w", err)
	}
	return summarize(p, top)
}

// summarize adds up p's samples by the CPU (or first) value type and
// returns the category shares and the top functions, at most top of them.
func summarize(p *profile.Profile, top int) (*sample.Profile, error) {
	vi := valueIndex(p)
	if vi < 0 {
		return nil, errors.New("profile has no CPU or sample value")
	}
	unit := p.SampleType[vi].Unit
	out := &sample.Profile{DurationSec: float64(p.DurationNanos) / 1e9}
	if p.TimeNanos != 0 {
		out.TakenAt = time.Unix(0, p.TimeNanos)
	}
	tl := newProfileTally(newFuncTable(p))
	ci := countIndex(p)
	for si, s := range p.Sample {
		if vi >= len(s.Value) || s.Value[vi] <= 0 {
			continue
		}
		v := s.Value[vi]
		// How many samples: their count where the profile has one (a row
		// may stand for several), else one a row. Bounded: a count no
		// profile of an hour at 100 Hz reaches is not added up further.
		n := int64(1)
		if ci >= 0 && ci < len(s.Value) && s.Value[ci] > 0 {
			n = min(s.Value[ci], maxSamples)
		}
		out.Samples = min(out.Samples+n, maxSamples)
		if v > math.MaxInt64-tl.total {
			// Every flat, cum and category sum is at most the total: checked
			// here, none of them can wrap to a negative share.
			return nil, errors.New("the profile's sample values add up past 2⁶³: no CPU profile is that long")
		}
		tl.total += v
		var pt *part // the workers' samples, or the loop's loading inline
		switch {
		case len(s.Label[workerLabel]) > 0:
			pt = &tl.workers
		case tl.underFetch(s):
			pt = &tl.inline
		}
		c := tl.add(si, s, v, pt)
		if pt != nil {
			pt.cats[c] += v
			pt.total += v
		}
	}
	if tl.total == 0 {
		return nil, errors.New("profile has no samples")
	}
	tl.finish(out, unit, top)
	return out, nil
}

// profileTally adds up a profile's sample values per function and per
// category, in the profile's unit. Everything about a function — its
// category, whether it is the GC's worker — is decided once per function,
// not once per frame of every sample: a 5 MB profile has ~100 k samples but
// a few thousand functions. The per-function slices are indexed by the
// funcTable's numbers.
type profileTally struct {
	t        *funcTable
	cat      []int8 // index into sample.ProfileCategories, -1 none
	weak     []bool // cat counts only as the innermost frame (categoryRule.weak)
	gcWorker []bool // the GC's background mark worker
	fetch    []bool // the DataLoader's fetch (fetchFile): loading, where it runs
	anyFetch bool   // some function is
	// fetcher is the dataset kind a function of the fetch names by its
	// class (fetcherKind): fetchMap, fetchIterable, or 0.
	fetcher []int8
	flat    []int64
	cum     []int64
	// flatBy is each function's flat time by the category it went to
	// (sample.ProfileCategories); nil for a function with none.
	flatBy [][]int64
	stamp  []int   // sample number (from 1) that last counted cum
	cats   []int64 // by sample.ProfileCategories
	total  int64
	// workers: the samples labelled with a DataLoader worker's pid
	// (workerLabel); inline: the training process's other samples under
	// the DataLoader's fetch (num_workers=0: the loop loads each batch
	// itself, beside its step).
	workers, inline part
}

// part is the same sums over a part of a profile's samples.
type part struct {
	flat, cum []int64
	flatBy    [][]int64
	cats      []int64 // by sample.ProfileCategories
	total     int64
	// byKind is the samples under each kind of dataset's fetcher, by
	// fetchMap and fetchIterable (0: none named).
	byKind [3]int64
}

// The kinds of dataset torch's fetcher on a stack names by its class.
const (
	fetchMap      = 1 // _MapDatasetFetcher: the dataset's __getitem__
	fetchIterable = 2 // _IterableDatasetFetcher: the next items of the iterator the dataset's __iter__ returned
)

// fetcherKind is the kind of dataset a function of the DataLoader's fetch
// names by its class (Python 3.11+ frames carry it: the hook names them
// "torch.utils.data._utils.fetch._IterableDatasetFetcher.fetch", and the
// comprehension inside "…_MapDatasetFetcher.fetch.<locals>.<listcomp>");
// 0 for any other function, and for a fetch named without its class.
func fetcherKind(name, file string) int8 {
	switch {
	case !strings.HasSuffix(file, fetchFile):
		return 0
	case strings.Contains(name, "._IterableDatasetFetcher."):
		return fetchIterable
	case strings.Contains(name, "._MapDatasetFetcher."):
		return fetchMap
	}
	return 0
}

// dataset is the kind of dataset most of a part's samples under a named
// fetcher fetched from (sample.Profile.Dataset); "" where none named one.
func (pt *part) dataset() string {
	switch m, it := pt.byKind[fetchMap], pt.byKind[fetchIterable]; {
	case it > m:
		return sample.DatasetIterable
	case m > 0:
		return sample.DatasetMap
	}
	return ""
}

// sampleCategory is a sample's category (an index into
// sample.ProfileCategories) from its stack's row c (-1 none), whether the
// GC's worker ran it, and the part it is in (nil: the training process
// outside the DataLoader's fetch).
func (tl *profileTally) sampleCategory(c int8, gc bool, pt *part) int {
	switch {
	case gc:
		return gcCategory
	case c < 0:
		return otherCategory
	case int(c) == augmentingCategory && pt == nil && tl.anyFetch:
		// The training process outside the DataLoader's fetch, in a
		// profile that shows where loading is: the step. Its model's
		// torch.nn.functional and numpy are no augmentation (a review: a
		// CNN's max_pool2d, batch_norm and relu read "augmenting 42 %").
		return otherCategory
	}
	return int(c)
}

// fetchFile is where torch's DataLoader fetches a batch from the dataset
// (_MapDatasetFetcher.fetch, _IterableDatasetFetcher.fetch): a sample
// with it on its stack is loading, in a worker or in the loop itself.
const fetchFile = "torch/utils/data/_utils/fetch.py"

// underFetch says whether the DataLoader's fetch is on s's stack. It is
// near the stack's root (the loop, next(), the fetch, then the dataset's
// code): looked for from there.
func (tl *profileTally) underFetch(s *profile.Sample) bool {
	if !tl.anyFetch {
		return false
	}
	for i := len(s.Location) - 1; i >= 0; i-- {
		fs := tl.t.funcsOf(s.Location[i])
		if len(tl.t.names) > len(tl.cat) {
			tl.grow()
		}
		for _, fi := range fs {
			if tl.fetch[fi] {
				return true
			}
		}
	}
	return false
}

// flatDominance is the share of a function's flat time one category must
// hold to be the function's (ProfileFunc.Category): a stray sample taken
// under another caller does not unname it.
const flatDominance = 0.9

// workerLabel marks a sample taken in a DataLoader worker: the hook merges
// the workers' profiles into the training process's under gpuwatch run.
const workerLabel = "worker_pid"

// The categories every summary has, as indexes into
// sample.ProfileCategories.
var (
	gcCategory         = slices.Index(sample.ProfileCategories, sample.CatGC)
	otherCategory      = slices.Index(sample.ProfileCategories, sample.CatOther)
	augmentingCategory = slices.Index(sample.ProfileCategories, sample.CatAugmenting)
)

// newProfileTally classifies t's functions once and starts every sum at 0.
func newProfileTally(t *funcTable) *profileTally {
	n := len(t.names)
	tl := &profileTally{
		t: t, cat: make([]int8, 0, n), weak: make([]bool, 0, n), gcWorker: make([]bool, 0, n), fetcher: make([]int8, 0, n),
		flat: make([]int64, n), cum: make([]int64, n), stamp: make([]int, n), cats: make([]int64, len(sample.ProfileCategories)),
		workers: newPart(n), inline: newPart(n),
	}
	tl.grow()
	return tl
}

// grow classifies functions first met in samples (malformed tables) and
// extends the sums to them.
func (tl *profileTally) grow() {
	names := tl.t.names
	for i := len(tl.cat); i < len(names); i++ {
		file := tl.t.files[i]
		if tl.t.called[i] {
			file = "" // its caller's file: where the call is, not what it is
		}
		c, weak := ruleCategory(names[i], file)
		tl.cat = append(tl.cat, c)
		tl.weak = append(tl.weak, weak)
		tl.gcWorker = append(tl.gcWorker, strings.HasPrefix(names[i], "runtime.gcBgMarkWorker"))
		tl.fetch = append(tl.fetch, strings.HasSuffix(tl.t.files[i], fetchFile))
		tl.fetcher = append(tl.fetcher, fetcherKind(names[i], tl.t.files[i]))
		tl.anyFetch = tl.anyFetch || tl.fetch[i]
	}
	n := len(names)
	tl.flat = grown(tl.flat, n)
	tl.flatBy = grown(tl.flatBy, n)
	tl.cum = grown(tl.cum, n)
	tl.stamp = grown(tl.stamp, n)
	for _, pt := range []*part{&tl.workers, &tl.inline} {
		pt.flat, pt.cum, pt.flatBy = grown(pt.flat, n), grown(pt.cum, n), grown(pt.flatBy, n)
	}
}

// newPart is a part's sums for n functions, all 0.
func newPart(n int) part {
	return part{flat: make([]int64, n), cum: make([]int64, n), cats: make([]int64, len(sample.ProfileCategories))}
}

// grown is xs extended with zero values to n long.
func grown[T any](xs []T, n int) []T {
	return append(xs, make([]T, max(0, n-len(xs)))...)
}

// add counts sample number si's value v: flat to its innermost function,
// cum once to each function on its stack, and the whole to the category of
// the innermost function that a strong rule matches, else the innermost
// function's weak one (the GC's worker anywhere on the stack makes it gc;
// none, other), and returns that category. The caller adds v to total.
func (tl *profileTally) add(si int, s *profile.Sample, v int64, pt *part) int {
	first, c, gc := -1, int8(-1), false
	// A C function caught running is the innermost frame; its caller, when
	// a strong row names it, decides before it (torchvision's to_tensor is
	// converting, whatever C it calls), and only under code no row names
	// (the job's own __getitem__) does the C function's name decide.
	pending, deferred := int8(-1), false
	kind := int8(0) // the dataset's kind, by the innermost fetcher named
	for _, loc := range s.Location {
		fs := tl.t.funcsOf(loc)
		if len(tl.t.names) > len(tl.cat) {
			tl.grow()
		}
		cat, weak, gcWorker, cum, stamp, called := tl.cat, tl.weak, tl.gcWorker, tl.cum, tl.stamp, tl.t.called
		for _, fi := range fs {
			if kind == 0 {
				kind = tl.fetcher[fi]
			}
			if first < 0 {
				first = fi
				if called[fi] {
					pending, deferred = cat[fi], true
				}
			}
			if stamp[fi] != si+1 { // cum: once per function per sample
				stamp[fi] = si + 1
				cum[fi] += v
				if pt != nil {
					pt.cum[fi] += v
				}
			}
			gc = gc || gcWorker[fi]
			if c >= 0 || weak[fi] || deferred && fi == first {
				continue
			}
			c = cat[fi]
			if deferred {
				if c < 0 {
					c = pending
				}
				deferred = false
			}
		}
	}
	if deferred && c < 0 { // a C call with no caller
		c = pending
	}
	if pt != nil {
		pt.byKind[kind] += v
	}
	if first >= 0 {
		tl.flat[first] += v
		if pt != nil {
			pt.flat[first] += v
		}
		if c < 0 && tl.weak[first] {
			c = tl.cat[first]
		}
	}
	cat := tl.sampleCategory(c, gc, pt)
	tl.cats[cat] += v
	if first >= 0 {
		addBy(tl.flatBy, first, cat, v)
		if pt != nil {
			addBy(pt.flatBy, first, cat, v)
		}
	}
	return cat
}

// addBy adds v to function fi's flat time in category cat.
func addBy(by [][]int64, fi, cat int, v int64) {
	if by[fi] == nil {
		by[fi] = make([]int64, len(sample.ProfileCategories))
	}
	by[fi][cat] += v
}

// finish fills out's CPU seconds (from the profile's unit), category
// shares and top functions, at most top of them, by flat then cum share.
func (tl *profileTally) finish(out *sample.Profile, unit string, top int) {
	total := tl.total
	switch unit {
	case "nanoseconds":
		out.CPUSec = float64(total) / 1e9
	case "microseconds":
		out.CPUSec = float64(total) / 1e6
	case "milliseconds":
		out.CPUSec = float64(total) / 1e3
	case "seconds":
		out.CPUSec = float64(total)
	}
	for i, c := range sample.ProfileCategories {
		out.Categories = append(out.Categories, sample.ProfileCategory{Name: c, Share: float64(tl.cats[i]) / float64(total)})
	}
	if w := tl.workers.total; w > 0 {
		out.WorkersShare = float64(w) / float64(total)
		for i, c := range sample.ProfileCategories {
			out.Workers = append(out.Workers, sample.ProfileCategory{Name: c, Share: float64(tl.workers.cats[i]) / float64(w)})
		}
	}
	out.Top = tl.top(tl.flat, tl.cum, tl.flatBy, total, top)
	if w := tl.workers.total; w > 0 {
		out.WorkersTop = tl.top(tl.workers.flat, tl.workers.cum, tl.workers.flatBy, w, top)
	}
	if in := tl.inline.total; in > 0 {
		out.InlineShare = float64(in) / float64(total)
		out.InlineTop = tl.top(tl.inline.flat, tl.inline.cum, tl.inline.flatBy, in, top)
		for i, c := range sample.ProfileCategories {
			out.Inline = append(out.Inline, sample.ProfileCategory{Name: c, Share: float64(tl.inline.cats[i]) / float64(in)})
		}
	}
	// The dataset the loading fetched from: the workers' where a fetcher
	// of theirs is named (the loading the causes read first, as
	// loadingTop), else the loop's own.
	if out.Dataset = tl.workers.dataset(); out.Dataset == "" {
		out.Dataset = tl.inline.dataset()
	}
}

// top is the functions with cum time, by flat then cum share of total, at
// most n of them.
func (tl *profileTally) top(flat, cum []int64, by [][]int64, total int64, n int) []sample.ProfileFunc {
	var fns []sample.ProfileFunc
	for i, name := range tl.t.names {
		if i < len(cum) && cum[i] > 0 {
			fns = append(fns, sample.ProfileFunc{Name: name, File: tl.t.files[i], Line: tl.t.lines[i], Call: tl.t.called[i],
				Flat: float64(flat[i]) / float64(total), Cum: float64(cum[i]) / float64(total), Category: flatCategory(by, i)})
		}
	}
	slices.SortFunc(fns, func(a, b sample.ProfileFunc) int {
		if c := cmp.Compare(b.Flat, a.Flat); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Cum, a.Cum); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return fns[:min(n, len(fns))]
}

// funcTable numbers a profile's functions, one number per name (a profile
// may list a function twice, under two IDs, and pprof shows it once), and
// caches each location's functions, innermost first. Each has the file and
// line of its first entry: where it starts, else the first line sampled.
type funcTable struct {
	names  []string
	files  []string
	lines  []int64
	called []bool // a C function the hook caught running (system name "<C call>")
	index  map[string]int
	byFunc map[*profile.Function]int
	// Locations by ID in a slice when IDs are dense (they are in profiles
	// Go and the pprof encoder write), else a map: a frame costs an index,
	// not a map lookup.
	maxID    uint64
	byID     [][]int
	locFuncs map[*profile.Location][]int
}

func newFuncTable(p *profile.Profile) *funcTable {
	t := &funcTable{
		names:    make([]string, 0, len(p.Function)+1),
		index:    make(map[string]int, len(p.Function)),
		byFunc:   make(map[*profile.Function]int, len(p.Function)),
		locFuncs: make(map[*profile.Location][]int),
	}
	for _, f := range p.Function {
		t.byFunc[f] = t.indexOf(f)
	}
	for _, loc := range p.Location {
		t.maxID = max(t.maxID, loc.ID)
	}
	if t.maxID <= uint64(4*len(p.Location)+16) {
		t.byID = make([][]int, t.maxID+1)
	}
	for _, loc := range p.Location {
		t.funcsOf(loc)
	}
	return t
}

// indexOf numbers f by its name (nil: an address's stand-in name).
func (t *funcTable) indexOf(f *profile.Function) int {
	key := f.Name
	if f.SystemName == CCall { // one per call site: its file and line
		key = f.Name + "\x00" + f.Filename + ":" + strconv.FormatInt(f.StartLine, 10)
	}
	i, ok := t.index[key]
	if !ok {
		i = len(t.names)
		t.index[key] = i
		t.names = append(t.names, f.Name)
		t.files = append(t.files, f.Filename)
		t.lines = append(t.lines, max(f.StartLine, 0))
		t.called = append(t.called, f.SystemName == CCall)
	}
	return i
}

// funcsOf is loc's functions, innermost first (inlined calls come first in
// Line); an address stands in for a location without any.
func (t *funcTable) funcsOf(loc *profile.Location) []int {
	dense := t.byID != nil && loc.ID <= t.maxID
	if dense {
		if fs := t.byID[loc.ID]; fs != nil {
			return fs
		}
	} else if fs, ok := t.locFuncs[loc]; ok {
		return fs
	}
	var fs []int
	for _, ln := range loc.Line {
		if ln.Function == nil {
			continue
		}
		i, ok := t.byFunc[ln.Function]
		if !ok { // a function missing from the table: still count it
			i = t.indexOf(ln.Function)
			t.byFunc[ln.Function] = i
		}
		if t.lines[i] == 0 && ln.Line > 0 {
			t.lines[i] = ln.Line
		}
		fs = append(fs, i)
	}
	if len(fs) == 0 {
		fs = append(fs, t.indexOf(&profile.Function{Name: fmt.Sprintf("0x%x", loc.Address)}))
	}
	if dense && loc.ID != 0 {
		t.byID[loc.ID] = fs
	} else {
		t.locFuncs[loc] = fs
	}
	return fs
}

// ruleCategory is the category of the first row of categoryRules matching
// a function by its name or file, as an index into
// sample.ProfileCategories (-1 none, or a row without a category), and
// whether the row is weak.
func ruleCategory(name, file string) (int8, bool) {
	for _, r := range categoryRules {
		for _, p := range r.match {
			if patternMatches(p, name, file) {
				return int8(slices.Index(sample.ProfileCategories, r.category)), r.weak
			}
		}
	}
	return -1, false
}

// patternMatches says whether a categoryRules pattern matches a function:
// a name prefix, "=" and the whole name, "*" and a part of the name, or "/"
// and a part of the file.
func patternMatches(p, name, file string) bool {
	switch p[0] {
	case '=':
		return name == p[1:]
	case '*':
		return strings.Contains(name, p[1:])
	case '/':
		return strings.Contains(file, p)
	}
	return strings.HasPrefix(name, p)
}

// valueIndex picks the sample value that is CPU time: the "cpu" type of a
// Go profile, else the last one (pprof's default).
// countIndex is the index of the samples' count ("samples"), -1 if none.
func countIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "samples" {
			return i
		}
	}
	return -1
}

// maxSamples bounds a profile's sample count (an hour at 100 Hz is
// 360,000 a core).
const maxSamples = 1 << 40

func valueIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			return i
		}
	}
	return len(p.SampleType) - 1
}

// inflate returns data decompressed when it is gzipped (pprof's format),
// through a limit of MaxProfileBytes: a 100 KB gzip bomb that would
// inflate to gigabytes is refused after 64 MiB, not parsed whole.
func inflate(data []byte) ([]byte, error) {
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		return data, nil
	}
	// Two passes: count first, holding nothing, so a bomb costs its
	// inflating up to the limit and no memory; then inflate into a buffer
	// of the size counted.
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a pprof profile: %w", err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(gz, MaxProfileBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("not a pprof profile: %w", err)
	case n > MaxProfileBytes:
		return nil, fmt.Errorf("profile uncompressed larger than %d MiB", MaxProfileBytes>>20)
	}
	if err := gz.Reset(bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("not a pprof profile: %w", err)
	}
	raw := make([]byte, n)
	if _, err := io.ReadFull(gz, raw); err != nil {
		return nil, fmt.Errorf("not a pprof profile: %w", err)
	}
	if len(raw) >= 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		// pprof's parser would inflate this second layer without a limit.
		return nil, errors.New("not a pprof profile: gzipped twice")
	}
	return raw, nil
}

// flatCategory is the category that holds flatDominance of function i's
// flat time in by ("other" too), "" where none does or it has none.
func flatCategory(by [][]int64, i int) string {
	if i >= len(by) || by[i] == nil {
		return ""
	}
	var sum, most int64
	at := 0
	for c, v := range by[i] {
		sum += v
		if v > most {
			most, at = v, c
		}
	}
	if sum <= 0 || float64(most) < flatDominance*float64(sum) {
		return ""
	}
	return sample.ProfileCategories[at]
}

// FuncCategory is a top function's category, "" for none: the one its
// flat time was counted in (ProfileFunc.Category: the caller's where a
// caller's row decides, so torch.stack under default_collate is
// collating and a C call under torchvision's to_tensor converting); for
// a summary that does not say (an older recording, time in several
// categories), Category's by its name and file, a C function caught
// running by its name alone (its file is its caller's).
func FuncCategory(f sample.ProfileFunc) string {
	switch {
	case f.Category == sample.CatOther:
		return ""
	case f.Category != "" && slices.Contains(sample.ProfileCategories, f.Category):
		return f.Category
	case f.Call:
		return Category(f.Name, "")
	}
	return Category(f.Name, f.File)
}

// Category is the category categoryRules give a function by its name and
// file ("" where no row names one): what a view says of a top function.
func Category(name, file string) string {
	if c, _ := ruleCategory(name, file); c >= 0 {
		return sample.ProfileCategories[c]
	}
	return ""
}
