package cdc

// Encoding says what an Encoder's records are, for sinks that label
// them (a CloudEvents subject and content type), so that no sink parses
// a format's bytes.
type Encoding struct {
	// ContentType is the media type of the values; "" is
	// application/json.
	ContentType string
	// KeyPayload returns the row key inside an encoded key, where the
	// format wraps keys in an envelope; nil: the key is the row key.
	KeyPayload func(key []byte) []byte
	// ValuePayload: values are Kafka Connect's {"schema", "payload"}
	// (payload last), whose payload is the envelope or the flattened row:
	// the event id a value carries goes into payload (AddEventID).
	ValuePayload bool
}

// DescribedEncoder is an Encoder that says what its records are.
type DescribedEncoder interface {
	Encoder
	Encoding() Encoding
}

// EncodingOf returns what enc says of its records, or JSON values with
// keys as they are when it says nothing.
func EncodingOf(enc Encoder) Encoding {
	if d, ok := enc.(DescribedEncoder); ok {
		return d.Encoding()
	}
	return Encoding{}
}

// RowKey returns the row key of an encoded key.
func (e Encoding) RowKey(key []byte) []byte {
	if e.KeyPayload == nil {
		return key
	}
	return e.KeyPayload(key)
}

// Type returns the values' media type.
func (e Encoding) Type() string {
	if e.ContentType == "" {
		return "application/json"
	}
	return e.ContentType
}
