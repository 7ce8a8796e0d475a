package debezium

import "github.com/icecdc/icecdc/cdc"

// The media types of the formats' values.
const (
	contentTypeJSON = "application/json"
	// contentTypeAvro is a schema registry's framed Avro binary (magic
	// byte, schema id, datum).
	contentTypeAvro = "application/vnd.confluent.avro"
)

var (
	_ cdc.DescribedEncoder = (*JSON)(nil)
	_ cdc.DescribedEncoder = (*ConnectJSON)(nil)
	_ cdc.DescribedEncoder = (*Avro)(nil)
	_ cdc.DescribedEncoder = (*Unwrap)(nil)
	_ cdc.DescribedEncoder = (*Routed)(nil)
)

// Encoding: JSON values, keys as they are.
func (f *JSON) Encoding() cdc.Encoding { return cdc.Encoding{ContentType: contentTypeJSON} }

// Encoding: JSON values, keys in Connect's {"schema", "payload"} form.
func (f *ConnectJSON) Encoding() cdc.Encoding {
	return cdc.Encoding{ContentType: contentTypeJSON, KeyPayload: KeyPayload, ValuePayload: true}
}

// Encoding: framed Avro values and keys, whose row key is the key.
func (f *Avro) Encoding() cdc.Encoding { return cdc.Encoding{ContentType: contentTypeAvro} }

// Encoding is the flattened format's: the SMT keeps keys and the value's
// encoding.
func (u *Unwrap) Encoding() cdc.Encoding { return cdc.EncodingOf(u.inner) }

// Encoding is the routed format's.
func (r *Routed) Encoding() cdc.Encoding { return cdc.EncodingOf(r.Inner) }
