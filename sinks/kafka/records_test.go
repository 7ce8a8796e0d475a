package kafka

import (
	"bytes"
	"slices"
	"strconv"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRecords checks what lands in the topic: the templated topic name,
// one record per event keyed by the event key, the four headers, and a
// tombstone right after each delete in its partition.
func TestRecords(t *testing.T) {
	ctx := testContext(t)
	c := newCluster(t)
	cfg := testConfig(c)
	cfg.Topic = "cdc.{catalog}.{namespace}.{table}.{pipeline}"
	on := true
	cfg.Tombstones = &on
	cfg.TopicPartitions = 4
	s := newSink(t, cfg)
	r := newReader(c, cfg)

	st := sinktest.NewStream("shop", "orders")
	var batches []*cdc.Batch
	for range 4 {
		batches = append(batches, st.Snapshot(60, 25)...)
	}
	for _, b := range batches {
		if err := s.Write(ctx, b); err != nil {
			t.Fatalf("Write %s: %v", b.Checkpoint, err)
		}
	}
	want := sent(batches...)
	byID := map[string]*cdc.Batch{}
	for _, b := range batches {
		for _, m := range b.Messages {
			byID[m.ID] = b
		}
	}

	recs, err := r.records(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	deletes, tombstones := 0, 0
	last := map[int32]*kgo.Record{} // previous record of each partition
	for _, rec := range recs {
		if rec.Topic != "cdc.local.shop.orders.shop-cdc" {
			t.Fatalf("record in topic %q", rec.Topic)
		}
		prev := last[rec.Partition]
		last[rec.Partition] = rec
		if rec.Value == nil {
			tombstones++
			if prev == nil || header(prev, headerOp) != "d" || !bytes.Equal(prev.Key, rec.Key) {
				t.Fatalf("tombstone for key %s at %d[%d] does not follow its delete", rec.Key, rec.Partition, rec.Offset)
			}
			if len(rec.Headers) != 0 {
				t.Fatalf("tombstone has headers %v", rec.Headers)
			}
			continue
		}
		if prev != nil && header(prev, headerOp) == "d" {
			t.Fatalf("delete %s is not followed by its tombstone", header(prev, headerID))
		}
		id := header(rec, headerID)
		b := byID[id]
		if b == nil {
			t.Fatalf("record with id header %q was not sent", id)
		}
		if got, want := header(rec, headerSequence), strconv.FormatInt(b.Snapshot.SequenceNumber, 10); got != want {
			t.Fatalf("%s: sequence_number %q, want %q", id, got, want)
		}
		if got, want := header(rec, headerSnapshot), strconv.FormatInt(b.Snapshot.ID, 10); got != want {
			t.Fatalf("%s: snapshot_id %q, want %q", id, got, want)
		}
		names := []string{}
		for _, h := range rec.Headers {
			names = append(names, h.Key)
		}
		if !slices.Equal(names, []string{"id", "op", "sequence_number", "snapshot_id"}) {
			t.Fatalf("%s: headers %v", id, names)
		}
		if header(rec, headerOp) == "d" {
			deletes++
		}
	}
	if deletes == 0 || tombstones != deletes {
		t.Fatalf("%d deletes, %d tombstones", deletes, tombstones)
	}
	if p := last; len(p) < 2 {
		t.Fatalf("all records in %d partition(s): keys are not spread", len(p))
	}
	// Values, keys, ops, and the order per key, against what was sent.
	checkRead(t, ctx, r, want)
}
