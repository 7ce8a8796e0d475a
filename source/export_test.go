package source

import "time"

// SpilledCommits is how many commits spilled their before images to a
// temporary file since the process started.
func SpilledCommits() int64 { return spills.Load() }

// SetWholeRead sets the largest data file read whole (0: none over a tail
// read), for the latency benchmark; the returned func restores it.
func SetWholeRead(n int64) (restore func()) {
	old := wholeRead
	wholeRead = n
	return func() { wholeRead = old }
}

// SetHiveTimeouts sets the bounds of a Hive metastore's calls and
// connection; the returned func restores them.
func SetHiveTimeouts(call, connect time.Duration) (restore func()) {
	oldCall, oldConnect := hiveCallTimeout, hiveConnectTimeout
	hiveCallTimeout, hiveConnectTimeout = call, connect
	return func() { hiveCallTimeout, hiveConnectTimeout = oldCall, oldConnect }
}

// SetRESTClock sets the clock that ages a REST table's ETag; the returned
// func restores it.
func SetRESTClock(now func() time.Time) (restore func()) {
	old := restNow
	restNow = now
	return func() { restNow = old }
}

// SetCheckTimeout sets the bound of one CheckChanges; the returned func
// restores it.
func SetCheckTimeout(d time.Duration) (restore func()) {
	old := checkTimeout
	checkTimeout = d
	return func() { checkTimeout = old }
}
