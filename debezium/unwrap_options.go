package debezium

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// DeleteHandling is ExtractNewRecordState's delete.tombstone.handling.mode:
// what a flattened stream makes of a delete and of the tombstone after it.
type DeleteHandling string

const (
	// DeleteTombstone (Debezium's default) writes a delete as a record
	// whose value is null with the row's schema (JSON null; in Connect
	// form a payload of null), and drops the tombstone after it.
	DeleteTombstone DeleteHandling = "tombstone"
	// DeleteDrop drops deletes and their tombstones.
	DeleteDrop DeleteHandling = "drop"
	// DeleteRewrite writes a delete as its before image with
	// __deleted "true" (every other record carries __deleted "false")
	// and drops the tombstone after it.
	DeleteRewrite DeleteHandling = "rewrite"
	// DeleteRewriteWithTombstone is DeleteRewrite keeping the tombstone.
	DeleteRewriteWithTombstone DeleteHandling = "rewrite-with-tombstone"
	// DeleteToTombstone writes a delete as a tombstone (no value at all)
	// and drops the tombstone after it.
	DeleteToTombstone DeleteHandling = "delete-to-tombstone"
)

var deleteHandlings = []DeleteHandling{DeleteTombstone, DeleteDrop, DeleteRewrite, DeleteRewriteWithTombstone, DeleteToTombstone}

// rewrite reports whether records carry __deleted.
func (m DeleteHandling) rewrite() bool {
	return m == DeleteRewrite || m == DeleteRewriteWithTombstone
}

// KeepsTombstones reports whether the tombstone that follows a delete in
// the envelope stream stays in the flattened one.
func (m DeleteHandling) KeepsTombstones() bool { return m == DeleteRewriteWithTombstone }

// UnwrapOptions are ExtractNewRecordState's options icecdc takes, under
// Debezium's names (ParseUnwrapOptions).
type UnwrapOptions struct {
	DeleteHandling DeleteHandling // default DeleteTombstone
	// AddFields and AddHeaders name envelope fields as Debezium does:
	// "op", "ts_ms", "table" (a source field), "source.ts_ms",
	// "transaction.id", each optionally ":newname".
	AddFields, AddHeaders []string
	// AddFieldsPrefix and AddHeadersPrefix start the names of the added
	// fields and headers; default "__".
	AddFieldsPrefix, AddHeadersPrefix string
}

// The option keys, as ExtractNewRecordState spells them.
const (
	optDeleteHandling   = "delete.tombstone.handling.mode"
	optAddFields        = "add.fields"
	optAddFieldsPrefix  = "add.fields.prefix"
	optAddHeaders       = "add.headers"
	optAddHeadersPrefix = "add.headers.prefix"
	optType             = "type"
	unwrapClass         = "io.debezium.transforms.ExtractNewRecordState"
)

// refusedOptions are ExtractNewRecordState's options that cannot apply to
// icecdc's records, with the reason.
var refusedOptions = map[string]string{
	"drop.fields.header.name":            "icecdc's records carry no header listing fields to drop (Debezium's ExtractChangedRecordState writes one)",
	"drop.fields.from.key":               "it goes with drop.fields.header.name, which icecdc's records have no use for",
	"drop.fields.keep.schema.compatible": "it goes with drop.fields.header.name, which icecdc's records have no use for",
	"route.by.field":                     "topics come from sink.kafka.topic",
	"replace.null.with.default":          "it changes only how a null __deleted would be written, and __deleted is never null",
}

// UnwrapOptionKeys lists the option keys ParseUnwrapOptions takes.
func UnwrapOptionKeys() []string {
	return []string{optType, optDeleteHandling, optAddFields, optAddFieldsPrefix, optAddHeaders, optAddHeadersPrefix}
}

// ParseUnwrapOptions reads ExtractNewRecordState's options from kv. An
// unknown key, a key icecdc cannot honour or a bad value is an error
// naming the key.
func ParseUnwrapOptions(kv map[string]string) (UnwrapOptions, error) {
	o := UnwrapOptions{DeleteHandling: DeleteTombstone, AddFieldsPrefix: "__", AddHeadersPrefix: "__"}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := kv[k]
		switch k {
		case optType:
			if v != unwrapClass {
				return o, fmt.Errorf("%s %q: icecdc has only %s", k, v, unwrapClass)
			}
		case optDeleteHandling:
			m := DeleteHandling(strings.TrimSpace(v))
			if !slices.Contains(deleteHandlings, m) {
				return o, fmt.Errorf("%s %q: want tombstone, drop, rewrite, rewrite-with-tombstone or delete-to-tombstone", k, v)
			}
			o.DeleteHandling = m
		case optAddFields:
			o.AddFields = splitList(v)
		case optAddHeaders:
			o.AddHeaders = splitList(v)
		case optAddFieldsPrefix:
			o.AddFieldsPrefix = v
		case optAddHeadersPrefix:
			o.AddHeadersPrefix = v
		default:
			if why, ok := refusedOptions[k]; ok {
				return o, fmt.Errorf("%s: not supported: %s", k, why)
			}
			return o, fmt.Errorf("%s: unknown option; want one of %s", k, strings.Join(UnwrapOptionKeys(), ", "))
		}
	}
	return o, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
