package cli

import (
	"os"
	"os/user"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/internal/textpages"
)

// TestReleaseKeepsTheDynamicLinkersRelocations: this test binary is linked
// as gpuwatch is (cgo, by the external linker, against libc), so one
// read-only mapping of it is the page the dynamic linker wrote and then
// made read-only (RELRO: the addresses of libc's functions). After a
// session's textpages.Release, calls into libc still land: had that page
// been unmapped, it would come back from the file unrelocated and the
// call would jump to an address the linker never filled in.
func TestReleaseKeepsTheDynamicLinkersRelocations(t *testing.T) {
	if !strings.Contains(mustRead(t, "/proc/self/maps"), "libc.so") {
		t.Skip("a static binary (CGO_ENABLED=0): no dynamic linker, no relocations to keep")
	}
	if !writtenReadOnlyPage(t) {
		t.Fatal("no read-only mapping of this test binary holds a page of its own: not linked as gpuwatch is, so this test proves nothing")
	}
	if _, err := textpages.Release(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"0", "1", "0"} { // getpwuid_r, through the GOT
		if u, err := user.LookupId(id); err != nil || u.Username == "" {
			t.Fatalf("libc's getpwuid_r(%s) after Release: %v, %v", id, u, err)
		}
	}
}

// writtenReadOnlyPage says whether a read-only mapping of this process's
// own binary holds anonymous memory: a page written and then protected.
func writtenReadOnlyPage(t *testing.T) bool {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	ours := false
	for _, line := range strings.Split(mustRead(t, "/proc/self/smaps"), "\n") {
		if f := strings.Fields(line); len(f) >= 6 && strings.Contains(f[0], "-") && len(f[1]) == 4 {
			ours = f[5] == exe && f[1][1] != 'w'
			continue
		}
		if v, ok := strings.CutPrefix(line, "Anonymous:"); ok && ours && strings.Fields(v)[0] != "0" {
			return true
		}
	}
	return false
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
