package probes

import (
	"bytes"
	"strings"
	"testing"
)

// TestReadCappedRefusesPastTheLimit: a body one byte past the cap is
// refused with the cap in MiB; one at the cap is read whole.
func TestReadCappedRefusesPastTheLimit(t *testing.T) {
	if _, err := ReadCapped(bytes.NewReader(make([]byte, 2<<20)), 1<<20, "profile"); err == nil || !strings.Contains(err.Error(), "profile larger than 1 MiB") {
		t.Errorf("over the cap: %v", err)
	}
	if b, err := ReadCapped(bytes.NewReader(make([]byte, 1<<20)), 1<<20, "profile"); err != nil || len(b) != 1<<20 {
		t.Errorf("at the cap: %d bytes, %v", len(b), err)
	}
}
