//go:build !unix

package cdc_test

import "time"

// processCPUTime is not measured on this platform.
func processCPUTime() (time.Duration, bool) { return 0, false }
