package source

// SetWholeRead sets the largest data file read whole (0: none over a tail
// read), for the latency benchmark; the returned func restores it.
func SetWholeRead(n int64) (restore func()) {
	old := wholeRead
	wholeRead = n
	return func() { wholeRead = old }
}
