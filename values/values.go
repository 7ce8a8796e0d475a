package values

import "fmt"

// Row holds the values of one row, aligned with the fields of a Schema.
// Values are Go values per Iceberg type: bool, int32, int64, float32,
// float64, string, []byte, Decimal, Date, Time, Timestamp, TimestampTZ,
// TimestampNano, TimestampTZNano, UUID, VariantJSON for variants, []byte
// (WKB) for geometry and geography, []any for lists, []MapEntry for maps
// and Row for structs; nil is null.
type Row []any

// Decimal is an unscaled integer with its scale, kept exact.
type Decimal struct {
	Unscaled string // base-10 digits with an optional leading '-'
	Scale    int
}

// Date is days since 1970-01-01.
type Date int32

// Time is microseconds since midnight.
type Time int64

// Timestamp is microseconds since the epoch, without a time zone.
type Timestamp int64

// TimestampTZ is microseconds since the epoch, in UTC.
type TimestampTZ int64

// TimestampNano is nanoseconds since the epoch, without a time zone (v3).
type TimestampNano int64

// TimestampTZNano is nanoseconds since the epoch, in UTC (v3).
type TimestampTZNano int64

// UUID is a 16-byte universally unique identifier.
type UUID [16]byte

// MapEntry is one key/value pair of an Iceberg map.
type MapEntry struct{ Key, Value any }

// ValueEqual compares two row values of the same field.
func ValueEqual(a, b any) bool {
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && string(x) == string(y)
	case []any, []MapEntry, Row:
		return fmt.Sprint(a) == fmt.Sprint(b)
	}
	return a == b
}
