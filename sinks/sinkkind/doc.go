// Package sinkkind is how a sink declares itself to the daemon: its name,
// what it can carry and promise (Caps), the problems of its configuration
// section and its constructor (Kind). Each sink package's section type
// has a Kind method; cmd/icecdc lists the sections, one field each, and
// asks Caps instead of comparing sink names.
package sinkkind
