package debezium

import (
	"bytes"
	"fmt"

	"github.com/icecdc/icecdc/cdc"
)

// connectFlat is the start of one table's flattened values for one
// Unwrap, up to the payload.
type connectFlat struct {
	layout *Unwrap
	prefix []byte
}

func (f *ConnectJSON) envelope() *Envelope { return &f.Envelope }
func (f *ConnectJSON) connect() bool       { return true }

// flatPrefix returns {"schema":<flattened Value>,"payload": for fl's
// layout. Without __deleted and added fields the schema is the after
// field's, as ExtractField leaves it; with them it is rebuilt as Connect's
// InsertField and the SMT's addFields rebuild it: the Value struct's name
// and fields, no longer optional, then __deleted and the added fields,
// each optional, with the envelope field's type, logical name and
// parameters.
func (ct *connectTable) flatPrefix(fl *flatRecord) ([]byte, error) {
	if cf := ct.flat.Load(); cf != nil && cf.layout == fl.layout {
		return cf.prefix, nil
	}
	p := append([]byte(nil), `{"schema":`...)
	if fl.deleted == "" && len(fl.fields) == 0 {
		p = append(p, ct.rowSchema...)
	} else {
		const open = `],"optional":true`
		i := bytes.LastIndex(ct.rowSchema, []byte(open+`,"name":`))
		if i < 0 {
			return nil, fmt.Errorf("flatten: the row schema has no struct to extend")
		}
		head := ct.rowSchema[:i]
		p = append(p, head...)
		sep := func() {
			if len(p) > 0 && p[len(p)-1] != '[' {
				p = append(p, ',')
			}
		}
		if fl.deleted != "" {
			sep()
			p = connectField(p, "string", true, deletedField)
		}
		for _, r := range fl.fields {
			sep()
			p = append(p, `{"type":"`...)
			p = append(p, r.f.typ...)
			p = append(p, `","optional":true`...)
			p = append(p, r.f.logical...)
			p = append(p, `,"field":`...)
			p = appendJSONString(p, r.out)
			p = append(p, '}')
		}
		p = append(p, `],"optional":false`...)
		p = append(p, ct.rowSchema[i+len(open):]...)
	}
	p = append(p, `},"payload":`...)
	ct.flat.Store(&connectFlat{layout: fl.layout, prefix: p})
	return p, nil
}

func (f *ConnectJSON) appendFlat(dst []byte, c *cdc.Commit, e *cdc.Event, fl *flatRecord) ([]byte, error) {
	out, err := f.appendFlatValue(dst, c, e, fl)
	if err != nil {
		return dst, fmt.Errorf("encode event %s: %w", eventID(c, e), err)
	}
	return out, nil
}

func (f *ConnectJSON) appendFlatValue(dst []byte, c *cdc.Commit, e *cdc.Event, fl *flatRecord) ([]byte, error) {
	if err := validEvent(e); err != nil {
		return dst, err
	}
	ct, err := f.table(&c.Table)
	if err != nil {
		return dst, err
	}
	prefix, err := ct.flatPrefix(fl)
	if err != nil {
		return dst, err
	}
	im, err := flatImage(c, e, fl)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	dst = append(dst, prefix...)
	row := start + len(prefix)
	if dst, err = ct.row.row.appendConnectImage(dst, im, &f.opts); err != nil {
		return dst[:start], err
	}
	dst = appendFlatTail(dst, row, fl)
	return append(dst, '}'), nil
}

// appendFlatNull appends {"schema":<the after field's schema>,"payload":null}:
// Connect's JsonConverter writes a null value that has a schema so.
func (f *ConnectJSON) appendFlatNull(dst []byte, c *cdc.Commit, e *cdc.Event) ([]byte, error) {
	ct, err := f.table(&c.Table)
	if err != nil {
		return dst, fmt.Errorf("encode event %s: %w", eventID(c, e), err)
	}
	dst = append(dst, `{"schema":`...)
	dst = append(dst, ct.rowSchema...)
	return append(dst, `},"payload":null}`...), nil
}
