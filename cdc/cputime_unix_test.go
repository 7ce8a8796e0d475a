//go:build unix

package cdc_test

import (
	"syscall"
	"time"
)

// processCPUTime is the CPU time (user + system) the test process has used.
// Benchmarks report throughput per CPU second next to wall-clock throughput,
// because on a shared machine wall time also counts the time the process
// waited for a core.
func processCPUTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
