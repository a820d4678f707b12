package endpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/sample"
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
	// Rendezvous is a distributed job's MASTER_ADDR:MASTER_PORT, as the
	// hook read them from its launcher's environment: two jobs running at
	// once cannot share one (their rank 0 listens there), so it tells
	// apart two jobs of the same WORLD_SIZE (sameJob). "" where unset or
	// not a host and a port.
	Rendezvous string `json:"rendezvous,omitempty"`
	// Token is what the loader wants on every request (Authorization:
	// Bearer); "" for a loader that wants none (the embedded Go loader's
	// debug server, hooks before issue 41). The announcement is 0600 in a
	// folder of the user's alone: no other user reads it.
	Token string `json:"token,omitempty"`
	// key is the loader's URL as one loader has it (loaderKey), set by
	// Discover.
	key string
	// uid is the announcement file's owner, the user whose process must
	// hold the loader's socket; procRoot where that was proven (Discover).
	uid      int
	procRoot string
}

// Bounds on what discovery reads: the folder is the user's own, but a
// file in it is still outside input, and a broken job may fill it. A scan
// lists at most maxDiscoveryEntries names (junk included: listing is
// cheap), looks at most at maxDiscoveryFiles of those named as
// announcements are (a stat of the process, then the file), and keeps
// maxAnnouncements loaders.
const (
	maxAnnouncements     = 256
	maxAnnouncementBytes = 4 << 10
	maxDiscoveryEntries  = 1 << 16
	maxDiscoveryFiles    = 1024
	maxRefusals          = 8
)

// A token is at most maxTokenBytes of tokenChars (the hook's are 43
// characters of URL-safe base64): it goes into a header as it is.
const (
	maxTokenBytes = 256
	tokenChars    = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"
)

// announcementName is how Announce and the Python hook name an
// announcement: PID-PORT.json. Other names are not looked at.
var announcementName = regexp.MustCompile(`^([0-9]{1,7})-[0-9]{1,5}\.json$`)

// Discovery is what one scan of the discovery folder found: the
// announcements taken, and what it refused and why, so a view can say so.
type Discovery struct {
	Dir   string
	Found []Announcement
	// Refused names each announcement not taken and why (at most
	// maxRefusals; Refusals counts them all).
	Refused  []string
	Refusals int
	// Capped: the folder held more than maxDiscoveryEntries entries, and
	// only that many were read.
	Capped bool
}

// Note is the discovery's trouble in a line ("" when there is none): what
// was refused, and the cap.
func (d Discovery) Note() string {
	var parts []string
	if d.Capped {
		parts = append(parts, fmt.Sprintf("%s holds too many files: a scan lists %d and looks at %d announcements; some were not looked at (remove what is not an announcement)",
			d.Dir, maxDiscoveryEntries, maxDiscoveryFiles))
	}
	if d.Refusals > 0 {
		s := fmt.Sprintf("refused %d announcement", d.Refusals)
		if d.Refusals > 1 {
			s += "s"
		}
		s += ": " + strings.Join(d.Refused, "; ")
		if d.Refusals > len(d.Refused) {
			s += fmt.Sprintf("; and %d more", d.Refusals-len(d.Refused))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func (d *Discovery) refuse(name, format string, args ...any) {
	if d.Refusals++; len(d.Refused) < maxRefusals {
		d.Refused = append(d.Refused, name+": "+fmt.Sprintf(format, args...))
	}
}

// DiscoveryDir is where loaders announce themselves: the user's runtime
// folder ($XDG_RUNTIME_DIR/gpuwatch), or a private per-user folder in
// /tmp where there is none.
func DiscoveryDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "gpuwatch")
	}
	return filepath.Join(os.TempDir(), "gpuwatch-"+strconv.Itoa(os.Geteuid()))
}

// DiscoveryDirs are the folders a loader of this user may have announced
// itself in, DiscoveryDir first: a job started where XDG_RUNTIME_DIR was
// set (an ssh session) or not (cron, su, Slurm) uses another than the
// gpuwatch looking for it. For finding a given URL's token only: discovery
// itself reads DiscoveryDir.
func DiscoveryDirs() []string {
	uid := strconv.Itoa(os.Geteuid())
	dirs := []string{DiscoveryDir()}
	for _, d := range []string{filepath.Join("/run/user", uid, "gpuwatch"), filepath.Join(os.TempDir(), "gpuwatch-"+uid)} {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// privateDir checks that dir is a folder of this user's that no one else
// may write to: in a shared /tmp, another user could otherwise plant
// announcements that point gpuwatch at their server.
func privateDir(dir string) error {
	if err := probes.OwnedFolder(dir, 0o022); err != nil {
		return fmt.Errorf("%w: not reading announcements from it", err)
	}
	return nil
}

// Discover reads the announcements in dir of processes that still run
// (procRoot/PID exists), in rank order (those without a rank last, by
// PID). Files of processes that have gone (killed before they could
// clean up) are removed. A missing folder is no announcement; a folder
// that is not private to this user is an error.
//
// One loader is one rank: announcements are taken apart by their URL as
// normalized (no credentials, no trailing slash, localhost and
// ::ffff:127.0.0.1 read as 127.0.0.1) and by the announcing PID. Only
// loopback URLs are taken: a file in the user's folder must not send
// gpuwatch to another host. The Discovery says what was refused and why.
func Discover(dir, procRoot string) (Discovery, error) {
	d := Discovery{Dir: dir}
	if err := privateDir(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return d, nil
		}
		return d, err
	}
	cands, err := d.candidates()
	if err != nil {
		return d, err
	}
	seen := seenLoaders{byURL: map[string]string{}, byPID: map[int]string{}}
	for _, c := range cands {
		d.take(c, procRoot, seen)
	}
	slices.SortStableFunc(d.Found, byRankThenPID)
	return d, nil
}

// candidate is a file of the discovery folder named as Announce names
// one: PID-N.json.
type candidate struct{ name, pid string }

// candidates lists d.Dir's files named as Announce writes them, sorted so
// that one folder gives one result whatever the file system's order, at
// most maxDiscoveryFiles of the first maxDiscoveryEntries (d.Capped past
// either).
func (d *Discovery) candidates() ([]candidate, error) {
	f, err := os.Open(d.Dir)
	if err != nil {
		return nil, err
	}
	names, err := f.Readdirnames(maxDiscoveryEntries + 1)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(names) > maxDiscoveryEntries {
		d.Capped, names = true, names[:maxDiscoveryEntries]
	}
	var cands []candidate
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' || !strings.HasSuffix(name, ".json") {
			continue // cheap: most junk ends here
		}
		if m := announcementName.FindStringSubmatch(name); m != nil {
			cands = append(cands, candidate{name, m[1]})
		}
	}
	slices.SortFunc(cands, func(a, b candidate) int { return strings.Compare(a.name, b.name) })
	if len(cands) > maxDiscoveryFiles {
		d.Capped, cands = true, cands[:maxDiscoveryFiles]
	}
	return cands, nil
}

// seenLoaders are the announcements taken so far, by loader key and by
// PID, each with the file that announced it.
type seenLoaders struct {
	byURL map[string]string
	byPID map[int]string
}

// take reads candidate c and adds its announcement to d.Found, or files
// the reason it is refused. An announcement is taken only when its
// listener is proven (owner.go): the announced process, of the file's
// user, holds the socket listening on its port. The file of a process
// that is gone, or whose port another process holds (a loader killed
// with -9, its PID or port reused since), is removed: the folder is the
// watcher's own (privateDir).
func (d *Discovery) take(c candidate, procRoot string, seen seenLoaders) {
	name := c.name
	path := filepath.Join(d.Dir, name)
	if _, err := os.Stat(filepath.Join(procRoot, c.pid)); errors.Is(err, fs.ErrNotExist) {
		_ = os.Remove(path) // its process is gone
		return
	}
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		d.refuse(name, "not a regular file")
		return
	}
	uid := os.Geteuid()
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		if uid != 0 && int(sys.Uid) != uid {
			d.refuse(name, "belongs to user %d, not to you", sys.Uid)
			return
		}
		uid = int(sys.Uid) // root watches: the announcement's user
	}
	a, err := readAnnouncement(path)
	if err != nil {
		d.refuse(name, "%v", err)
		return
	}
	key := loaderKey(a.URL)
	switch {
	case strconv.Itoa(a.PID) != c.pid:
		d.refuse(name, "says pid %d, not the pid it is named by", a.PID)
	case !isLoopback(key):
		d.refuse(name, "%s is not on this machine: discovery takes loopback URLs only (attach to it with --attach)", sample.Printable(key))
	case seen.byURL[key] != "":
		d.refuse(name, "the same loader as %s", seen.byURL[key])
	case seen.byPID[a.PID] != "":
		d.refuse(name, "pid %d announced already (%s)", a.PID, seen.byPID[a.PID])
	case len(d.Found) == maxAnnouncements:
		d.refuse(name, "more than %d loaders announced", maxAnnouncements)
	default:
		a.uid, a.procRoot = uid, procRoot
		if err := proveAnnounced(procRoot, a, key); err != nil {
			if errors.Is(err, ErrNotProven) {
				_ = os.Remove(path) // stale: never connected to
				d.refuse(name, "removed, not connected to: %v", err)
			} else {
				d.refuse(name, "not connected to: %v", err)
			}
			return
		}
		seen.byURL[key], seen.byPID[a.PID] = name, name
		a.key = key
		d.Found = append(d.Found, a)
	}
}

// byRankThenPID orders announcements by rank, those without one last,
// then by PID.
func byRankThenPID(a, b Announcement) int {
	switch {
	case a.Rank != nil && b.Rank != nil && *a.Rank != *b.Rank:
		return *a.Rank - *b.Rank
	case a.Rank != nil && b.Rank == nil:
		return -1
	case a.Rank == nil && b.Rank != nil:
		return 1
	}
	return a.PID - b.PID
}

// AnnouncedFor is the announcement in d of the loader at rawURL (the same
// loader as loaderKey has it), proven by Discover.
func AnnouncedFor(d Discovery, rawURL string) (Announcement, bool) {
	key := loaderKey(rawURL)
	for _, a := range d.Found {
		if a.key == key {
			return a, true
		}
	}
	return Announcement{}, false
}

// RanksOf is the loaders d found that are the ones at urls (the user
// named them) or other ranks of their distributed job: it and a named one
// announce the same WORLD_SIZE, above 1. An unrelated job's loader (two
// scripts started from one shell) was taken for rank 1 of the one named,
// its verdict given as the named one's, with the other's profile quoted
// in it. A new slice: d is left as it was.
func RanksOf(d Discovery, urls []string) []Announcement {
	var named []Announcement
	for _, u := range urls {
		if a, ok := AnnouncedFor(d, u); ok {
			named = append(named, a)
		}
	}
	var out []Announcement
	for _, a := range d.Found {
		if slices.ContainsFunc(named, func(n Announcement) bool { return sameJob(a, n) }) {
			out = append(out, a)
		}
	}
	return out
}

// sameJob says whether a is n itself, or another rank of n's distributed
// job: the same WORLD_SIZE, above 1, announced by both, and the same
// rendezvous where both announce one (two jobs of two ranks each, started
// side by side, differ there). A hook from before the rendezvous was
// announced is grouped by WORLD_SIZE alone.
func sameJob(a, n Announcement) bool {
	if a.key == n.key {
		return true
	}
	if a.Rendezvous != "" && n.Rendezvous != "" && a.Rendezvous != n.Rendezvous {
		return false
	}
	return a.WorldSize != nil && n.WorldSize != nil && *a.WorldSize > 1 && *a.WorldSize == *n.WorldSize
}

// validRendezvous says whether s is HOST:PORT as a launcher sets
// MASTER_ADDR and MASTER_PORT: a host of at most 253 characters of a
// hostname or an IP address, and a port 1–65535.
func validRendezvous(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || len(host) > 253 {
		return false
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return false
	}
	return strings.Trim(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:%") == ""
}

// hostPortOf is a loader key's HOST:PORT (the scheme's port when it names
// none).
func hostPortOf(key string) string {
	u, err := url.Parse(key)
	if err != nil {
		return ""
	}
	if p := u.Port(); p != "" {
		return net.JoinHostPort(u.Hostname(), p)
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// TokenFor is the token announced in d for the loader at rawURL (the same
// loader as loaderKey has it), "" when it is not announced there or wants
// none.
func TokenFor(d Discovery, rawURL string) string {
	key := loaderKey(rawURL)
	for _, a := range d.Found {
		if a.key == key {
			return a.Token
		}
	}
	return ""
}

// loaderKey is a loader's URL as one loader has it, whoever wrote it:
// without credentials or a trailing slash (NewAttach's Source), and on
// loopback, localhost and IPv4-mapped ::ffff:127.x read as their IPv4. A
// URL NewAttach refuses is its own key.
func loaderKey(raw string) string {
	a, err := NewAttach(raw)
	if err != nil {
		return raw
	}
	u, err := url.Parse(a.Source())
	if err != nil {
		return a.Source()
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	if strings.EqualFold(host, "localhost") {
		ip = net.IPv4(127, 0, 0, 1)
	}
	if ip == nil || !ip.IsLoopback() {
		return a.Source()
	}
	host = ip.String()
	if ip.To4() == nil {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" {
		host = net.JoinHostPort(ip.String(), p)
	}
	u.Host = host
	return u.String()
}

// isLoopback says whether a loader key's host is a loopback address.
func isLoopback(key string) bool {
	u, err := url.Parse(key)
	if err != nil {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

func readAnnouncement(path string) (Announcement, error) {
	var a Announcement
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return a, err
	}
	defer f.Close()
	b, err := probes.ReadCapped(f, maxAnnouncementBytes, "announcement")
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, errors.New("not an announcement (JSON with pid and url)")
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
	if len(a.Token) > maxTokenBytes || strings.Trim(a.Token, tokenChars) != "" {
		return a, errors.New("a token that is not 1–256 URL-safe characters")
	}
	if len(a.Kind) > 16 || strings.Trim(a.Kind, "abcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
		a.Kind = "" // a word, or nothing
	}
	if !validRendezvous(a.Rendezvous) {
		a.Rendezvous = "" // not a host and a port: the ranks are grouped by WORLD_SIZE alone
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
