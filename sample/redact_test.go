package sample

import (
	"strings"
	"testing"
)

// TestRedactURL: hostile URLs lose every byte of their credentials; the
// rest of the text, and URLs without credentials, are kept.
func TestRedactURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://127.0.0.1:6061", "http://127.0.0.1:6061"},
		{"http://u:secret@host:6061/metrics", "http://REDACTED@host:6061/metrics"},
		{"http://u:p@ss@host", "http://REDACTED@host"},                           // an @ in the password
		{"http://u:p@ss/x@host:1/", "http://REDACTED@host:1/"},                   // a / in it too
		{"http://u:p%40ss@host", "http://REDACTED@host"},                         // percent-encoded
		{"http://admin:s3cret@[::1]:9090/api", "http://REDACTED@[::1]:9090/api"}, // IPv6
		{"https://tok@h", "https://REDACTED@h"},
		{"at http://a:b@h1 and https://c:d@h2/x, done", "at http://REDACTED@h1 and https://REDACTED@h2/x, done"},
		{`dial "http://u:pw@h:1": refused`, `dial "http://REDACTED@h:1": refused`},
		{"ht!tp://u:pw@h", "ht!tp://REDACTED@h"}, // unparsable, redacted all the same
		{"no url here, user@example.com", "no url here, user@example.com"},
		{"://u:pw@h", "://REDACTED@h"},
		{"", ""},
	} {
		if got := RedactURL(c.in); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := strings.Join(RedactArgs([]string{"gpuwatch", "record", "--attach=http://u:secret@h:1"}), " "); strings.Contains(got, "secret") {
		t.Errorf("RedactArgs leaked: %q", got)
	}
}

// TestRedactBadURL: a URL refused for its form keeps none of what may be
// credentials, with or without a "://".
func TestRedactBadURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"user:secret@127.0.0.1:1", "REDACTED@127.0.0.1:1"},
		{"http:/user:secret@h:1", "REDACTED@h:1"},
		{"//user:secret@h", "REDACTED@h"},
		{"ftp://u:p@ss@h", "REDACTED@h"},
		{"127.0.0.1:6061", "127.0.0.1:6061"},
	} {
		if got := RedactBadURL(c.in); got != c.want {
			t.Errorf("RedactBadURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzRedactURL: whatever the password, no byte run of it (4 bytes or
// more, and not also in the rest of the text) survives redaction.
func FuzzRedactURL(f *testing.F) {
	f.Add("user", "s3cret", "host:9090", "/api")
	f.Add("u", "p@ss/x", "[::1]:1", "")
	f.Add("", "tok%40en", "h", "/a@b")
	f.Fuzz(func(t *testing.T, user, pass, host, path string) {
		if len(pass) < 4 || strings.ContainsAny(user+pass+host, " \t\r\n\"'`<>") || strings.Contains(pass, "://") {
			return // a password is one token of a URL
		}
		in := "see http://" + user + ":" + pass + "@" + host + path + " now"
		// The marker is no password; a space (never in one) stands for it,
		// so that "http://" and what follows the marker do not join into
		// a run of the password ("//000" held "/000").
		out := strings.ReplaceAll(RedactURL(in), "REDACTED@", " ")
		kept := strings.Replace(in, user+":"+pass+"@", "", 1)
		if strings.Contains(out, pass) && !strings.Contains(kept, pass) {
			t.Fatalf("RedactURL(%q) = %q: the password survives", in, out)
		}
	})
}
