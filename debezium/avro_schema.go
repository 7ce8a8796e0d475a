package debezium

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// This file derives Avro schemas from the Connect schemas the
// debezium-connect-json format writes, by the rules Kafka Connect's
// AvroConverter follows (Confluent's AvroData, with connect.meta.data on and
// enhanced Avro schema support off): a struct is a record named by its
// Connect name, an optional schema is a union with null (null first, or
// second when the schema has a default), and a Connect schema's name,
// version, parameters and default travel as connect.name, connect.version,
// connect.parameters and connect.default. It also turns the Connect
// payload into the values twmb/avro encodes with that schema. No library
// speaks Connect's schema JSON, so the walk is written here; the Avro
// itself is twmb/avro's.

// connectSchemaNode is a Connect schema in JsonConverter's JSON form.
type connectSchemaNode struct {
	Type       string               `json:"type"`
	Optional   bool                 `json:"optional"`
	Name       string               `json:"name"`
	Version    int                  `json:"version"`
	Parameters map[string]string    `json:"parameters"`
	Default    json.RawMessage      `json:"default"`
	Field      string               `json:"field"`
	Fields     []*connectSchemaNode `json:"fields"`
	Items      *connectSchemaNode   `json:"items"`
	Keys       *connectSchemaNode   `json:"keys"`
	Values     *connectSchemaNode   `json:"values"`
}

// Avro's names of Connect's annotations and AvroData's defaults.
const (
	avroConnectNamespace = "io.confluent.connect.avro"
	avroDefaultName      = "ConnectDefault"
	avroMapEntry         = "MapEntry"
	// avroDecimalPrecisionDefault is AvroData's precision of a Decimal
	// without connect.decimal.precision.
	avroDecimalPrecisionDefault = 64
)

// NameAdjustment is Debezium's schema.name.adjustment.mode and
// field.name.adjustment.mode: what becomes of a name Avro does not allow.
type NameAdjustment string

// The adjustment modes, with Debezium's names.
const (
	// AdjustNone keeps names as they are; a name Avro refuses fails the
	// table, naming the setting to change.
	AdjustNone NameAdjustment = "none"
	// AdjustAvro replaces each character Avro does not allow with _, and
	// puts _ before a leading digit.
	AdjustAvro NameAdjustment = "avro"
	// AdjustAvroUnicode replaces each such character, and _ itself, with
	// _uXXXX (its UTF-16 code unit in hex), so that distinct names stay
	// distinct.
	AdjustAvroUnicode NameAdjustment = "avro_unicode"
)

// Validate checks the mode; setting names the Debezium option.
func (m NameAdjustment) Validate(setting string) error {
	switch m {
	case "", AdjustNone, AdjustAvro, AdjustAvroUnicode:
		return nil
	}
	return fmt.Errorf("%s %q: want %s, %s or %s", setting, string(m), AdjustNone, AdjustAvro, AdjustAvroUnicode)
}

func avroNameStart(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}

func avroNamePart(r rune) bool { return avroNameStart(r) || r >= '0' && r <= '9' }

// adjust returns name as the mode makes it; ok is false when the mode is
// none and the name is not a valid Avro name.
func (m NameAdjustment) adjust(name string) (string, bool) {
	valid := name != ""
	for i, r := range name {
		if !avroNamePart(r) || i == 0 && !avroNameStart(r) {
			valid = false
			break
		}
	}
	if valid && (m != AdjustAvroUnicode || !strings.Contains(name, "_")) {
		return name, true
	}
	switch m {
	case AdjustAvro:
		var b strings.Builder
		for i, r := range name {
			switch {
			case i == 0 && r >= '0' && r <= '9':
				b.WriteByte('_')
				b.WriteRune(r)
			case avroNamePart(r):
				b.WriteRune(r)
			default:
				b.WriteByte('_')
			}
		}
		if b.Len() == 0 {
			return "_", true
		}
		return b.String(), true
	case AdjustAvroUnicode:
		var b strings.Builder
		for i, r := range name {
			if r == '_' || !avroNamePart(r) || i == 0 && !avroNameStart(r) {
				for _, u := range utf16Units(r) {
					fmt.Fprintf(&b, "_u%04x", u)
				}
				continue
			}
			b.WriteRune(r)
		}
		if b.Len() == 0 {
			return "_", true
		}
		return b.String(), true
	}
	return name, valid
}

func utf16Units(r rune) []uint16 {
	if r < 0x10000 {
		return []uint16{uint16(r)}
	}
	r -= 0x10000
	return []uint16{uint16(0xd800 + (r>>10)&0x3ff), uint16(0xdc00 + r&0x3ff)}
}

// avroObj is a JSON object whose members keep their order, so that the
// same Connect schema always gives the same schema text (registries
// compare texts before they compare meanings).
type avroObj []avroMember

type avroMember struct {
	k string
	v any
}

func (o avroObj) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, m.k)
		b = append(b, ':')
		v, err := json.Marshal(m.v)
		if err != nil {
			return nil, err
		}
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// avroValue says how a Connect payload value becomes the Go value
// twmb/avro encodes for its Avro schema.
type avroValue struct {
	kind     byte // 'b' boolean, 'i' int, 'l' long, 'f' float, 'd' double, 's' string, 'y' bytes, 'r' record, 'a' array, 'm' map, 'e' map as entries
	optional bool
	// nullSecond: the union is [T, "null"] (the schema has a default),
	// not ["null", T].
	nullSecond bool
	fields     []avroField
	elem       *avroValue // of an array or map; the value of map entries
	key        *avroValue // of map entries
}

type avroField struct {
	connect, avro string
	v             *avroValue
}

// avroDeriver derives one Avro schema: names defined once, then
// referenced (Avro allows a name one definition).
type avroDeriver struct {
	schemaNames, fieldNames NameAdjustment
	defined                 map[string]avroDefined // by full name
	defaults, entries       int                    // unnamed structs and map entry records so far
}

// avroDefined is a named type defined in the schema: the Connect schema
// it came from (a second use must be the same) and its converter.
type avroDefined struct {
	connect string
	v       *avroValue
}

// deriveAvro returns the Avro schema of the Connect schema cs and how its
// payload converts.
func deriveAvro(cs *connectSchemaNode, schemaNames, fieldNames NameAdjustment) (schema []byte, v *avroValue, err error) {
	d := &avroDeriver{schemaNames: schemaNames, fieldNames: fieldNames, defined: map[string]avroDefined{}}
	s, v, err := d.derive(cs, false, "")
	if err != nil {
		return nil, nil, err
	}
	schema, err = json.Marshal(s)
	return schema, v, err
}

func (d *avroDeriver) fullName(name, path string) (string, error) {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		a, ok := d.schemaNames.adjust(p)
		if !ok {
			return "", &avroNameError{what: "schema name", name: name, path: path, setting: "schema.name.adjustment.mode"}
		}
		parts[i] = a
	}
	return strings.Join(parts, "."), nil
}

// avroNameError is a name Avro refuses under adjustment mode none.
type avroNameError struct{ what, name, path, setting string }

func (e *avroNameError) Error() string {
	at := ""
	if e.path != "" {
		at = "column " + strconv.Quote(e.path) + ": "
	}
	return fmt.Sprintf("%s%s %q is not a valid Avro name; set debezium.%s to avro or avro_unicode", at, e.what, e.name, e.setting)
}

// avroPrimitives are Connect's primitive types: the Avro type of each,
// and the converter's kind.
var avroPrimitives = map[string]struct {
	kind byte
	avro string
}{
	"boolean": {'b', "boolean"},
	"int8":    {'i', "int"},
	"int16":   {'i', "int"},
	"int32":   {'i', "int"},
	"int64":   {'l', "long"},
	"float":   {'f', "float"},
	"double":  {'d', "double"},
	"string":  {'s', "string"},
	"bytes":   {'y', "bytes"},
}

// derive returns the Avro schema of cs (a union with null when cs is
// optional, unless bare) and its converter.
func (d *avroDeriver) derive(cs *connectSchemaNode, bare bool, path string) (any, *avroValue, error) {
	base := avroObj{}
	v := &avroValue{optional: cs.Optional && !bare, nullSecond: len(cs.Default) > 0}
	named := false // base is a named type's definition
	var ref string // the name of a record defined before
	switch prim, primitive := avroPrimitives[cs.Type]; {
	case primitive:
		v.kind = prim.kind
		base = append(base, avroMember{"type", prim.avro})
		if cs.Type == "bytes" && cs.Name == connectDecimal {
			scale, _ := strconv.Atoi(cs.Parameters["scale"])
			prec := avroDecimalPrecisionDefault
			if p, ok := cs.Parameters["connect.decimal.precision"]; ok {
				prec, _ = strconv.Atoi(p)
			}
			base = append(base, avroMember{"scale", scale}, avroMember{"precision", prec})
		}
	case cs.Type == "array":
		v.kind = 'a'
		items, iv, err := d.derive(cs.Items, false, path+"[]")
		if err != nil {
			return nil, nil, err
		}
		v.elem = iv
		base = append(base, avroMember{"type", "array"}, avroMember{"items", items})
	case cs.Type == "map":
		var err error
		if base, err = d.deriveMap(cs, v, path); err != nil {
			return nil, nil, err
		}
	case cs.Type == "struct":
		v.kind = 'r'
		full, prior, err := d.recordName(cs, v, path)
		if err != nil {
			return nil, nil, err
		}
		if prior != nil {
			// Defined before: referenced by name, as Avro wants.
			return optionalUnion(full, prior), prior, nil
		}
		if cs.Name != "" {
			path = "" // columns are named from the record's fields
		}
		if base, err = d.deriveRecord(cs, v, full, path); err != nil {
			return nil, nil, err
		}
		named = true
		ref = full
	default:
		return nil, nil, fmt.Errorf("column %q: Connect type %q has no Avro form", path, cs.Type)
	}
	base = connectMembers(base, cs, named, ref)
	var out any = base
	if !named && len(base) == 1 {
		out = base[0].v // a plain primitive is its type name
	}
	return optionalUnion(out, v), v, nil
}

// optionalUnion is the schema s of a value converted by v: a union with
// null when v is optional, null second when the field has a default.
func optionalUnion(s any, v *avroValue) any {
	if !v.optional {
		return s
	}
	if v.nullSecond {
		return []any{s, "null"}
	}
	return []any{"null", s}
}

// deriveMap returns the Avro definition of a Connect map and sets v to
// convert it.
func (d *avroDeriver) deriveMap(cs *connectSchemaNode, v *avroValue, path string) (avroObj, error) {
	kv, vv := cs.Keys, cs.Values
	if kv.Type == "string" && !kv.Optional {
		v.kind = 'm'
		vals, iv, err := d.derive(vv, false, path+".value")
		if err != nil {
			return nil, err
		}
		v.elem = iv
		return avroObj{{"type", "map"}, {"values", vals}}, nil
	}
	// Avro maps have string keys: Connect's other maps are arrays of
	// key/value records.
	v.kind = 'e'
	ks, kc, err := d.derive(kv, false, path+".key")
	if err != nil {
		return nil, err
	}
	vs, vc, err := d.derive(vv, false, path+".value")
	if err != nil {
		return nil, err
	}
	v.key, v.elem = kc, vc
	// AvroData names every such record MapEntry, which Avro refuses
	// for a second map of other types; the ones after the first are
	// numbered, and marked as AvroData marks a named map's entries so
	// that AvroConverter still reads them as a map.
	d.entries++
	entry := avroObj{{"type", "record"}, {"name", avroMapEntry}, {"namespace", avroConnectNamespace}}
	if d.entries > 1 {
		entry = avroObj{{"type", "record"}, {"name", avroMapEntry + strconv.Itoa(d.entries)}, {"namespace", avroConnectNamespace}}
	}
	entry = append(entry, avroMember{"fields", []avroObj{avroField2("key", ks, kv), avroField2("value", vs, vv)}})
	if d.entries > 1 {
		entry = append(entry, avroMember{"connect.internal.type", avroMapEntry})
	}
	return avroObj{{"type", "array"}, {"items", entry}}, nil
}

// recordName returns the full Avro name of the struct cs converted by v,
// and, when a record of that name was defined before, the converter to
// use instead (v's optionality on the first one's fields).
func (d *avroDeriver) recordName(cs *connectSchemaNode, v *avroValue, path string) (string, *avroValue, error) {
	if cs.Name == "" {
		// AvroData names an unnamed struct ConnectDefault; a record
		// name has one definition in an Avro schema, so the ones after
		// the first are numbered.
		d.defaults++
		full := avroConnectNamespace + "." + avroDefaultName
		if d.defaults > 1 {
			full += strconv.Itoa(d.defaults)
		}
		return full, nil, nil
	}
	full, err := d.fullName(cs.Name, path)
	if err != nil {
		return "", nil, err
	}
	text := connectText(cs)
	if prior, ok := d.defined[full]; ok {
		if prior.connect != text {
			return "", nil, fmt.Errorf("column %q: two different schemas named %s: Avro allows one", path, full)
		}
		ref := *prior.v
		ref.optional, ref.nullSecond = v.optional, v.nullSecond
		return full, &ref, nil
	}
	d.defined[full] = avroDefined{connect: text, v: v}
	return full, nil, nil
}

// deriveRecord returns the Avro definition of the struct cs, named full,
// and adds its fields to v.
func (d *avroDeriver) deriveRecord(cs *connectSchemaNode, v *avroValue, full, path string) (avroObj, error) {
	seen := map[string]string{}
	var fields []avroObj
	for _, f := range cs.Fields {
		name, ok := d.fieldNames.adjust(f.Field)
		if !ok {
			return nil, &avroNameError{what: "field name", name: f.Field, path: joinPath(path, f.Field), setting: "field.name.adjustment.mode"}
		}
		if other, dup := seen[name]; dup {
			return nil, fmt.Errorf("column %q: fields %q and %q are both %q in Avro", joinPath(path, f.Field), other, f.Field, name)
		}
		seen[name] = f.Field
		fs, fv, err := d.derive(f, false, joinPath(path, f.Field))
		if err != nil {
			return nil, err
		}
		v.fields = append(v.fields, avroField{connect: f.Field, avro: name, v: fv})
		fields = append(fields, avroField2(name, fs, f))
	}
	if fields == nil {
		fields = []avroObj{}
	}
	ns, local := "", full
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		ns, local = full[:i], full[i+1:]
	}
	base := avroObj{{"type", "record"}, {"name", local}}
	if ns != "" {
		base = append(base, avroMember{"namespace", ns})
	}
	return append(base, avroMember{"fields", fields}), nil
}

// connectMembers appends to base the Connect properties AvroData keeps
// on an Avro type, and the logical type of Connect's logical ones; ref is
// the adjusted name of a record (named).
func connectMembers(base avroObj, cs *connectSchemaNode, named bool, ref string) avroObj {
	if cs.Version > 0 {
		base = append(base, avroMember{"connect.version", cs.Version})
	}
	if len(cs.Parameters) > 0 {
		base = append(base, avroMember{"connect.parameters", cs.Parameters})
	}
	if len(cs.Default) > 0 {
		base = append(base, avroMember{"connect.default", cs.Default})
	}
	if cs.Name != "" {
		name := cs.Name
		if named {
			name = ref // the adjusted name, as Debezium's adjuster renames the Connect schema
		}
		base = append(base, avroMember{"connect.name", name})
	}
	switch cs.Name {
	case connectDecimal:
		base = append(base, avroMember{"logicalType", "decimal"})
	case connectTime:
		base = append(base, avroMember{"logicalType", "time-millis"})
	case connectTimestamp:
		base = append(base, avroMember{"logicalType", "timestamp-millis"})
	case connectDate:
		base = append(base, avroMember{"logicalType", "date"})
	}
	return base
}

// connectText is a Connect schema's identity, whatever field or
// optionality it has where it is used.
func connectText(cs *connectSchemaNode) string {
	c := *cs
	c.Field, c.Optional, c.Default = "", false, nil
	b, _ := json.Marshal(&c)
	return string(b)
}

// avroField2 is the field of a record; an optional one defaults to null,
// one with a default to that default.
func avroField2(name string, schema any, cs *connectSchemaNode) avroObj {
	f := avroObj{{"name", name}, {"type", schema}}
	switch {
	case len(cs.Default) > 0:
		f = append(f, avroMember{"default", cs.Default})
	case cs.Optional:
		f = append(f, avroMember{"default", nil})
	}
	return f
}

// splitConnect splits a message of the debezium-connect-json format,
// {"schema":…,"payload":…}, into its schema and payload texts. The first
// `,"payload":` ends the schema: a schema holds field names only as
// "field" values, and quotes inside strings are escaped.
func splitConnect(msg []byte) (schema, payload []byte, ok bool) {
	const open, mid = `{"schema":`, `,"payload":`
	if !bytes.HasPrefix(msg, []byte(open)) || len(msg) == 0 || msg[len(msg)-1] != '}' {
		return nil, nil, false
	}
	i := bytes.Index(msg, []byte(mid))
	if i < 0 {
		return nil, nil, false
	}
	return msg[len(open):i], msg[i+len(mid) : len(msg)-1], true
}
