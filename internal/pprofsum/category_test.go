package pprofsum

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestCategoryRulesNameKnownCategories: every row of the table names a
// category a summary has, and every category has its words for people.
func TestCategoryRulesNameKnownCategories(t *testing.T) {
	for _, r := range categoryRules {
		if r.category != "" && !slices.Contains(sample.ProfileCategories, r.category) {
			t.Errorf("row %q: not in sample.ProfileCategories", r.category)
		}
		for _, p := range r.match {
			if p == "" || p == "*" || p == "/" {
				t.Errorf("row %q: empty pattern %q matches everything", r.category, p)
			}
		}
	}
	for _, c := range sample.ProfileCategories {
		if sample.ProfileCategoryWords[c] == "" {
			t.Errorf("category %q has no words", c)
		}
	}
}

// TestCategoryOfPythonAndGoFunctions: functions as the hook names them
// (module.qualname, file beside) and as Go names them land in the job's
// terms; the rows' order carves specific functions out of general ones.
func TestCategoryOfPythonAndGoFunctions(t *testing.T) {
	const tv = "/usr/lib/python3/dist-packages/torchvision/transforms/"
	for _, c := range []struct{ name, file, want string }{
		{"PIL.ImageFile.ImageFile.load", "/usr/lib/python3/dist-packages/PIL/ImageFile.py", "decoding"},
		{"PIL.JpegImagePlugin.JpegImageFile.load_read", "/x/PIL/JpegImagePlugin.py", "reading"},
		{"PIL.JpegImagePlugin.jpeg_factory", "/x/PIL/JpegImagePlugin.py", "decoding"},
		{"PIL.PngImagePlugin.PngStream.call", "/x/PIL/PngImagePlugin.py", "decoding"},
		{"PIL.Image.open", "/x/PIL/Image.py", "decoding"},
		{"PIL.Image.Image.convert", "/x/PIL/Image.py", "decoding"},
		{"PIL.Image.Image.resize", "/x/PIL/Image.py", "augmenting"},
		{"PIL.Image.Image.tobytes", "/x/PIL/Image.py", "converting"},
		{"vendored.ImageFile.load", "/opt/app/vendor/PIL/ImageFile.py", "decoding"}, // by its file
		{"torchvision.io.image.decode_jpeg", "/x/torchvision/io/image.py", "decoding"},
		{"cv2.imdecode", "", "decoding"},
		{"soundfile.read", "/x/soundfile.py", "decoding"},
		{"torchvision.transforms.functional.resized_crop", tv + "functional.py", "augmenting"},
		{"torchvision.transforms.functional_tensor.normalize", tv + "functional_tensor.py", "augmenting"},
		{"torchvision.transforms.functional.to_tensor", tv + "functional.py", "converting"},
		{"torchvision.transforms.transforms.ToTensor.__call__", tv + "transforms.py", "converting"},
		{"albumentations.augmentations.geometric.functional.resize", "", "augmenting"},
		{"numpy.core.fromnumeric.clip", "", "augmenting"},
		{"numpy.core.shape_base.stack", "", "collating"},
		{"transformers.tokenization_utils_base.PreTrainedTokenizerBase.__call__", "", "tokenizing"},
		{"mydata.Text.tokenize", "/home/me/mydata.py", "tokenizing"},
		{"torch.utils.data._utils.collate.collate_tensor_fn", "/x/torch/utils/data/_utils/collate.py", "collating"},
		{"torch.utils.data._utils.pin_memory.pin_memory", "", "converting"},
		{"multiprocessing.queues.Queue.get", "", "serializing"},
		{"multiprocessing.reduction.recvfds", "", "serializing"},
		{"torch.multiprocessing.reductions.rebuild_storage_fd", "", "serializing"},
		{"pickle.loads", "", "serializing"},
		{"multiprocessing.connection.wait", "", "waiting"},
		{"selectors.PollSelector.select", "", "waiting"},
		{"threading.Condition.wait", "", "waiting"},
		{"queue.Queue.get", "", "waiting"},
		{"importlib._bootstrap._find_and_load", "<frozen importlib._bootstrap>", "interpreter"},
		{"socket.socket.recv_into", "", "reading"},
		{"fsspec.spec.AbstractBufferedFile.read", "", "reading"},
		{"syscall.pread", "", "reading"},
		{"github.com/gpuwatch/gpuwatch/loader.decode", "", "decoding"},
		// Decompressors are decompressing, not decoding: a reduced-size
		// image decode or a decode on the GPU does nothing for them.
		{"zlib.decompress", "/home/me/train.py", "decompressing"}, // a C call
		{"gzip._GzipReader.read", "/usr/lib/python3.11/gzip.py", "decompressing"},
		{"_compression.DecompressReader.readinto", "/usr/lib/python3.11/_compression.py", "decompressing"},
		{"bz2.BZ2File.read", "", "decompressing"},
		{"lzma.decompress", "", "decompressing"},
		{"zstandard.ZstdDecompressor.decompress", "", "decompressing"},
		{"lz4.frame.decompress", "", "decompressing"},
		{"compress/flate.(*decompressor).huffmanBlock", "", "decompressing"},
		{"json.decoder.JSONDecoder.raw_decode", "", "decoding"},
		{"pyarrow.parquet.core.ParquetFile.read", "", "decoding"},
		{"runtime.gcBgMarkWorker", "", "gc"},
		{"runtime.chanrecv", "", "waiting"},
		{"runtime.morestack", "", "interpreter"},
		{"__main__.DS.__getitem__", "/home/me/train.py", ""},
		// C functions caught running, named as _callee.py names them,
		// with their caller's file.
		{"torch.tensor", "/home/me/train.py", "converting"},
		{"torch.tensordot", "/home/me/train.py", ""}, // not torch.tensor: whole names
		{"numpy.array", "/home/me/train.py", "converting"},
		{"builtins.float", "/home/me/train.py", "converting"},
		{"self.rows[i].astype", "/home/me/train.py", "converting"},
		{"builtins.len", "/home/me/train.py", ""},
		{"builtins.list", "/home/me/train.py", ""}, // list(csv.reader(f)) is parsing

		{"torch.tensor", "/x/torch/utils/data/_utils/collate.py", "collating"}, // default_collate's numbers, by its file
		{"torch.stack", "/x/torch/utils/data/_utils/collate.py", "collating"},
		{"torch.tensor", tv + "functional.py", "converting"},
		{"time.sleep", "/home/me/train.py", "waiting"},
		{"self.tokenizer.encode", "/home/me/train.py", "tokenizing"},
		{"threading.Thread.run", "", ""}, // every thread's root: its callee decides
		{"torch.utils.data._utils.worker._worker_loop", "", ""},
	} {
		i, _ := ruleCategory(c.name, c.file)
		got := ""
		if i >= 0 {
			got = sample.ProfileCategories[i]
		}
		if got != c.want {
			t.Errorf("%s (%s): %q, want %q", c.name, c.file, got, c.want)
		}
	}
}

// TestPythonStacksInnermostDecides: whole stacks, innermost first, as a
// torchvision loop samples them: the innermost function a strong row
// matches decides; the user's own frames and thread roots defer to it; Go's
// runtime decides only as the innermost frame of a stack nothing else
// matches.
func TestPythonStacksInnermostDecides(t *testing.T) {
	const tf = "torchvision.transforms.transforms.Compose.__call__;__main__.DS.__getitem__;threading.Thread.run"
	for stack, want := range map[string]string{
		"PIL.Image.Image.resize;torchvision.transforms.functional_pil.resize;torchvision.transforms.functional.resize;" + tf: "augmenting",
		"PIL.Image.Image.tobytes;PIL.Image.Image.__array_interface__;torchvision.transforms.functional.to_tensor;" + tf:      "converting",
		"__main__.my_jitter;" + tf: "augmenting", // the user's transform, under Compose
		"PIL.ImageFile.ImageFile.load;PIL.Image.Image.convert;__main__.DS.__getitem__;threading.Thread.run":                                                                       "decoding",
		"PIL.JpegImagePlugin.JpegImageFile.load_read;PIL.ImageFile.ImageFile.load;PIL.Image.Image.convert;__main__.DS.__getitem__":                                                "reading",
		"torch.utils.data._utils.collate.collate_tensor_fn;torch.utils.data._utils.collate.collate;torch.utils.data._utils.fetch._MapDatasetFetcher.fetch":                        "collating",
		"selectors.PollSelector.select;multiprocessing.connection.wait;multiprocessing.queues.Queue.get;torch.utils.data.dataloader._MultiProcessingDataLoaderIter._try_get_data": "waiting",
		"multiprocessing.reduction.recvfds;torch.multiprocessing.reductions.rebuild_storage_fd;multiprocessing.queues.Queue.get":                                                  "serializing",
		"__main__.DS.__getitem__;torch.utils.data._utils.fetch._MapDatasetFetcher.fetch;threading.Thread.run":                                                                     "other",
		"runtime.memmove;github.com/gpuwatch/gpuwatch/loader.(*reader).copyMapped;runtime.goexit":                                                                                 "reading",
		"runtime.morestack;main.work;runtime.goexit":                                           "interpreter",
		"PIL.Image.Image.copy;PIL.Image.Image.convert;__main__.DS.__getitem__":                 "decoding", // a helper: its caller decides
		"PIL.Image.Image.copy;PIL.Image.Image.crop;torchvision.transforms.functional_pil.crop": "augmenting",
		"main.work;runtime.main": "other", // the runtime at the root is no one's overhead
		// C functions caught running (_callee.py): a caller a row names
		// decides; under the job's own code, the C function's name does;
		// its file (its caller's) never.
		"C:img.to(dtype).div@/x/torchvision/transforms/functional.py;torchvision.transforms.functional.to_tensor;" + tf: "converting",
		"C:builtins.float@/home/me/s.py;__main__.W.__getitem__.<locals>.<listcomp>;__main__.W.__getitem__":              "converting",
		"C:torch.tensor@/x/torch/utils/data/_utils/collate.py;torch.utils.data._utils.collate.collate":                  "collating",
		"C:time.sleep@/home/me/train.py;__main__.loop":                                                                  "waiting",
		"C:x.clip@/x/torchvision/transforms/functional.py":                                                              "other",
		"C:builtins.float@/home/me/s.py":                                                                                "converting",
		// A comprehension's own time (3.11: a frame of its own) is Python
		// building lists; what it calls is the callee's.
		"__main__.W.__getitem__.<locals>.<listcomp>.<listcomp>;__main__.W.__getitem__.<locals>.<listcomp>;__main__.W.__getitem__": "converting",
		"__main__.f;__main__.W.__getitem__.<locals>.<listcomp>;__main__.W.__getitem__":                                            "other",
		"__main__.W.__getitem__.<locals>.<genexpr>;__main__.W.__getitem__":                                                        "other",
		"torchvision.transforms.transforms.Compose.__call__.<locals>.<listcomp>;" + tf:                                            "augmenting",
		// numpy's .npy load: its header parsed by Python's tokenize module,
		// the array read by fromfile (a review: "tokenizing text" and
		// "augmenting"); Python's tokenize under nothing a row names is
		// the interpreter's, and a text tokenizer's as before.
		"C:_compile(PseudoToken).match@/usr/lib/python3.11/tokenize.py;tokenize._tokenize;tokenize.generate_tokens;numpy.lib.format._filter_header;numpy.lib.format._read_array_header;numpy.lib.format.read_array;numpy.lib.npyio.load;__main__.DS.__getitem__": "reading",
		"C:numpy.fromfile@/usr/lib/python3/dist-packages/numpy/lib/format.py;numpy.lib.format.read_array;numpy.lib.npyio.load;__main__.DS.__getitem__":                                                                                                           "reading",
		"ast.parse;ast.literal_eval;numpy.lib.utils.safe_eval;numpy.lib.format._read_array_header;numpy.lib.format.read_array_header_1_0;numpy.lib.format.open_memmap;numpy.lib.npyio.load;__main__.DS.__getitem__":                                              "reading", // np.load(mmap_mode="r") on numpy 1.24
		"tokenize._tokenize;tokenize.generate_tokens;__main__.f": "interpreter",
		// A job's own collate_fn, under the hook's timing of it: collating
		// where nothing closer to the leaf is named; a tensor made there
		// is converting, as anywhere.
		"torch.nn.utils.rnn.pad_sequence;__main__.collate;gpuwatch_hook._stages.wrap_fetcher.<locals>.timed_collate;torch.utils.data._utils.fetch._MapDatasetFetcher.fetch;gpuwatch_hook._stages.wrap_fetcher.<locals>.timed_fetch": "collating",
		"__main__.collate;gpuwatch_hook._stages.timed_collate;torch.utils.data._utils.fetch._MapDatasetFetcher.fetch":                                                                                                               "collating",
		"C:torch.tensor@/x/train.py;__main__.collate;gpuwatch_hook._stages.wrap_fetcher.<locals>.timed_collate":                                                                                                                     "converting",
		"tokenizers.Tokenizer.encode_batch;mydata.Text.tokenize;__main__.DS.__getitem__":                                                                                                                                            "tokenizing",
		// A worker's resource sharer accepting a connection for a shared
		// tensor's descriptor: the hand-over, not a read.
		"C:self._accept@/usr/lib/python3.11/socket.py;socket.socket.accept;multiprocessing.connection.SocketListener.accept;multiprocessing.connection.Listener.accept;multiprocessing.resource_sharer._ResourceSharer._serve;threading.Thread.run": "serializing",
	} {
		s, err := summarize(synthetic(map[string]int64{stack: 1}), 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range s.Categories {
			if c.Share == 1 && c.Name != want {
				t.Errorf("%s: %s, want %s", stack, c.Name, want)
			}
		}
		// Its innermost function, a top function, is named in the same
		// category its time went to (none for other).
		for _, f := range s.Top {
			if f.Flat == 1 && FuncCategory(f) != strings.TrimPrefix(want, "other") {
				t.Errorf("%s: top function %s in %q, its time in %s", stack, f.Name, FuncCategory(f), want)
			}
		}
	}
}

// TestRealHookProfileGolden summarizes a profile the hook took of a real
// loop (testdata/hook-torchvision-jpeg.pb.gz: num_workers=0, 640×480
// JPEGs through PIL and torchvision's RandomResizedCrop, flip, ToTensor
// and Normalize, batches of 32): decoding leads, the transforms, collate
// and ToTensor have their own shares, and the top functions say their
// file and line.
func TestRealHookProfileGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "hook-torchvision-jpeg.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := SummarizeProfile(data, 8)
	if err != nil {
		t.Fatal(err)
	}
	share := map[string]float64{}
	for _, c := range s.Categories {
		share[c.Name] = c.Share
	}
	for c, lo := range map[string]float64{"decoding": 0.4, "augmenting": 0.15, "collating": 0.1, "converting": 0.03, "reading": 0.01} {
		if share[c] < lo {
			t.Errorf("%s %.1f %%, want ≥ %.0f %%", c, 100*share[c], 100*lo)
		}
	}
	if share["other"] > 0.05 {
		t.Errorf("other %.1f %%: a torchvision loop's stacks are named", 100*share["other"])
	}
	f := s.Top[0]
	if f.Name != "PIL.ImageFile.ImageFile.load" || filepath.Base(f.File) != "ImageFile.py" || f.Line <= 0 {
		t.Errorf("top function %+v: want PIL's ImageFile.load with its file and line", f)
	}
	golden(t, "hook-torchvision-jpeg.golden", summaryText(s))
}

// TestWorkersTopIsTheWorkersAlone: the workers' top functions come from
// their samples only, as shares of their CPU: a cause in __getitem__ must
// not name the training loop's own busiest call.
func TestWorkersTopIsTheWorkersAlone(t *testing.T) {
	p := synthetic(map[string]int64{"C:builtins.float@/w.py;W.__getitem__": 3, "loss.item;train.loop": 5})
	for _, s := range p.Sample {
		if s.Location[0].Line[0].Function.Name == "builtins.float" {
			s.Label = map[string][]string{workerLabel: {"4242"}}
		}
	}
	s, err := summarize(p, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.WorkersTop) == 0 || s.WorkersTop[0].Name != "builtins.float" || s.WorkersTop[0].Flat != 1 || !s.WorkersTop[0].Call {
		t.Fatalf("workers' top %+v", s.WorkersTop)
	}
	for _, f := range s.WorkersTop {
		if f.Name == "loss.item" || f.Name == "train.loop" {
			t.Errorf("the training process's %s among the workers' top", f.Name)
		}
	}
	if s.Top[0].Name != "loss.item" || s.Top[0].Flat != 5.0/8 {
		t.Errorf("top %+v", s.Top)
	}
	if s, _ := summarize(synthetic(map[string]int64{"a;b": 1}), 8); s.WorkersTop != nil {
		t.Errorf("no worker, yet workers' top %+v", s.WorkersTop)
	}
}

// TestInlineTopIsTheLoopsLoadingAlone: with num_workers=0 the training
// process loads each batch under the DataLoader's fetch, beside its step:
// the loading's top functions come from the samples under the fetch only,
// as shares of their CPU, so a cause in __getitem__ names the dataset's
// code, not the backward pass the whole profile's top puts first (a
// small MLP's verdict cited run_backward beside __getitem__ advice).
func TestInlineTopIsTheLoopsLoadingAlone(t *testing.T) {
	p := synthetic(map[string]int64{
		"DS.__getitem__;fetch.<listcomp>;_MapDatasetFetcher.fetch;DataLoader._next_data;train.loop":                      3,
		"C:torch.randn@/ds.py;DS.__getitem__;fetch.<listcomp>;_MapDatasetFetcher.fetch;DataLoader._next_data;train.loop": 1,
		"run_backward;Tensor.backward;train.loop":                                                                        6,
		"C:builtins.float@/w.py;W.__getitem__;_MapDatasetFetcher.fetch;worker_loop":                                      2,
	})
	for _, f := range p.Function {
		if f.Name == "_MapDatasetFetcher.fetch" || f.Name == "fetch.<listcomp>" {
			f.Filename = "/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py"
		}
	}
	for _, s := range p.Sample {
		if s.Location[0].Line[0].Function.Name == "builtins.float" {
			s.Label = map[string][]string{workerLabel: {"4242"}} // a worker's: not the loop's loading
		}
	}
	s, err := summarize(p, 8)
	if err != nil {
		t.Fatal(err)
	}
	if s.Top[0].Name != "run_backward" {
		t.Fatalf("the whole profile's top %+v: want the backward pass first", s.Top)
	}
	if len(s.InlineTop) == 0 || s.InlineTop[0].Name != "DS.__getitem__" || s.InlineTop[0].Flat != 0.75 || s.InlineTop[0].Cum != 1 {
		t.Fatalf("the loop's loading top %+v: want DS.__getitem__ first, 3 of its 4 samples flat, all 4 cum", s.InlineTop)
	}
	for _, f := range s.InlineTop {
		if f.Name == "run_backward" || f.Name == "builtins.float" {
			t.Errorf("%s among the loop's loading: it is the step's or a worker's", f.Name)
		}
	}
	if s.InlineShare != 4.0/12 {
		t.Errorf("inline share %v, want 4 of 12 samples", s.InlineShare)
	}
	if len(s.WorkersTop) == 0 || s.WorkersTop[0].Name != "builtins.float" || s.WorkersTop[0].Flat != 1 {
		t.Errorf("workers' top %+v: the worker's sample alone", s.WorkersTop)
	}
	// Its categories, as shares of the loop's loading alone (the profile
	// causes read them with num_workers=0): all the categories, summing
	// to the whole of it.
	sum := 0.0
	for _, c := range s.Inline {
		sum += c.Share
	}
	if len(s.Inline) != len(sample.ProfileCategories) || math.Abs(sum-1) > 1e-9 {
		t.Errorf("the loop's loading by category %+v (sum %v)", s.Inline, sum)
	}
	if s, _ := summarize(synthetic(map[string]int64{"a;b": 1}), 8); s.Inline != nil {
		t.Errorf("no fetch on any stack, yet inline categories %+v", s.Inline)
	}
	if s, _ := summarize(synthetic(map[string]int64{"a;b": 1}), 8); s.InlineTop != nil || s.InlineShare != 0 {
		t.Errorf("no fetch on any stack, yet inline %v %+v", s.InlineShare, s.InlineTop)
	}
}

// A top function read from a summary that does not carry its category
// (an older recording): by its name and file, a C call by its name alone
// (its file is its caller's, which never decides it).
func TestFuncCategoryWithoutTheTallysWord(t *testing.T) {
	for _, c := range []struct {
		f    sample.ProfileFunc
		want string
	}{
		{sample.ProfileFunc{Name: "torch.stack", File: "/x/torch/utils/data/_utils/collate.py", Call: true}, ""},
		{sample.ProfileFunc{Name: "torch.stack", File: "/x/torch/utils/data/_utils/collate.py", Call: true, Category: "collating"}, "collating"},
		{sample.ProfileFunc{Name: "torch.tensor", File: "/home/me/train.py", Call: true}, "converting"},
		{sample.ProfileFunc{Name: "torch.utils.data._utils.collate.collate", File: "/x/torch/utils/data/_utils/collate.py"}, "collating"},
		{sample.ProfileFunc{Name: "torch.utils.data._utils.collate.collate", Category: "other"}, ""},
		{sample.ProfileFunc{Name: "torch.utils.data._utils.collate.collate", Category: "\x1b[2Jbogus"}, "collating"},
	} {
		if got := FuncCategory(c.f); got != c.want {
			t.Errorf("%s at %s (call %v, category %q): %q, want %q", c.f.Name, c.f.File, c.f.Call, c.f.Category, got, c.want)
		}
	}
}

// A top function's category is the one that holds at least 90 % of its
// flat time (one stray sample under another caller does not unname it),
// and the workers' top reads the workers' samples alone: torch.stack
// under default_collate in the workers, under the job's own code in the
// training process, is collating in the workers' top and in neither
// category overall.
func TestTopCategoryByDominanceAndWorkersAlone(t *testing.T) {
	const stack = "C:torch.stack@/x/torch/utils/data/_utils/collate.py;torch.utils.data._utils.collate.collate_tensor_fn;torch.utils.data._utils.collate.collate"
	p := synthetic(map[string]int64{stack: 19, "C:torch.stack@/x/torch/utils/data/_utils/collate.py;torch.utils.data.dataloader._MultiProcessingDataLoaderIter._try_get_data": 1})
	s, err := summarize(p, 8)
	if err != nil {
		t.Fatal(err)
	}
	if f := s.Top[0]; f.Name != "torch.stack" || f.Category != "collating" {
		t.Errorf("19 samples collating, 1 waiting: top %+v, want collating", f)
	}
	p = synthetic(map[string]int64{stack: 5, "C:torch.stack@/x/torch/utils/data/_utils/collate.py;__main__.step": 5})
	for _, smp := range p.Sample {
		if len(smp.Location) == 3 {
			smp.Label = map[string][]string{workerLabel: {"4242"}}
		}
	}
	if s, err = summarize(p, 8); err != nil {
		t.Fatal(err)
	}
	if f := s.WorkersTop[0]; f.Name != "torch.stack" || FuncCategory(f) != "collating" {
		t.Errorf("workers' top %+v: want collating, from the workers' samples", f)
	}
	if f := s.Top[0]; f.Category != "" {
		t.Errorf("top %+v: half collating, half other: want no category", f)
	}
}

// TestDatasetKindFromTheFetcher: which kind of dataset the loading
// fetched from, by torch's fetcher on the stacks. Real hook profiles
// (testdata/hook-iterable-workers.pb.gz: an IterableDataset whose
// generator computes each sample, 2 workers, merged by the hook under
// torch 1.13 and Python 3.11; hook-zlib-workers.pb.gz: a map-style
// dataset decompressing each sample in __getitem__, 2 workers;
// hook-torchvision-jpeg.pb.gz: ImageFolder at num_workers=0) and the
// embedded Go loader's (no fetcher: unknown). An IterableDataset has no
// __getitem__: the causes name its stage from this.
func TestDatasetKindFromTheFetcher(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"hook-iterable-workers.pb.gz", sample.DatasetIterable},
		{"hook-zlib-workers.pb.gz", sample.DatasetMap},
		{"hook-torchvision-jpeg.pb.gz", sample.DatasetMap},
		{"loader-io-bound.pb.gz", ""},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		s, err := SummarizeProfile(data, 8)
		if err != nil {
			t.Fatal(err)
		}
		if s.Dataset != c.want {
			t.Errorf("%s: dataset %q, want %q", c.file, s.Dataset, c.want)
		}
	}
	const fetch = "/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py"
	kinds := func(stacks map[string]int64, workers ...string) *sample.Profile {
		t.Helper()
		p := synthetic(stacks)
		for _, f := range p.Function {
			if strings.Contains(f.Name, "Fetcher.") || strings.HasSuffix(f.Name, "fetch.fetch") {
				f.Filename = fetch
			}
		}
		for _, s := range p.Sample {
			if slices.Contains(workers, s.Location[len(s.Location)-1].Line[0].Function.Name) {
				s.Label = map[string][]string{workerLabel: {"4242"}}
			}
		}
		s, err := summarize(p, 8)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// The workers iterate a stream while the loop evaluates a map-style
	// set inline: the workers' loading is the one the causes read first.
	s := kinds(map[string]int64{
		"Stream.__iter__;torch.utils.data._utils.fetch._IterableDatasetFetcher.fetch;worker_loop":                                                                      3,
		"Val.__getitem__;torch.utils.data._utils.fetch._MapDatasetFetcher.fetch.<locals>.<listcomp>;torch.utils.data._utils.fetch._MapDatasetFetcher.fetch;train.loop": 5,
	}, "worker_loop")
	if s.Dataset != sample.DatasetIterable {
		t.Errorf("an IterableDataset in the workers beside a map-style one inline: %q", s.Dataset)
	}
	s = kinds(map[string]int64{
		"Val.__getitem__;torch.utils.data._utils.fetch._MapDatasetFetcher.fetch.<locals>.<listcomp>;torch.utils.data._utils.fetch._MapDatasetFetcher.fetch;train.loop": 5,
		"run_backward;train.loop": 9,
	})
	if s.Dataset != sample.DatasetMap {
		t.Errorf("a map-style dataset loaded inline: %q", s.Dataset)
	}
	// Before 3.11 a frame has no qualified name: both fetchers are
	// "fetch", and the kind is not guessed.
	s = kinds(map[string]int64{"Stream.__iter__;torch.utils.data._utils.fetch.fetch;worker_loop": 3}, "worker_loop")
	if s.Dataset != "" || s.WorkersShare != 1 {
		t.Errorf("a fetcher without its class: dataset %q (workers %v), want none", s.Dataset, s.WorkersShare)
	}
}

// TestDecompressingIsNotDecoding: a real hook profile of a map-style
// dataset that zlib-decompresses each record in __getitem__, 2 workers
// (testdata/hook-zlib-workers.pb.gz; zlib.decompress a C call the hook
// caught running, Python 3.11). The workers' CPU is decompressing, not
// decoding: its workers read 74 % decoding, and under gpuwatch run the
// decode cause advised PIL's Image.draft and a decode on the GPU for
// zlib.
func TestDecompressingIsNotDecoding(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "hook-zlib-workers.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := SummarizeProfile(data, 8)
	if err != nil {
		t.Fatal(err)
	}
	share := map[string]float64{}
	for _, c := range s.Workers {
		share[c.Name] = c.Share
	}
	if share[sample.CatDecompressing] < 0.4 || share[sample.CatDecoding] > 0.05 {
		t.Errorf("the workers' CPU: decompressing %.1f %%, decoding %.1f %%; want zlib's time decompressing", 100*share[sample.CatDecompressing], 100*share[sample.CatDecoding])
	}
	if len(s.WorkersTop) == 0 || s.WorkersTop[0].Name != "zlib.decompress" || !s.WorkersTop[0].Call || FuncCategory(s.WorkersTop[0]) != sample.CatDecompressing {
		t.Errorf("the workers' top %+v: want zlib.decompress first, decompressing", s.WorkersTop)
	}
}

// TestTheStepIsNoAugmentation: in a hooked training process's profile
// (the DataLoader's fetch on some stacks), its model's torch.nn.functional
// calls outside the fetch are the step, not augmenting (a review: a
// CNN's max_pool2d, batch_norm and relu read "augmenting 42 %"); the same
// calls under the fetch, or in a worker, stay augmenting, and a profile
// that shows no fetch keeps its rows as they are.
func TestTheStepIsNoAugmentation(t *testing.T) {
	stacks := map[string]int64{
		"torch.nn.functional.max_pool2d;Module._call_impl;Net.forward;train.loop":                  4,
		"torch.nn.functional.relu;Aug.__call__;DS.__getitem__;_MapDatasetFetcher.fetch;train.loop": 2,
		"torch.nn.functional.relu;Aug.__call__;W.__getitem__;_MapDatasetFetcher.fetch;worker_loop": 3,
		"run_backward;Tensor.backward;train.loop":                                                  1,
	}
	p := synthetic(stacks)
	for _, f := range p.Function {
		if f.Name == "_MapDatasetFetcher.fetch" {
			f.Filename = "/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py"
		}
	}
	for _, s := range p.Sample {
		if s.Location[len(s.Location)-1].Line[0].Function.Name == "worker_loop" {
			s.Label = map[string][]string{workerLabel: {"4242"}}
		}
	}
	s, err := summarize(p, 8)
	if err != nil {
		t.Fatal(err)
	}
	share := func(cats []sample.ProfileCategory, name string) float64 {
		for _, c := range cats {
			if c.Name == name {
				return c.Share
			}
		}
		return 0
	}
	near(t, "augmenting, the loop's loading and the worker's", share(s.Categories, sample.CatAugmenting), 5.0/10)
	near(t, "other, the step", share(s.Categories, sample.CatOther), 5.0/10)
	// No fetch anywhere: nothing says where loading is, and the rows decide.
	s, err = summarize(synthetic(map[string]int64{"torch.nn.functional.relu;Net.forward;train.loop": 1}), 8)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "augmenting with no fetch seen", share(s.Categories, sample.CatAugmenting), 1)
}
