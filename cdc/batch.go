package cdc

import "strconv"

// batchBuilder encodes a chunk of events into a few shared buffers: the
// values one after another, the keys, and the event ids. A batch costs a handful of allocations, not several per
// event. The buffers are kept from batch to batch when the sink keeps
// nothing of a batch once written (NonRetainingSink: the file, stdout,
// Kafka and webhook sinks among others); otherwise they are new for every
// batch.
type batchBuilder struct {
	vals, keys, ids []byte
	offs            []msgOffsets
	msgs            []Message // the batch's messages, kept with reuse
	headers         []Header  // of every message, when the encoder adds some
	ops             opCounts  // events by Op
	idPrefix        []byte    // "<table_uuid>:<seq>:"
	hint            int       // bytes of the previous batch, to size the next
	// reuse keeps the buffers from batch to batch: the sink keeps no part
	// of a batch once written (a NonRetainingSink).
	reuse bool
}

// opCounts counts a batch's events by Op, one count per Op there is.
// A follower at work holds three batch builders, and an array indexed by
// the Op byte (2 KiB each) made the followers of 10,000 tables 60 MiB of
// the heap.
type opCounts [len(countedOps)]int

var countedOps = [...]Op{OpCreate, OpUpdate, OpDelete, OpSnapshot}

func (n *opCounts) add(op Op) {
	for i, o := range countedOps {
		if o == op {
			n[i]++
			return
		}
	}
}

type msgOffsets struct {
	op                           Op
	index                        int
	val, valEnd, key, keyEnd, id int
	hdr, hdrEnd                  int
}

// start empties the builder for a batch of c's events.
func (bb *batchBuilder) start(c *Commit, events int) {
	if bb.reuse && bb.vals != nil {
		bb.vals, bb.keys, bb.ids, bb.offs, bb.headers = bb.vals[:0], bb.keys[:0], bb.ids[:0], bb.offs[:0], bb.headers[:0]
	} else {
		bb.headers = nil
		bb.hint = len(bb.vals)
		bb.vals = make([]byte, 0, bb.hint+bb.hint/8)
		bb.keys, bb.ids = nil, nil
		bb.offs = make([]msgOffsets, 0, min(events, 1<<16))
	}
	bb.ops = opCounts{}
	bb.idPrefix = strconv.AppendInt(append(append(bb.idPrefix[:0], c.Table.UUID...), ':'), c.Snapshot.SequenceNumber, 10)
	bb.idPrefix = append(bb.idPrefix, ':')
}

// builders are a follower's batch builders: batch encodes the batches
// of net ranges, send the two of deliver's (see delivery.flush). The
// first batch makes them and an idle table drops them with their buffers
// (follower.idleSource): the followers of 10,000 idle tables kept 6 MiB of
// them.
type builders struct {
	batch batchBuilder
	send  [2]batchBuilder
}

// builders are f's, made if it has none.
func (f *follower) builders() *builders {
	if f.bb == nil {
		f.bb = new(builders)
		_, reuse := f.p.Sink.(NonRetainingSink)
		f.bb.batch.reuse, f.bb.send[0].reuse, f.bb.send[1].reuse = reuse, reuse, reuse
	}
	return f.bb
}

func (bb *batchBuilder) size() int { return len(bb.vals) + len(bb.keys) }

// add encodes one event; an event the encoder leaves out adds nothing.
func (bb *batchBuilder) add(enc Encoder, c *Commit, e *Event, tsMs int64) error {
	o := msgOffsets{op: e.Op, index: e.Index, key: len(bb.keys), val: len(bb.vals), id: len(bb.ids), hdr: len(bb.headers)}
	shaper, _ := enc.(RecordShaper)
	if shaper != nil && !shaper.Keep(c, e) {
		return nil
	}
	var err error
	if bb.keys, err = enc.AppendKey(bb.keys, c, e); err != nil {
		bb.keys = bb.keys[:o.key]
		return err
	}
	o.keyEnd = len(bb.keys)
	if bb.vals, err = enc.AppendValue(bb.vals, c, e, tsMs); err != nil {
		bb.keys, bb.vals = bb.keys[:o.key], bb.vals[:o.val]
		return err
	}
	o.valEnd = len(bb.vals)
	if shaper != nil {
		bb.headers = shaper.AppendHeaders(bb.headers, c, e, tsMs)
	}
	o.hdrEnd = len(bb.headers)
	bb.ids = append(bb.ids, bb.idPrefix...)
	bb.ids = strconv.AppendInt(bb.ids, e.RowID, 10)
	bb.ids = append(bb.ids, ':', byte(e.Op))
	bb.offs = append(bb.offs, o)
	bb.ops.add(e.Op)
	return nil
}

// batch returns the built messages, slices of the builder's buffers.
func (bb *batchBuilder) batch(c *Commit, cp Checkpoint) *Batch {
	ids := string(bb.ids) // one string for every id of the batch
	msgs := bb.msgs
	if !bb.reuse || cap(msgs) < len(bb.offs) {
		msgs = make([]Message, len(bb.offs))
	}
	msgs = msgs[:len(bb.offs)]
	if bb.reuse {
		bb.msgs = msgs // its batch was confirmed before the builder is used again
	}
	b := &Batch{Table: c.Table, Snapshot: c.Snapshot, Checkpoint: cp, Messages: msgs}
	for i, o := range bb.offs {
		idEnd := len(ids)
		if i+1 < len(bb.offs) {
			idEnd = bb.offs[i+1].id
		}
		m := Message{ID: ids[o.id:idEnd], Op: o.op, Index: o.index}
		if o.keyEnd > o.key {
			m.Key = bb.keys[o.key:o.keyEnd:o.keyEnd]
		}
		if o.valEnd > o.val {
			m.Value = bb.vals[o.val:o.valEnd:o.valEnd]
		}
		if o.hdrEnd > o.hdr {
			m.Headers = bb.headers[o.hdr:o.hdrEnd:o.hdrEnd]
		}
		b.Messages[i] = m
	}
	return b
}
