package probes

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Announcement is a loader's discovery file (docs/architecture.md §6): a
// process serving the loader protocol writes one under DiscoveryDir while
// it serves, and removes it when it exits, so `gpuwatch` finds every rank
// on the machine with no URL typed.
type Announcement struct {
	PID       int    `json:"pid"`
	Rank      *int   `json:"rank,omitempty"`
	LocalRank *int   `json:"local_rank,omitempty"`
	WorldSize *int   `json:"world_size,omitempty"`
	URL       string `json:"url"`
	Kind      string `json:"kind,omitempty"` // "python", "embedded"
}

// Bounds on what discovery reads: the folder is the user's own, but a
// file in it is still outside input.
const (
	maxAnnouncements     = 256
	maxAnnouncementBytes = 4 << 10
)

// DiscoveryDir is where loaders announce themselves: the user's runtime
// folder ($XDG_RUNTIME_DIR/gpuwatch), or a private per-user folder in
// /tmp where there is none.
func DiscoveryDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "gpuwatch")
	}
	return filepath.Join(os.TempDir(), "gpuwatch-"+strconv.Itoa(os.Geteuid()))
}

// privateDir checks that dir is a folder of this user's that no one else
// may write to: in a shared /tmp, another user could otherwise plant
// announcements that point gpuwatch at their server.
func privateDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.IsDir():
		return fmt.Errorf("%s is not a folder", dir)
	case ok && int(sys.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to user %d, not to you: not reading announcements from it", dir, sys.Uid)
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s may be written by others (mode %v): not reading announcements from it", dir, st.Mode().Perm())
	}
	return nil
}

// Discover reads the announcements in dir of processes that still run
// (procRoot/PID exists), in rank order (those without a rank last, by
// PID). Files of processes that have gone (killed before they could
// clean up) are removed. A missing folder is no announcement; a folder
// that is not private to this user is an error.
func Discover(dir, procRoot string) ([]Announcement, error) {
	if err := privateDir(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Announcement
	seen := map[string]bool{}
	for _, e := range entries {
		if len(out) == maxAnnouncements {
			break
		}
		if !strings.HasSuffix(e.Name(), ".json") || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		a, err := readAnnouncement(path)
		if err != nil || seen[a.URL] {
			continue
		}
		if _, err := os.Stat(filepath.Join(procRoot, strconv.Itoa(a.PID))); errors.Is(err, fs.ErrNotExist) {
			_ = os.Remove(path) // its process is gone
			continue
		}
		seen[a.URL] = true
		out = append(out, a)
	}
	slices.SortStableFunc(out, func(a, b Announcement) int {
		switch {
		case a.Rank != nil && b.Rank != nil && *a.Rank != *b.Rank:
			return *a.Rank - *b.Rank
		case a.Rank != nil && b.Rank == nil:
			return -1
		case a.Rank == nil && b.Rank != nil:
			return 1
		}
		return a.PID - b.PID
	})
	return out, nil
}

func readAnnouncement(path string) (Announcement, error) {
	var a Announcement
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return a, err
	}
	defer f.Close()
	b, err := readCapped(f, maxAnnouncementBytes, "announcement")
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, err
	}
	if positiveID(strconv.Itoa(a.PID)) == nil {
		return a, errors.New("no pid")
	}
	for _, r := range []*int{a.Rank, a.LocalRank, a.WorldSize} {
		if r != nil && (*r < 0 || *r > maxRank) {
			return a, errors.New("rank out of range")
		}
	}
	if _, err := NewAttach(a.URL); err != nil {
		return a, err
	}
	if len(a.Kind) > 16 || strings.Trim(a.Kind, "abcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
		a.Kind = "" // a word, or nothing
	}
	return a, nil
}

// Announce writes a's discovery file in dir (created private to this
// user) and returns the function that removes it.
func Announce(dir string, a Announcement) (remove func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := privateDir(dir); err != nil {
		return nil, err
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	name := strconv.Itoa(a.PID)
	if i := strings.LastIndexByte(a.URL, ':'); i >= 0 {
		name += "-" + strings.Trim(a.URL[i+1:], "/")
	}
	path := filepath.Join(dir, name+".json")
	tmp, err := os.CreateTemp(dir, ".announce-*")
	if err != nil {
		return nil, err
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return nil, err
	}
	return func() { _ = os.Remove(path) }, nil
}
