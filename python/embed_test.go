package python

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteLaysOutTheHook: what run puts on PYTHONPATH is the package and
// the sitecustomize at the top, private to the user, and nothing else
// (no caches, no tests).
func TestWriteLaysOutTheHook(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, _ := d.Info()
		if rel != "." {
			got = append(got, rel)
			want := os.FileMode(0o600)
			if d.IsDir() {
				want = 0o700
			}
			if info.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v", rel, info.Mode().Perm(), want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sitecustomize.py", "gpuwatch_hook", "gpuwatch_hook/__init__.py", "gpuwatch_hook/_auto.py", "gpuwatch_hook/_timing.py", "gpuwatch_hook/py.typed"} {
		found := false
		for _, g := range got {
			found = found || g == want
		}
		if !found {
			t.Errorf("%s not written (wrote %v)", want, got)
		}
	}
	for _, g := range got {
		if filepath.Ext(g) == ".pyc" || filepath.Base(g) == "__pycache__" || filepath.Dir(g) == "tests" {
			t.Errorf("%s written: only the hook belongs there", g)
		}
	}
	if err := Write(dir); err == nil {
		t.Error("a second Write over the same files succeeded: it must never replace files it did not create")
	}
}
