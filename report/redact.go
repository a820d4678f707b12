package report

import "strings"

// RedactURL returns s with the user-info of any URL in it replaced by
// "REDACTED" ("http://REDACTED@host:6061/"), so a password given on the
// command line reaches no recording, report, log or view. Text that holds
// no URL comes back unchanged.
func RedactURL(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	rest := s[i+3:]
	end := strings.IndexAny(rest, "/?# \t")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return s[:i+3+end] + RedactURL(rest[end:])
	}
	return s[:i+3] + "REDACTED@" + rest[at+1:end] + RedactURL(rest[end:])
}

// RedactArgs redacts every argument of a command line with RedactURL
// (a "--attach=http://u:p@h" flag included).
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = RedactURL(a)
	}
	return out
}
