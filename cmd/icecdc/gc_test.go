package main

import (
	"runtime/debug"
	"testing"
)

// TestDaemonGC: the daemon runs with GOGC 75 unless GOGC is set, and puts
// back the setting it found when it returns.
func TestDaemonGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)

	t.Setenv("GOGC", "")
	restore := daemonGC()
	if got := debug.SetGCPercent(daemonGOGC); got != daemonGOGC {
		t.Fatalf("GOGC unset: the daemon runs with %d, want %d", got, daemonGOGC)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("after the daemon: %d, want the 100 it found", got)
	}

	t.Setenv("GOGC", "300")
	debug.SetGCPercent(300)
	restore = daemonGC()
	if got := debug.SetGCPercent(300); got != 300 {
		t.Fatalf("GOGC=300: the daemon runs with %d", got)
	}
	restore()
}
