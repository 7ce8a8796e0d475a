package badinput

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Path addresses a node of a JSON document: string keys and int indexes.
type Path []any

func (p Path) String() string {
	var b strings.Builder
	for i, s := range p {
		switch s := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, s)
		}
	}
	return b.String()
}

// Last is the path's last key, "" for an index.
func (p Path) Last() string {
	if len(p) == 0 {
		return ""
	}
	s, _ := p[len(p)-1].(string)
	return s
}

// ParseJSON decodes a document keeping numbers exact (json.Number).
func ParseJSON(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// CloneJSON deep-copies a decoded document.
func CloneJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = CloneJSON(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = CloneJSON(x)
		}
		return s
	}
	return v
}

// Node is one node of a document and where it is.
type Node struct {
	Path  Path
	Value any
}

// Walk lists every node below root (root excluded), parents before
// children, object keys in sorted order.
func Walk(root any) []Node {
	var out []Node
	var walk func(p Path, v any)
	walk = func(p Path, v any) {
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				q := append(slices.Clone(p), k)
				out = append(out, Node{q, v[k]})
				walk(q, v[k])
			}
		case []any:
			for i, x := range v {
				q := append(slices.Clone(p), i)
				out = append(out, Node{q, x})
				walk(q, x)
			}
		}
	}
	walk(nil, root)
	return out
}

// Get returns the node at p.
func Get(root any, p Path) (any, bool) {
	v := root
	for _, s := range p {
		switch s := s.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[s]; !ok {
				return nil, false
			}
		case int:
			a, ok := v.([]any)
			if !ok || s >= len(a) {
				return nil, false
			}
			v = a[s]
		}
	}
	return v, true
}

// Set replaces the node at p (which must exist, or be a new key of an
// existing object).
func Set(root any, p Path, val any) error {
	parent, ok := Get(root, p[:len(p)-1])
	if !ok {
		return fmt.Errorf("no %s", p[:len(p)-1])
	}
	switch k := p[len(p)-1].(type) {
	case string:
		m, ok := parent.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not an object", p[:len(p)-1])
		}
		m[k] = val
	case int:
		a, ok := parent.([]any)
		if !ok || k >= len(a) {
			return fmt.Errorf("no %s", p)
		}
		a[k] = val
	}
	return nil
}

// Delete removes the key at p, or the element at p from its array (the
// array is rewritten in its parent).
func Delete(root any, p Path) error {
	parent, ok := Get(root, p[:len(p)-1])
	if !ok {
		return fmt.Errorf("no %s", p[:len(p)-1])
	}
	switch k := p[len(p)-1].(type) {
	case string:
		m, ok := parent.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not an object", p[:len(p)-1])
		}
		delete(m, k)
		return nil
	case int:
		a, ok := parent.([]any)
		if !ok || k >= len(a) {
			return fmt.Errorf("no %s", p)
		}
		return Set(root, p[:len(p)-1], slices.Delete(slices.Clone(a), k, k+1))
	}
	return nil
}
