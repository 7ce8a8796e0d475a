package debezium

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/icecdc/icecdc/cdc"
)

// DefaultRouterKeyField is the key field ByLogicalTableRouter adds:
// Debezium's key.field.name default.
const DefaultRouterKeyField = "__dbz__physicalTableIdentifier"

// Router is Debezium's ByLogicalTableRouter over icecdc's topics: a topic
// that topic.regex matches whole goes to the topic topic.replacement makes
// of it, so that tables share one topic; their keys then carry the topic
// they had (key.field.name), which keeps keys of different tables apart.
type Router struct {
	topic       *regexp.Regexp
	replacement string // a Go Expand template
	// KeyField is added to routed keys; empty when
	// key.enforce.uniqueness is false.
	KeyField       string
	keyRegex       *regexp.Regexp // key.field.regex; nil: the old topic as it is
	keyReplacement string

	mu    sync.Mutex
	cache map[string]route
}

type route struct {
	topic, physical string
	ok              bool
}

// NewRouter compiles a router. Patterns and replacements are Java's
// (Matcher.replaceFirst's $1, ${name}, \ escapes); the patterns are
// compiled by Go's regexp, which takes the usual syntax but no
// backreferences or lookaround.
func NewRouter(topicRegex, topicReplacement, keyField, keyRegex, keyReplacement string) (*Router, error) {
	r := &Router{KeyField: keyField, cache: map[string]route{}}
	var err error
	if topicRegex == "" {
		return nil, errors.New("topic.regex is required")
	}
	if r.topic, err = regexp.Compile("^(?:" + topicRegex + ")$"); err != nil {
		return nil, fmt.Errorf("topic.regex %q: %v", topicRegex, regexpReason(err))
	}
	if r.replacement, err = javaReplacement(topicReplacement, r.topic); err != nil {
		return nil, fmt.Errorf("topic.replacement %q: %v", topicReplacement, err)
	}
	if keyRegex != "" {
		if r.keyRegex, err = regexp.Compile("^(?:" + keyRegex + ")$"); err != nil {
			return nil, fmt.Errorf("key.field.regex %q: %v", keyRegex, regexpReason(err))
		}
		if r.keyReplacement, err = javaReplacement(keyReplacement, r.keyRegex); err != nil {
			return nil, fmt.Errorf("key.field.replacement %q: %v", keyReplacement, err)
		}
	}
	return r, nil
}

func regexpReason(err error) string {
	s := err.Error()
	return strings.TrimPrefix(s, "error parsing regexp: ")
}

// javaReplacement turns a replacement in Java's syntax into a Go Expand
// template: \x is x, $n the group n (digits taken while the group
// exists, as Java does), ${name} a named group; a literal $ becomes $$.
func javaReplacement(s string, re *regexp.Regexp) (string, error) {
	var b strings.Builder
	groups := re.NumSubexp()
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return "", errors.New("ends with a backslash")
			}
			i++
			if s[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(s[i])
			}
		case c == '$':
			if i+1 < len(s) && s[i+1] == '{' {
				end := strings.IndexByte(s[i:], '}')
				if end < 0 {
					return "", errors.New("a ${ without its }")
				}
				name := s[i+2 : i+end]
				if re.SubexpIndex(name) < 0 {
					return "", fmt.Errorf("no group named %q", name)
				}
				b.WriteString("${" + name + "}")
				i += end
				continue
			}
			if i+1 >= len(s) || s[i+1] < '0' || s[i+1] > '9' {
				return "", errors.New("a $ not followed by a group number or {name}")
			}
			n := int(s[i+1] - '0')
			i++
			for i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' && n*10+int(s[i+1]-'0') <= groups {
				n = n*10 + int(s[i+1]-'0')
				i++
			}
			if n > groups {
				return "", fmt.Errorf("no group %d", n)
			}
			fmt.Fprintf(&b, "${%d}", n)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// Route returns the topic events of topic go to, and whether the router
// changed it.
func (r *Router) Route(topic string) (string, bool) {
	rt := r.lookup(topic)
	return rt.topic, rt.ok
}

// Topic returns the topic events of topic go to.
func (r *Router) Topic(topic string) string { return r.lookup(topic).topic }

func (r *Router) lookup(topic string) route {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rt, ok := r.cache[topic]; ok {
		return rt
	}
	rt := route{topic: topic}
	if m := r.topic.FindStringSubmatchIndex(topic); m != nil {
		// An empty result keeps the record where it was, as Debezium does.
		if t := string(r.topic.ExpandString(nil, r.replacement, topic, m)); t != "" {
			rt.topic, rt.ok = t, true
			rt.physical = topic
			if r.keyRegex != nil {
				if km := r.keyRegex.FindStringSubmatchIndex(topic); km != nil {
					rt.physical = string(r.keyRegex.ExpandString(nil, r.keyReplacement, topic, km))
				}
			}
		}
	}
	if len(r.cache) > 4096 {
		r.cache = map[string]route{}
	}
	r.cache[topic] = rt
	return rt
}

// Routed is an encoder whose routed tables' keys carry the router's key
// field and, in Connect JSON, whose schema names are the shared topic's
// (<topic>.Key, .Envelope, .Value), as ByLogicalTableRouter rewrites them.
// It edits the bytes the inner encoder wrote, whose layout it knows, so
// that each format needs no routing of its own.
type Routed struct {
	Inner  cdc.Encoder
	Router *Router
	// TopicOf is the topic a table's events go to before routing.
	TopicOf func(t *cdc.TableInfo) string
	// SchemaBase, for Connect JSON and Avro, is the start of the table's
	// schema names (<prefix>.<namespace>.<table>); nil for debezium-json.
	SchemaBase func(t *cdc.TableInfo) string
	// Flattened says that Inner is a flattened form (Unwrap) that ran
	// before the router, as in Debezium's transforms "unwrap,route":
	// ByLogicalTableRouter renames only an envelope's schemas, so the
	// flattened value keeps the table's own <table>.Value name. Without
	// it the router runs first ("route,unwrap"), and the flattened value
	// carries the renamed after field's schema, <topic>.Value.
	Flattened bool
}

var (
	_ cdc.SchemaChangeEncoder = (*Routed)(nil)
	_ cdc.RecordShaper        = (*Routed)(nil)
)

// AppendKey appends the inner encoder's key with the router's key field.
func (r *Routed) AppendKey(dst []byte, c *cdc.Commit, e *cdc.Event) ([]byte, error) {
	rt := r.Router.lookup(r.TopicOf(&c.Table))
	if !rt.ok {
		return r.Inner.AppendKey(dst, c, e)
	}
	if a, conn, ok := avroBeneath(r.Inner); ok {
		return a.appendConnect(dst, c, 'k', func(dst []byte) ([]byte, error) { return r.connectOf(conn).AppendKey(dst, c, e) },
			func() string { return "encode key of event " + eventID(c, e) })
	}
	start := len(dst)
	dst, err := r.Inner.AppendKey(dst, c, e)
	if err != nil {
		return dst, err
	}
	key := append([]byte(nil), dst[start:]...)
	dst = dst[:start]
	field := appendJSONString(nil, r.Router.KeyField)
	value := appendJSONString(nil, rt.physical)
	if r.SchemaBase == nil {
		if r.Router.KeyField == "" {
			return append(dst, key...), nil
		}
		if len(key) < 2 || key[len(key)-1] != '}' {
			return dst, fmt.Errorf("route key of event %s: not a JSON object", eventID(c, e))
		}
		dst = append(dst, key[:len(key)-1]...)
		return append(append(append(append(append(dst, ','), field...), ':'), value...), '}'), nil
	}
	end := bytes.Index(key, []byte(`},"payload":`))
	fields := bytes.LastIndex(key[:max(end, 0)], []byte(`],"optional":false,"name":`))
	if end < 0 || fields < 0 || !bytes.HasSuffix(key, []byte("}}")) {
		return dst, fmt.Errorf("route key of event %s: not a Connect struct", eventID(c, e))
	}
	dst = append(dst, key[:fields]...)
	if r.Router.KeyField != "" {
		dst = append(dst, `,{"type":"string","optional":false,"field":`...)
		dst = append(append(dst, field...), '}')
	}
	dst = append(dst, `],"optional":false,"name":`...)
	dst = appendJSONString(dst, rt.topic+".Key")
	payload := key[end:]
	if r.Router.KeyField == "" {
		return append(dst, payload...), nil
	}
	dst = append(dst, payload[:len(payload)-2]...)
	dst = append(append(append(append(dst, ','), field...), ':'), value...)
	return append(dst, "}}"...), nil
}

// AppendValue appends the inner encoder's value; in Connect JSON, its
// schema takes the shared topic's names.
func (r *Routed) AppendValue(dst []byte, c *cdc.Commit, e *cdc.Event, tsMs int64) ([]byte, error) {
	rt := r.Router.lookup(r.TopicOf(&c.Table))
	if !rt.ok || r.SchemaBase == nil || r.Flattened {
		return r.Inner.AppendValue(dst, c, e, tsMs)
	}
	if a, conn, ok := avroBeneath(r.Inner); ok {
		if err := a.transactionSchemas(); err != nil {
			return dst, fmt.Errorf("encode event %s: %w", eventID(c, e), err)
		}
		return a.appendConnect(dst, c, 'v', func(dst []byte) ([]byte, error) { return r.connectOf(conn).AppendValue(dst, c, e, tsMs) },
			func() string { return "encode event " + eventID(c, e) })
	}
	start := len(dst)
	dst, err := r.Inner.AppendValue(dst, c, e, tsMs)
	if err != nil {
		return dst, err
	}
	v := dst[start:]
	end := bytes.Index(v, []byte(`,"payload":`))
	if end < 0 {
		return dst, nil // a tombstone or a value without a schema
	}
	base := r.SchemaBase(&c.Table)
	schema := append([]byte(nil), v[:end]...)
	for _, suffix := range []string{".Envelope", ".Value"} {
		schema = bytes.ReplaceAll(schema, appendJSONString(nil, base+suffix), appendJSONString(nil, rt.topic+suffix))
	}
	rest := append([]byte(nil), v[end:]...)
	return append(append(dst[:start], schema...), rest...), nil
}

// EncodeSchemaChange encodes with the inner encoder: schema-change records
// keep their topic.
func (r *Routed) EncodeSchemaChange(c *cdc.Commit, s *cdc.SchemaChange, tsMs int64) ([]byte, []byte, error) {
	se, ok := r.Inner.(cdc.SchemaChangeEncoder)
	if !ok {
		return nil, nil, fmt.Errorf("format %T has no schema-change records", r.Inner)
	}
	return se.EncodeSchemaChange(c, s, tsMs)
}

// Keep passes the inner encoder's choice through (Unwrap's drop mode
// leaves deletes out); every event has a record otherwise.
func (r *Routed) Keep(c *cdc.Commit, e *cdc.Event) bool {
	if s, ok := r.Inner.(cdc.RecordShaper); ok {
		return s.Keep(c, e)
	}
	return true
}

// AppendHeaders appends the inner encoder's headers (Unwrap's
// add.headers): the router leaves headers alone.
func (r *Routed) AppendHeaders(dst []cdc.Header, c *cdc.Commit, e *cdc.Event, tsMs int64) []cdc.Header {
	if s, ok := r.Inner.(cdc.RecordShaper); ok {
		return s.AppendHeaders(dst, c, e, tsMs)
	}
	return dst
}

// A routed debezium-avro record is what AvroConverter writes of the
// routed Connect record: the router's Connect JSON (key field, renamed
// schemas) transcoded by the Avro format, so that its schemas, registered
// under the routed topic's subjects, carry the shared topic's names and
// the key field, as Debezium's do; a flattened record is the router's
// over the flattened Connect record, in either order of the transforms.
// Unrouted tables keep the Avro format's own path.

// connectOf is the router over conn, the Connect JSON of the records.
func (r *Routed) connectOf(conn cdc.Encoder) *Routed {
	return &Routed{Inner: conn, Router: r.Router, TopicOf: r.TopicOf, SchemaBase: r.SchemaBase, Flattened: r.Flattened}
}

// Unrouted returns the encoder a Routed wraps, or enc when it is not one:
// the format whose records the router leaves alone (transactions,
// heartbeats) and whose transforms the sink's settings follow.
func Unrouted(enc cdc.Encoder) cdc.Encoder {
	if r, ok := enc.(*Routed); ok {
		return r.Inner
	}
	return enc
}
