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
	// SchemaBase, for Connect JSON, is the start of the table's schema
	// names (<prefix>.<namespace>.<table>); nil for debezium-json.
	SchemaBase func(t *cdc.TableInfo) string
}

var _ cdc.SchemaChangeEncoder = (*Routed)(nil)

// AppendKey appends the inner encoder's key with the router's key field.
func (r *Routed) AppendKey(dst []byte, c *cdc.Commit, e *cdc.Event) ([]byte, error) {
	start := len(dst)
	dst, err := r.Inner.AppendKey(dst, c, e)
	if err != nil {
		return dst, err
	}
	rt := r.Router.lookup(r.TopicOf(&c.Table))
	if !rt.ok {
		return dst, nil
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
	start := len(dst)
	dst, err := r.Inner.AppendValue(dst, c, e, tsMs)
	if err != nil || r.SchemaBase == nil {
		return dst, err
	}
	rt := r.Router.lookup(r.TopicOf(&c.Table))
	if !rt.ok {
		return dst, nil
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
