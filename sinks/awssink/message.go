package awssink

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/icecdc/icecdc/cdc"
)

// Event names message m of table t in errors: the table, the snapshot's
// sequence number and the row id, which find the row; the id itself.
func Event(t *cdc.TableInfo, m *cdc.Message) string {
	name := t.Namespace + "." + t.Name
	// <table_uuid>:<seq>:<row_id>:<op>
	parts := strings.Split(m.ID, ":")
	if n := len(parts); n >= 4 {
		return fmt.Sprintf("event %s (table %s, seq %s, row %s, op %s)", m.ID, name, parts[n-3], parts[n-2], parts[n-1])
	}
	return fmt.Sprintf("event %s (table %s)", m.ID, name)
}

// Header names of every message's attributes, as on Kafka.
const (
	AttrID       = "id"
	AttrOp       = "op"
	AttrSequence = "sequence_number"
	AttrSnapshot = "snapshot_id"
)

// MaxAttributes is the most message attributes SQS and SNS take.
const MaxAttributes = 10

// Attr is one message attribute.
type Attr struct {
	Name  string
	Value []byte
	// Binary: Value is not UTF-8 text, sent as a Binary attribute.
	Binary bool
}

// Type is the attribute's data type.
func (a Attr) Type() string {
	if a.Binary {
		return "Binary"
	}
	return "String"
}

// Attributes returns m's attributes: id, op, sequence_number and
// snapshot_id, then the format's headers. A header with no value is left
// out (neither service takes an empty attribute). size is what they count
// against the message's size limit (names, types and values).
func Attributes(m *cdc.Message, b *cdc.Batch) (attrs []Attr, size int, err error) {
	attrs = make([]Attr, 0, 4+len(m.Headers))
	attrs = append(attrs,
		Attr{Name: AttrID, Value: []byte(m.ID)},
		Attr{Name: AttrOp, Value: []byte{byte(m.Op)}},
		Attr{Name: AttrSequence, Value: strconv.AppendInt(nil, b.Snapshot.SequenceNumber, 10)},
		Attr{Name: AttrSnapshot, Value: strconv.AppendInt(nil, b.Snapshot.ID, 10)},
	)
	for _, h := range m.Headers {
		if len(h.Value) == 0 {
			continue
		}
		if err := checkAttrName(h.Key); err != nil {
			return nil, 0, err
		}
		attrs = append(attrs, Attr{Name: h.Key, Value: h.Value, Binary: !Body(h.Value)})
	}
	if len(attrs) > MaxAttributes {
		return nil, 0, fmt.Errorf("%d message attributes (4 of icecdc's, %d headers of the format): at most %d",
			len(attrs), len(attrs)-4, MaxAttributes)
	}
	for _, a := range attrs {
		size += len(a.Name) + len(a.Type()) + len(a.Value)
	}
	return attrs, size, nil
}

// checkAttrName refuses a header name SQS and SNS do not take.
func checkAttrName(name string) error {
	bad := len(name) == 0 || len(name) > 256 || name[0] == '.' || name[len(name)-1] == '.' ||
		strings.Contains(name, "..") ||
		strings.HasPrefix(strings.ToLower(name), "aws.") || strings.HasPrefix(strings.ToLower(name), "amazon.")
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("header %q cannot be a message attribute (letters, digits, '-', '_' and '.', at most 256, not AWS. or Amazon.)", name)
	}
	return nil
}

// Body reports whether b can be an SQS or SNS message body or String
// attribute: UTF-8 with the characters SQS takes (#x9 | #xA | #xD | #x20
// to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF).
func Body(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			return false
		}
		if !(r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000) {
			return false
		}
		b = b[n:]
	}
	return true
}

// GroupID is a FIFO message group id (and deduplication scope) for an
// event's row key: the key itself when it is 1 to 128 printable ASCII
// characters, as SQS and SNS require, else "sha256:" and the hex of its
// hash, which keeps one key in one group all the same.
func GroupID(rowKey []byte) string {
	ok := len(rowKey) > 0 && len(rowKey) <= 128
	for _, c := range rowKey {
		if c < 33 || c > 126 {
			ok = false
			break
		}
	}
	if ok {
		return string(rowKey)
	}
	return hashed(rowKey)
}

// PartitionKey is a Kinesis partition key for an event's row key: the
// key when it is 1 to 256 Unicode characters, else "sha256:" and the hex
// of its hash.
func PartitionKey(rowKey []byte) string {
	if len(rowKey) > 0 && utf8.Valid(rowKey) && utf8.RuneCount(rowKey) <= 256 {
		return string(rowKey)
	}
	return hashed(rowKey)
}

func hashed(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}
