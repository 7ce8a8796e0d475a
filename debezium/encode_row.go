package debezium

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/values"
)

// ValueError reports a row value that does not fit its Iceberg field: a Go
// type other than the one Row documents for the field's type, or a value
// outside the type's domain. Encoders return it instead of writing null or a
// guess, because a consumer must never receive a silently altered row.
type ValueError struct {
	// Field is the path from the top-level field: "amount",
	// "address.city", "tags[2]", "attrs[0].key". Empty for the row itself.
	Field string
	Type  string // the Iceberg type, as iceberg-go prints it
	Want  string // what the encoder accepts for Type
	Got   string // what it found
}

// Error says which field failed and why, e.g.
// field "amount": want float64 for double, got string.
func (e *ValueError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("row: want %s for %s, got %s", e.Want, e.Type, e.Got)
	}
	return fmt.Sprintf("field %q: want %s for %s, got %s", e.Field, e.Want, e.Type, e.Got)
}

// within prefixes e's path with the step that led to it: a field name, or
// an index such as "[2]".
func (e *ValueError) within(step string) *ValueError {
	switch {
	case e.Field == "":
		e.Field = step
	case e.Field[0] == '[':
		e.Field = step + e.Field
	default:
		e.Field = step + "." + e.Field
	}
	return e
}

// jsonKind selects how a value is written; one per Iceberg type.
type jsonKind uint8

const (
	kindUnsupported jsonKind = iota // variant, geometry, ...: no Row value is defined
	kindUnknown                     // Iceberg's unknown type: always null
	kindBool
	kindInt
	kindLong
	kindFloat
	kindDouble
	kindDecimal
	kindDate
	kindTime
	kindTimestamp
	kindTimestampTZ
	kindTimestampNs
	kindTimestampTZNs
	kindString
	kindUUID
	kindFixed
	kindBinary
	kindStruct
	kindList
	kindMap
	kindVariant       // a values.VariantJSON, written as a JSON string
	kindVariantInline // a values.VariantJSON, written as the JSON document itself
	kindGeo           // geometry or geography: WKB []byte, with the type's srid
)

// jsonType is an Iceberg type compiled for encoding: the type switch on
// iceberg.Type, the field-name escaping and the schema's clone-on-read
// accessors are paid once per schema instead of once per value.
type jsonType struct {
	kind   jsonKind
	name   string // the Iceberg type, for errors
	want   string // the Go type accepted, for errors
	prec   int    // decimal precision, or fixed length
	scale  int    // decimal scale
	fields []jsonField
	elem   *jsonType // list element, map value
	key    *jsonType // map key
	// elemRequired says the list's elements or the map's values cannot
	// be null (the Connect schema says so).
	elemRequired bool
	// geoName is the Debezium schema name of a geometry or geography;
	// srid (when hasSRID) comes from the type's CRS, crs is the CRS as
	// the type names it.
	geoName string
	srid    int32
	hasSRID bool
	crs     string
}

// jsonField is one field of a struct or schema.
type jsonField struct {
	id       int
	name     string
	prefix   string // `"name":`, with a leading comma except for the first field
	typ      *jsonType
	required bool
}

// jsonSchema is a schema compiled for encoding, with the key layout asked of
// it.
type jsonSchema struct {
	row    jsonType
	keys   atomic.Pointer[jsonKey]
	schema *iceberg.Schema // the schema compiled, for schemaCache
}

// compileJSONSchema compiles sc. It never fails: types without a defined Row
// value compile to kindUnsupported, which rejects any non-null value.
func compileJSONSchema(sc *iceberg.Schema) *jsonSchema {
	s := &jsonSchema{}
	s.row = jsonType{kind: kindStruct, name: "struct", want: "values.Row", fields: compileFields(sc.Fields())}
	return s
}

func compileFields(fields []iceberg.NestedField) []jsonField {
	out := make([]jsonField, len(fields))
	for i, f := range fields {
		var prefix []byte
		if i > 0 {
			prefix = append(prefix, ',')
		}
		prefix = appendJSONString(prefix, f.Name)
		prefix = append(prefix, ':')
		out[i] = jsonField{id: f.ID, name: f.Name, prefix: string(prefix), typ: compileType(f.Type), required: f.Required}
	}
	return out
}

func compileType(t iceberg.Type) *jsonType {
	j := &jsonType{name: fmt.Sprint(t)}
	switch t := t.(type) {
	case iceberg.BooleanType:
		j.kind, j.want = kindBool, "bool"
	case iceberg.Int32Type:
		j.kind, j.want = kindInt, "int32"
	case iceberg.Int64Type:
		j.kind, j.want = kindLong, "int64"
	case iceberg.Float32Type:
		j.kind, j.want = kindFloat, "float32"
	case iceberg.Float64Type:
		j.kind, j.want = kindDouble, "float64"
	case iceberg.DecimalType:
		j.kind, j.want, j.prec, j.scale = kindDecimal, "values.Decimal", t.Precision(), t.Scale()
	case iceberg.DateType:
		j.kind, j.want = kindDate, "values.Date"
	case iceberg.TimeType:
		j.kind, j.want = kindTime, "values.Time"
	case iceberg.TimestampType:
		j.kind, j.want = kindTimestamp, "values.Timestamp"
	case iceberg.TimestampTzType:
		j.kind, j.want = kindTimestampTZ, "values.TimestampTZ"
	case iceberg.TimestampNsType:
		j.kind, j.want = kindTimestampNs, "values.TimestampNano"
	case iceberg.TimestampTzNsType:
		j.kind, j.want = kindTimestampTZNs, "values.TimestampTZNano"
	case iceberg.StringType:
		j.kind, j.want = kindString, "string"
	case iceberg.UUIDType:
		j.kind, j.want = kindUUID, "values.UUID"
	case iceberg.FixedType:
		j.kind, j.want, j.prec = kindFixed, "[]byte", t.Len()
	case iceberg.BinaryType:
		j.kind, j.want = kindBinary, "[]byte"
	case iceberg.UnknownType:
		j.kind, j.want = kindUnknown, "nil"
	case iceberg.VariantType:
		j.kind, j.want = kindVariant, "values.VariantJSON"
	case iceberg.GeometryType:
		j.kind, j.want, j.geoName, j.crs = kindGeo, "[]byte (WKB)", dbzGeometry, t.CRS()
		j.srid, j.hasSRID = sridOf(j.crs)
	case iceberg.GeographyType:
		j.kind, j.want, j.geoName, j.crs = kindGeo, "[]byte (WKB)", dbzGeography, t.CRS()
		j.srid, j.hasSRID = sridOf(j.crs)
	case *iceberg.StructType:
		j.kind, j.want, j.fields = kindStruct, "values.Row", compileFields(t.FieldList)
	case *iceberg.ListType:
		j.kind, j.want, j.elem, j.elemRequired = kindList, "[]any", compileType(t.Element), t.ElementRequired
	case *iceberg.MapType:
		j.kind, j.want = kindMap, "[]values.MapEntry"
		j.key, j.elem, j.elemRequired = compileType(t.KeyType), compileType(t.ValueType), t.ValueRequired
	default:
		j.kind, j.want = kindUnsupported, "nil (no row value is defined for this type)"
	}
	return j
}

// schemaCache holds the compiled schemas an encoder met: lookups are
// lock-free reads of an immutable map (schemas change rarely, events are
// many), and last, the one used last, answers the common case (a
// commit's events one after the other) without hashing. The map is
// bounded, so that a daemon that reloads table metadata on every poll
// does not grow it: past schemaCacheMax schemas it starts again. The zero
// value is empty and ready.
type schemaCache struct {
	last    atomic.Pointer[jsonSchema]
	schemas atomic.Pointer[map[*iceberg.Schema]*jsonSchema]
	mu      sync.Mutex // serialises writers of schemas
}

const schemaCacheMax = 256

// get returns the compiled form of sc, compiling it on first use. An
// entry keeps its schema alive, so a new schema at a reused address never
// matches an old entry.
func (c *schemaCache) get(sc *iceberg.Schema) *jsonSchema { return c.getFor(sc, false) }

// getFor is get for an encoder whose variants are written inline when
// inline is set; one cache always serves one encoder, so inline never
// changes between calls on it.
func (c *schemaCache) getFor(sc *iceberg.Schema, inline bool) *jsonSchema {
	if s := c.last.Load(); s != nil && s.schema == sc {
		return s
	}
	if m := c.schemas.Load(); m != nil {
		if s, ok := (*m)[sc]; ok {
			c.last.Store(s)
			return s
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.schemas.Load()
	if old != nil {
		if s, ok := (*old)[sc]; ok {
			return s
		}
		if len(*old) >= schemaCacheMax {
			old = nil
		}
	}
	s := compileJSONSchema(sc)
	if inline {
		s.row.inlineVariants()
	}
	s.schema = sc
	next := make(map[*iceberg.Schema]*jsonSchema, 1)
	if old != nil {
		maps.Copy(next, *old)
	}
	next[sc] = s
	c.schemas.Store(&next)
	c.last.Store(s)
	return s
}

// AppendRow appends r as a JSON object keyed by the top-level field names of
// sc, in schema order, with each value encoded per its Iceberg type as in
// the debezium-json format. It is exported for the other JSON formats. On
// error (a *ValueError, or a length mismatch) it returns dst unchanged, so a
// reused buffer never holds half a row.
func (f *JSON) AppendRow(dst []byte, sc *iceberg.Schema, r values.Row) ([]byte, error) {
	if sc == nil {
		return dst, fmt.Errorf("encode row: no schema")
	}
	out, err := f.schemas.getFor(sc, f.inlineVariants()).row.appendStruct(dst, r)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// appendStruct appends r as an object of t's fields.
func (t *jsonType) appendStruct(dst []byte, r values.Row) ([]byte, error) {
	if len(r) != len(t.fields) {
		return dst, &ValueError{Type: t.name, Want: strconv.Itoa(len(t.fields)) + " values",
			Got: strconv.Itoa(len(r))}
	}
	dst = append(dst, '{')
	for i := range t.fields {
		f := &t.fields[i]
		dst = append(dst, f.prefix...)
		var err error
		if dst, err = f.typ.appendValue(dst, r[i]); err != nil {
			return dst, err.(*ValueError).within(f.name)
		}
	}
	return append(dst, '}'), nil
}

// appendValue appends v per t. A nil v is null whatever the type; any other
// Go type than the one t accepts is a *ValueError.
func (t *jsonType) appendValue(dst []byte, v any) ([]byte, error) {
	if v == nil {
		return append(dst, "null"...), nil
	}
	switch t.kind {
	case kindBool:
		if b, ok := v.(bool); ok {
			return strconv.AppendBool(dst, b), nil
		}
	case kindInt:
		if n, ok := v.(int32); ok {
			return strconv.AppendInt(dst, int64(n), 10), nil
		}
	case kindLong:
		if n, ok := v.(int64); ok {
			return strconv.AppendInt(dst, n, 10), nil
		}
	case kindFloat:
		if f, ok := v.(float32); ok {
			return appendJSONFloat(dst, float64(f), 32), nil
		}
	case kindDouble:
		if f, ok := v.(float64); ok {
			return appendJSONFloat(dst, f, 64), nil
		}
	case kindDecimal:
		if d, ok := v.(values.Decimal); ok {
			return t.appendDecimal(dst, d)
		}
	case kindDate:
		if d, ok := v.(values.Date); ok {
			return appendDate(dst, int64(d)), nil
		}
	case kindTime:
		if tm, ok := v.(values.Time); ok {
			if tm < 0 || tm >= microsPerDay {
				return dst, t.domainError("microseconds in [0, 86400000000)", strconv.FormatInt(int64(tm), 10))
			}
			return appendTimeOfDay(dst, int64(tm)), nil
		}
	case kindTimestamp:
		if ts, ok := v.(values.Timestamp); ok {
			return appendTimestamp(dst, int64(ts), 1_000_000, 6, false), nil
		}
	case kindTimestampTZ:
		if ts, ok := v.(values.TimestampTZ); ok {
			return appendTimestamp(dst, int64(ts), 1_000_000, 6, true), nil
		}
	case kindTimestampNs:
		if ts, ok := v.(values.TimestampNano); ok {
			return appendTimestamp(dst, int64(ts), 1_000_000_000, 9, false), nil
		}
	case kindTimestampTZNs:
		if ts, ok := v.(values.TimestampTZNano); ok {
			return appendTimestamp(dst, int64(ts), 1_000_000_000, 9, true), nil
		}
	case kindString:
		if s, ok := v.(string); ok {
			return appendJSONString(dst, s), nil
		}
	case kindUUID:
		if u, ok := v.(values.UUID); ok {
			return appendUUID(dst, u), nil
		}
	case kindFixed:
		if b, ok := v.([]byte); ok {
			if len(b) != t.prec {
				return dst, t.domainError(strconv.Itoa(t.prec)+" bytes", strconv.Itoa(len(b))+" bytes")
			}
			return appendBase64(dst, b), nil
		}
	case kindBinary:
		if b, ok := v.([]byte); ok {
			return appendBase64(dst, b), nil
		}
	case kindStruct, kindList, kindMap:
		return t.appendNested(dst, v)
	case kindVariant, kindVariantInline, kindGeo:
		return t.appendVariantOrGeo(dst, v)
	}
	return dst, t.typeError(v)
}

// appendNested appends a struct, list or map value.
func (t *jsonType) appendNested(dst []byte, v any) ([]byte, error) {
	switch t.kind {
	case kindStruct:
		if r, ok := v.(values.Row); ok {
			return t.appendStruct(dst, r)
		}
	case kindList:
		if l, ok := v.([]any); ok {
			return t.appendList(dst, l)
		}
	case kindMap:
		if m, ok := v.([]values.MapEntry); ok {
			return t.appendMap(dst, m)
		}
	}
	return dst, t.typeError(v)
}

// appendVariantOrGeo appends a variant, as a JSON string or inline, or a
// geometry or geography value.
func (t *jsonType) appendVariantOrGeo(dst []byte, v any) ([]byte, error) {
	switch t.kind {
	case kindVariant:
		if x, ok := v.(values.VariantJSON); ok {
			return appendJSONString(dst, string(x)), nil
		}
	case kindVariantInline:
		if x, ok := v.(values.VariantJSON); ok {
			return append(dst, x...), nil
		}
	case kindGeo:
		if b, ok := v.([]byte); ok {
			return t.appendGeo(dst, b), nil
		}
	}
	return dst, t.typeError(v)
}

// typeError reports a Go value of another type than t accepts.
func (t *jsonType) typeError(v any) *ValueError {
	return &ValueError{Type: t.name, Want: t.want, Got: fmt.Sprintf("%T", v)}
}

func (t *jsonType) domainError(want, got string) *ValueError {
	return &ValueError{Type: t.name, Want: want, Got: got}
}

// appendDecimal checks d against the type before writing it: a scale other
// than the column's would change what the digits mean to a consumer that
// reads the column's scale from its schema, and more digits than the
// precision cannot come from a valid Iceberg file.
func (t *jsonType) appendDecimal(dst []byte, d values.Decimal) ([]byte, error) {
	if d.Scale != t.scale {
		return dst, t.domainError("scale "+strconv.Itoa(t.scale), "scale "+strconv.Itoa(d.Scale))
	}
	out, ok := appendDecimal(dst, d)
	if !ok {
		return dst, t.domainError("unscaled base-10 digits", strconv.Quote(d.Unscaled))
	}
	if n := decimalDigits(d.Unscaled); n > t.prec {
		return dst, t.domainError("at most "+strconv.Itoa(t.prec)+" digits", strconv.Itoa(n)+" digits")
	}
	return out, nil
}

// appendList appends l as an array of t.elem values.
func (t *jsonType) appendList(dst []byte, l []any) ([]byte, error) {
	dst = append(dst, '[')
	for i, v := range l {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = t.elem.appendValue(dst, v); err != nil {
			return dst, err.(*ValueError).within("[" + strconv.Itoa(i) + "]")
		}
	}
	return append(dst, ']'), nil
}

// appendMap appends m as an object when its keys are strings. Other keys
// (ints, dates, structs, binary) have no faithful JSON object-key form:
// stringifying them would hide their type from consumers and make distinct
// keys collide (1 and "1"), so such maps become an array of {"key", "value"}
// objects, in entry order.
func (t *jsonType) appendMap(dst []byte, m []values.MapEntry) ([]byte, error) {
	if t.key.kind == kindString {
		dst = append(dst, '{')
		for i, e := range m {
			if i > 0 {
				dst = append(dst, ',')
			}
			k, ok := e.Key.(string)
			if !ok {
				// A null key cannot be an object key; Iceberg forbids it anyway.
				return dst, (&ValueError{Type: t.key.name, Want: "string", Got: fmt.Sprintf("%T", e.Key)}).
					within("[" + strconv.Itoa(i) + "].key")
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = t.elem.appendValue(dst, e.Value); err != nil {
				return dst, err.(*ValueError).within("[" + strconv.Itoa(i) + "].value")
			}
		}
		return append(dst, '}'), nil
	}
	dst = append(dst, '[')
	for i, e := range m {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"key":`...)
		var err error
		if dst, err = t.key.appendValue(dst, e.Key); err != nil {
			return dst, err.(*ValueError).within("[" + strconv.Itoa(i) + "].key")
		}
		dst = append(dst, `,"value":`...)
		if dst, err = t.elem.appendValue(dst, e.Value); err != nil {
			return dst, err.(*ValueError).within("[" + strconv.Itoa(i) + "].value")
		}
		dst = append(dst, '}')
	}
	return append(dst, ']'), nil
}

// sridOf is the spatial reference id a geometry or geography CRS names:
// "srid:N" and "EPSG:N" name N, OGC:CRS84 (Iceberg's default, longitude
// then latitude on WGS 84) is 4326. Any other CRS has none.
func sridOf(crs string) (int32, bool) {
	if strings.EqualFold(crs, iceberg.DefaultGeoCRS) {
		return 4326, true
	}
	for _, p := range []string{"srid:", "epsg:"} {
		if len(crs) > len(p) && strings.EqualFold(crs[:len(p)], p) {
			n, err := strconv.ParseInt(crs[len(p):], 10, 32)
			if err == nil && n >= 0 {
				return int32(n), true
			}
		}
	}
	return 0, false
}

// appendGeo writes a geometry or geography as Debezium's Geometry struct
// does in JSON: {"wkb": base64, "srid": N or null}.
func (t *jsonType) appendGeo(dst []byte, wkb []byte) []byte {
	dst = append(dst, `{"wkb":`...)
	dst = appendBase64(dst, wkb)
	dst = append(dst, `,"srid":`...)
	if t.hasSRID {
		dst = strconv.AppendInt(dst, int64(t.srid), 10)
	} else {
		dst = append(dst, "null"...)
	}
	return append(dst, '}')
}

// inlineVariants makes t's variants write their documents inline
// (variant.handling.mode json) instead of as JSON strings.
func (t *jsonType) inlineVariants() {
	if t.kind == kindVariant {
		t.kind = kindVariantInline
	}
	for i := range t.fields {
		t.fields[i].typ.inlineVariants()
	}
	if t.elem != nil {
		t.elem.inlineVariants()
	}
	if t.key != nil {
		t.key.inlineVariants()
	}
}
