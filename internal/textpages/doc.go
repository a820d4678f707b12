// Package textpages keeps the executable's own pages out of a long-running
// session's resident memory: on Linux 6.x the page cache holds a binary in
// large folios, and a fault maps the whole folio, so a 27 MB binary of
// which a session runs 7 MB stayed 18 MB resident (docs/architecture.md,
// "The dashboard's memory").
package textpages
