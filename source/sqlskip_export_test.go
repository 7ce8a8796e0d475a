package source

// SQLFullChecks is how many change checks queried a sql catalog's
// iceberg_tables.
func SQLFullChecks() int64 { return sqlFullChecks.Load() }
