package source

// SpilledCommits is how many commits spilled their before images to a
// temporary file since the process started.
func SpilledCommits() int64 { return spills.Load() }
