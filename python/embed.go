// Package python ships the Python hook inside the gpuwatch binary, so that
// `gpuwatch run` works from a release binary with no checkout and no pip
// install. It holds no Go logic beyond writing the files: the hook is the
// gpuwatch_hook package beside this file, and run/sitecustomize.py the
// file `gpuwatch run` puts first on the command's PYTHONPATH. (go:embed
// cannot reach parent folders, hence this file here.)
package python

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed gpuwatch_hook/*.py gpuwatch_hook/py.typed run/sitecustomize.py
var files embed.FS

// Write writes the hook into dir, which must exist and be private to the
// user: dir/sitecustomize.py and dir/gpuwatch_hook/. Files are 0600 and
// folders 0700: nobody else may plant code the job will run.
func Write(dir string) error {
	return fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, path)
		if path == "run/sitecustomize.py" {
			dst = filepath.Join(dir, "sitecustomize.py")
		}
		switch {
		case path == "." || path == "run":
			return nil
		case d.IsDir():
			return os.Mkdir(dst, 0o700)
		}
		b, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("write the hook: %w", err)
		}
		_, werr := f.Write(b)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		return werr
	})
}
