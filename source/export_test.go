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
