package debezium

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"
)

// connectSchema is a Kafka Connect schema as JsonConverter reads it
// (asConnectSchema): only these members mean anything to it.
type connectSchema struct {
	Type       string            `json:"type"`
	Optional   *bool             `json:"optional"`
	Name       string            `json:"name"`
	Version    *int              `json:"version"`
	Parameters map[string]string `json:"parameters"`
	Default    json.RawMessage   `json:"default"`
	Field      string            `json:"field"`
	Fields     []*connectSchema  `json:"fields"`
	Items      *connectSchema    `json:"items"`
	Keys       *connectSchema    `json:"keys"`
	Values     *connectSchema    `json:"values"`
}

func (s *connectSchema) optional() bool { return s.Optional != nil && *s.Optional }

func (s *connectSchema) field(name string) *connectSchema {
	for _, f := range s.Fields {
		if f.Field == name {
			return f
		}
	}
	return nil
}

// decodeConnect splits a record in Connect's JSON form and checks it the
// way JsonConverter.toConnectData does with schemas.enable=true: an object
// of exactly "schema" and "payload", a schema every part of which has a
// known type, and a payload that converts to that schema. It is stricter
// in one way: a payload object may not hold members its schema lacks,
// since that would be a field a Connect sink silently drops.
func decodeConnect(t *testing.T, record []byte) (*connectSchema, json.RawMessage) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(record))
	dec.UseNumber()
	var env map[string]json.RawMessage
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, record)
	}
	if len(env) != 2 || env["schema"] == nil || env["payload"] == nil {
		t.Fatalf("want exactly schema and payload, got %d members: %s", len(env), record)
	}
	var s connectSchema
	if err := json.Unmarshal(env["schema"], &s); err != nil {
		t.Fatal(err)
	}
	if err := checkSchema(&s, "$"); err != nil {
		t.Fatalf("schema: %v", err)
	}
	if err := checkPayload(&s, env["payload"], "$"); err != nil {
		t.Fatalf("payload: %v\n%.300s", err, record)
	}
	return &s, env["payload"]
}

var logicalBase = map[string]string{
	connectDecimal: "bytes", connectDate: "int32", connectTime: "int32", connectTimestamp: "int64",
	dbzDate: "int32", dbzMicroTime: "int64", dbzMicroTS: "int64", dbzNanoTS: "int64",
	dbzZonedTS: "string", dbzIsoDate: "string", dbzIsoTime: "string", dbzIsoTS: "string",
	dbzUUID: "string", dbzEnum: "string", icecdcUnknown: "string",
}

func checkSchema(s *connectSchema, at string) error {
	if s.Optional == nil {
		return fmt.Errorf("%s: no optional", at)
	}
	if base, ok := logicalBase[s.Name]; ok && base != s.Type {
		return fmt.Errorf("%s: %s on %s, want %s", at, s.Name, s.Type, base)
	}
	if s.Name == connectDecimal {
		if s.Parameters["scale"] == "" || s.Version == nil || *s.Version != 1 {
			return fmt.Errorf("%s: Decimal without scale parameter or version 1", at)
		}
	}
	switch s.Type {
	case "boolean", "int8", "int16", "int32", "int64", "float", "double", "bytes", "string":
		if s.Fields != nil || s.Items != nil || s.Keys != nil {
			return fmt.Errorf("%s: %s with nested schemas", at, s.Type)
		}
	case "array":
		if s.Items == nil {
			return fmt.Errorf("%s: array without items", at)
		}
		return checkSchema(s.Items, at+"[]")
	case "map":
		if s.Keys == nil || s.Values == nil {
			return fmt.Errorf("%s: map without keys or values", at)
		}
		if err := checkSchema(s.Keys, at+".key"); err != nil {
			return err
		}
		return checkSchema(s.Values, at+".value")
	case "struct":
		if s.Fields == nil {
			return fmt.Errorf("%s: struct without fields", at)
		}
		seen := map[string]bool{}
		for _, f := range s.Fields {
			if f.Field == "" || seen[f.Field] {
				return fmt.Errorf("%s: field without a name or named twice: %q", at, f.Field)
			}
			seen[f.Field] = true
			if err := checkSchema(f, at+"."+f.Field); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%s: unknown type %q", at, s.Type)
	}
	return nil
}

func checkPayload(s *connectSchema, raw json.RawMessage, at string) error {
	if raw == nil || string(raw) == "null" {
		if s.optional() || s.Default != nil {
			return nil
		}
		return fmt.Errorf("%s: null for a required %s", at, s.Type)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s: %v", at, err)
	}
	switch s.Type {
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %s for boolean", at, raw)
		}
	case "int8", "int16", "int32", "int64":
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("%s: %s for %s", at, raw, s.Type)
		}
		i, err := n.Int64()
		if err != nil {
			return fmt.Errorf("%s: %s is not an integer", at, raw)
		}
		if s.Type == "int32" && (i < math.MinInt32 || i > math.MaxInt32) {
			return fmt.Errorf("%s: %d outside int32", at, i)
		}
	case "float", "double":
		switch x := v.(type) {
		case json.Number:
		case string:
			// Jackson (JsonConverter's serializer) writes these so.
			if x != "NaN" && x != "Infinity" && x != "-Infinity" {
				return fmt.Errorf("%s: %s for %s", at, raw, s.Type)
			}
		default:
			return fmt.Errorf("%s: %s for %s", at, raw, s.Type)
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: %s for string", at, raw)
		}
	case "bytes":
		x, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: %s for bytes", at, raw)
		}
		if _, err := base64.StdEncoding.DecodeString(x); err != nil {
			return fmt.Errorf("%s: bytes not base64: %v", at, err)
		}
	case "array":
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fmt.Errorf("%s: %s for array", at, raw)
		}
		for i, it := range items {
			if err := checkPayload(s.Items, it, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "map":
		if s.Keys.Type == "string" {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				return fmt.Errorf("%s: string-keyed map not an object: %s", at, raw)
			}
			for k, it := range m {
				if err := checkPayload(s.Values, it, at+"."+k); err != nil {
					return err
				}
			}
			return nil
		}
		var pairs [][]json.RawMessage
		if err := json.Unmarshal(raw, &pairs); err != nil {
			return fmt.Errorf("%s: map not an array of pairs: %s", at, raw)
		}
		for i, p := range pairs {
			if len(p) != 2 {
				return fmt.Errorf("%s[%d]: map entry of %d elements", at, i, len(p))
			}
			if err := checkPayload(s.Keys, p[0], fmt.Sprintf("%s[%d].key", at, i)); err != nil {
				return err
			}
			if err := checkPayload(s.Values, p[1], fmt.Sprintf("%s[%d].value", at, i)); err != nil {
				return err
			}
		}
	case "struct":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("%s: %s for struct", at, raw)
		}
		for _, f := range s.Fields {
			if err := checkPayload(f, m[f.Field], at+"."+f.Field); err != nil {
				return err
			}
			delete(m, f.Field)
		}
		for k := range m {
			return fmt.Errorf("%s: member %q is not in the schema", at, k)
		}
	}
	return nil
}

// decodeDecimal reads a Connect Decimal payload (base64 two's complement)
// with its schema's scale, as Decimal.toLogical does, and checks that
// the bytes are as short as BigInteger.toByteArray makes them.
func decodeDecimal(t *testing.T, s *connectSchema, raw json.RawMessage) string {
	t.Helper()
	var b64 string
	if err := json.Unmarshal(raw, &b64); err != nil {
		t.Fatal(err)
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b) == 0 {
		t.Fatalf("decimal bytes %q: %v", b64, err)
	}
	if len(b) > 1 && (b[0] == 0 && b[1]&0x80 == 0 || b[0] == 0xff && b[1]&0x80 != 0) {
		t.Fatalf("decimal bytes % x are not minimal", b)
	}
	x := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	var scale int
	fmt.Sscan(s.Parameters["scale"], &scale)
	str := x.String()
	neg := strings.HasPrefix(str, "-")
	str = strings.TrimPrefix(str, "-")
	for len(str) <= scale {
		str = "0" + str
	}
	if scale > 0 {
		str = str[:len(str)-scale] + "." + str[len(str)-scale:]
	}
	if neg {
		str = "-" + str
	}
	return str
}
