// Package textpages keeps the executable's own pages out of a long-running
// session's resident memory: a fault maps a binary's pages from the page
// cache in large folios or 64 kB at a time, and a session maps, by its
// first half minute, 18 MB of a 27 MB binary of which it runs about 10 MB
// from then on (docs/architecture.md, §7, "The dashboard's memory").
package textpages
