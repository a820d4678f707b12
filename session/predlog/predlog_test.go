package predlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 19, 0, 0, 0, time.UTC)

func rec(host string, predicted, measured float64) Record {
	return Record{Time: t0, Host: host, Change: "num_workers 1 → 4", Predicted: predicted, Measured: measured, High: 1.2 * predicted, Model: ModelRange, Loader: LoaderJob}
}

// TestRecordsOfTheOldModelAreNotCounted: a record without the range's
// model (its point the old, optimistic one) or with a high side below its
// point is left out of the bias.
func TestRecordsOfTheOldModelAreNotCounted(t *testing.T) {
	old := rec("a", 1500, 1000)
	old.High, old.Model = 0, 0
	inverted := rec("a", 1500, 1000)
	inverted.High = 1000
	rs := []Record{old, old, old, inverted, rec("a", 1000, 1000), rec("a", 1000, 1000)}
	if b, ok := BiasOn(rs, "a", LoaderJob); ok {
		t.Fatalf("bias %+v from two records of the range's model", b)
	}
	if b, ok := BiasOn(append(rs, rec("a", 1000, 1000)), "a", LoaderJob); !ok || b.Steps != 3 || b.Ratio != 1 {
		t.Fatalf("bias %+v ok %v: want the three records of the range's model, 1.0", b, ok)
	}
}

// TestBiasIsTheMedianOfThisHostsNewest: the bias is the median of
// predicted/measured over the host's newest 50 records (another host's
// left out), said from 10 % either way, and not taken on fewer than 3.
func TestBiasIsTheMedianOfThisHostsNewest(t *testing.T) {
	tests := []struct {
		name string
		rs   []Record
		ok   bool
		pct  float64
		say  string
	}{
		{"two records are too few", []Record{rec("a", 1200, 1000), rec("a", 1200, 1000), rec("b", 1200, 1000)}, false, 0, ""},
		{"the median of three, high", []Record{rec("a", 1200, 1000), rec("a", 1000, 1000), rec("a", 1500, 1000), rec("b", 100, 1000)}, true, 20,
			"predictions on this box have run 20 % above what was measured (median of 3 tune steps)"},
		{"an even count averages the middle two", []Record{rec("a", 1100, 1000), rec("a", 1300, 1000), rec("a", 1200, 1000), rec("a", 1400, 1000)}, true, 25,
			"predictions on this box have run 25 % above what was measured (median of 4 tune steps)"},
		{"low predictions are said as below", []Record{rec("a", 800, 1000), rec("a", 800, 1000), rec("a", 800, 1000)}, true, -20,
			"predictions on this box have run 20 % below what was measured (median of 3 tune steps)"},
		{"accurate ones say nothing", []Record{rec("a", 1050, 1000), rec("a", 950, 1000), rec("a", 1090, 1000)}, true, 5, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := BiasOn(tt.rs, "a", LoaderJob)
			if ok != tt.ok || (ok && (b.Pct() < tt.pct-0.01 || b.Pct() > tt.pct+0.01)) || b.String() != tt.say {
				t.Fatalf("bias %+v (%.2f %%) ok %v %q, want %.0f %% ok %v %q", b, b.Pct(), ok, b.String(), tt.pct, tt.ok, tt.say)
			}
		})
	}
	// The newest 50: 60 accurate records, then 50 high ones.
	var rs []Record
	for range 60 {
		rs = append(rs, rec("a", 1000, 1000))
	}
	for range 50 {
		rs = append(rs, rec("a", 1300, 1000))
	}
	if b, _ := BiasOn(rs, "a", LoaderJob); b.Steps != 50 || b.Ratio != 1.3 {
		t.Fatalf("bias %+v, want the newest 50 at 1.3", b)
	}
}

// TestFileKeepsTheNewest200: past MaxRecords the file is rewritten with
// the newest, in a private folder, the file 0600.
func TestFileKeepsTheNewest200(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "gpuwatch", "predictions.jsonl")
	for i := range MaxRecords + 30 {
		if err := Append(path, rec("a", float64(1000+i), 1000)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n > MaxRecords {
		t.Fatalf("%d lines, want at most %d", n, MaxRecords)
	}
	rs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) < MaxRecords-1 || rs[len(rs)-1].Predicted != 1000+MaxRecords+29 {
		t.Fatalf("%d records, last %+v: want the newest kept", len(rs), rs[len(rs)-1])
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", p, st.Mode(), err, want)
		}
	}
	// A file grown past MaxBytes by someone else is cut to the newest too.
	big := bytes.Repeat([]byte("x"), 1024)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range MaxBytes / len(big) {
		f.Write(append(big, '\n'))
	}
	f.Close()
	if err := Append(path, rec("a", 7, 1)); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Size() > 64<<10 {
		t.Fatalf("%d bytes after the rewrite", st.Size())
	}
	if rs, _ := Read(path); len(rs) != 1 || rs[0].Predicted != 7 {
		t.Fatalf("after the garbage: %+v", rs)
	}
}

// TestASymlinkIsRefused: a symlink at the file's path (planted to make
// gpuwatch append to another file) is neither followed nor read.
func TestASymlinkIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gpuwatch")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "predictions.jsonl")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := Append(path, rec("a", 1200, 1000)); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("append through a symlink: %v, want ELOOP", err)
	}
	if _, err := Read(path); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("read through a symlink: %v, want ELOOP", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "mine\n" {
		t.Fatalf("the symlink's target was written: %q", b)
	}
	// A folder others may write to is refused as well.
	open := filepath.Join(t.TempDir(), "gpuwatch")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	if err := Append(filepath.Join(open, "predictions.jsonl"), rec("a", 1200, 1000)); err == nil {
		t.Fatal("appended in a folder anyone may write to")
	}
}

// TestPathFollowsXDGStateHome: $XDG_STATE_HOME when absolute, else
// ~/.local/state.
func TestPathFollowsXDGStateHome(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/s")
	if p, _ := Path(); p != "/s/gpuwatch/predictions.jsonl" {
		t.Fatal(p)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/h")
	if p, _ := Path(); p != "/h/.local/state/gpuwatch/predictions.jsonl" {
		t.Fatal(p)
	}
}

// TestParseSkipsWhatIsNoRecord: malformed lines, missing or absurd
// figures are skipped, the good lines around them kept.
func TestParseSkipsWhatIsNoRecord(t *testing.T) {
	in := strings.Join([]string{
		`{"time":"2026-11-27T19:00:00Z","host":"a","change":"x","predicted":1200,"measured":1000}`,
		`{"host":"a","predicted":1200`,
		`{"host":"a","predicted":0,"measured":1000}`,
		`{"host":"a","predicted":-1,"measured":1000}`,
		`{"host":"","predicted":1,"measured":1000}`,
		`{"host":"a","predicted":1e300,"measured":1000}`,
		`[1,2]`,
		``,
		`{"host":"a","predicted":900,"measured":1000}`,
	}, "\n")
	rs := Parse([]byte(in))
	if len(rs) != 2 || rs[0].Predicted != 1200 || rs[1].Predicted != 900 {
		t.Fatalf("%+v", rs)
	}
}

// FuzzParse: whatever the file holds, Parse does not panic, every record
// it returns is valid and survives a round trip, and the bias over them is
// a finite ratio.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"time":"2026-11-27T19:00:00Z","host":"a","change":"num_workers 1 → 4","predicted":1200,"measured":1000}` + "\n"))
	f.Add([]byte("{\"host\":\"a\",\"predicted\":1e-300,\"measured\":1e12}\n\n{\"host\":\"a\"\n"))
	f.Add([]byte(`{"host":"a","predicted":NaN,"measured":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rs := Parse(b)
		for _, r := range rs {
			if !r.valid() {
				t.Fatalf("invalid record %+v", r)
			}
			line, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if back := Parse(line); len(back) != 1 || back[0].Predicted != r.Predicted || back[0].Host != r.Host {
				t.Fatalf("round trip of %+v: %+v", r, back)
			}
		}
		if len(rs) > 0 {
			if bias, ok := BiasOn(rs, rs[0].Host, LoaderJob); ok && !(bias.Ratio > 0 && bias.Ratio < 1e30) {
				t.Fatalf("bias %+v", bias)
			}
		}
	})
}

// TestTheBiasIsEachPipelinesOwn (a review): a user's job was told
// "predictions on this box have run 28 % below what was measured" from
// tune's steps over gpuwatch's own loader. Each pipeline's steps count
// for it alone; a record from before the key, for neither.
func TestTheBiasIsEachPipelinesOwn(t *testing.T) {
	var rs []Record
	for range 3 {
		r := rec("a", 700, 1000)
		r.Loader = LoaderEmbedded
		rs = append(rs, r)
	}
	if b, ok := BiasOn(rs, "a", LoaderJob); ok {
		t.Errorf("the job was told the embedded loader's bias: %+v", b)
	}
	if b, ok := BiasOn(rs, "a", LoaderEmbedded); !ok || b.Ratio != 0.7 {
		t.Errorf("the embedded loader's own: %+v %v", b, ok)
	}
	for i := range rs {
		rs[i].Loader = ""
	}
	if _, ok := BiasOn(rs, "a", LoaderJob); ok {
		t.Error("records without a loader were counted for a job")
	}
}
