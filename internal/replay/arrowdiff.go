package replay

import (
	"bytes"
	"fmt"
	"sync/atomic"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
)

// arrowImages counts the row images CheckArrowPaths found held as Arrow
// columns, so that a test can tell the Arrow path was exercised.
var arrowImages atomic.Int64

// ArrowImages returns how many Arrow-held row images CheckArrowPaths has
// compared in this process.
func ArrowImages() int64 { return arrowImages.Load() }

// pathEncoders are the formats, in each of their modes, whose Arrow path
// CheckArrowPaths holds to the Row path.
func pathEncoders() ([]cdc.Encoder, error) {
	env := debezium.Envelope{Pipeline: "test", Version: "test"}
	encs := []cdc.Encoder{&debezium.JSON{Envelope: env}}
	for _, tp := range []debezium.TimePrecisionMode{debezium.TimeAdaptive, debezium.TimeConnect, debezium.TimeISOString} {
		for _, dm := range []debezium.DecimalHandlingMode{debezium.DecimalPrecise, debezium.DecimalString, debezium.DecimalDouble} {
			f, err := debezium.NewConnectJSON(env, debezium.ConnectOptions{TimePrecision: tp, DecimalHandling: dm})
			if err != nil {
				return nil, err
			}
			encs = append(encs, f)
		}
	}
	return encs, nil
}

// CheckArrowPaths encodes every event of c (its Events) through every
// format twice: as the source made it (row images possibly held as Arrow
// columns) and with its images turned into Rows first. Key and value must
// be the same bytes, or the same error.
func CheckArrowPaths(c *cdc.Commit) error {
	encs, err := pathEncoders()
	if err != nil {
		return err
	}
	for i := range c.Events {
		e := &c.Events[i]
		if e.BeforeArrow == nil && e.AfterArrow == nil {
			continue
		}
		if e.Before == nil && e.BeforeArrow != nil {
			arrowImages.Add(1)
		}
		if e.After == nil && e.AfterArrow != nil {
			arrowImages.Add(1)
		}
		rows := *e
		if err := rows.MaterializeRows(); err != nil {
			return fmt.Errorf("event %d: materialize: %w", i, err)
		}
		for _, enc := range encs {
			for _, part := range []string{"key", "value"} {
				encode := func(ev *cdc.Event) ([]byte, error) {
					if part == "key" {
						return enc.AppendKey([]byte("prefix"), c, ev)
					}
					return enc.AppendValue([]byte("prefix"), c, ev, 1234)
				}
				a, aerr := encode(e)
				r, rerr := encode(&rows)
				if fmt.Sprint(aerr) != fmt.Sprint(rerr) || !bytes.Equal(a, r) {
					return fmt.Errorf("event %d (%s, row id %d), %T %s: the Arrow path gives\n%s (err %v)\nthe Row path\n%s (err %v)",
						i, e.Op, e.RowID, enc, part, a, aerr, r, rerr)
				}
			}
		}
	}
	return nil
}
