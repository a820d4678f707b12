package sample

import "strings"

// RedactURL returns s with the credentials of every URL in it replaced by
// "REDACTED" ("http://REDACTED@host:6061/"), so a password given on the
// command line reaches no recording, report, log, error or view. It is the
// one redaction: every package goes through it.
//
// A URL runs from its "://" to the next space, tab, newline or quote.
// Everything up to the last "@" in it is credentials — also where an "@"
// or a "/" in the password would make a parser split it elsewhere
// ("http://u:p@ss/x@host" keeps nothing of "p@ss/x"). Percent-encoding
// changes nothing: "%40" is not an "@". Text with no URL comes back as is.
func RedactURL(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			if b.Len() == 0 {
				return s
			}
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+3])
		rest := s[i+3:]
		end := strings.IndexAny(rest, " \t\r\n\"'`<>")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
			b.WriteString("REDACTED@")
			rest = rest[at+1:]
			end -= at + 1
		}
		b.WriteString(rest[:end])
		s = rest[end:]
	}
}

// RedactBadURL returns s, given as one URL but refused as one, for the
// message that refuses it: everything up to its last "@" is dropped.
// RedactURL finds credentials only after a "://", and a URL mistyped
// ("user:secret@host:1", "http:/u:p@h", "//u:p@h") has none.
func RedactBadURL(s string) string {
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		return "REDACTED@" + s[at+1:]
	}
	return s
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
