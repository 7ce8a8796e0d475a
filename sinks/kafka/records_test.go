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

// TestCompression checks that record batches reach the broker compressed
// with the configured codec (snappy by default), their records unchanged.
func TestCompression(t *testing.T) {
	ctx := testContext(t)
	for _, tc := range []struct {
		codec string
		attr  uint8 // the record batch's compression attribute
	}{{"", 2}, {"zstd", 4}, {"lz4", 3}, {"none", 0}} {
		t.Run("codec="+tc.codec, func(t *testing.T) {
			c := newCluster(t)
			cfg := testConfig(c)
			cfg.Compression = tc.codec
			s := newSink(t, cfg)
			st := sinktest.NewStream("shop", "orders")
			batches := st.Snapshot(200, 100)
			for _, b := range batches {
				if err := s.Write(ctx, b); err != nil {
					t.Fatalf("Write %s: %v", b.Checkpoint, err)
				}
			}
			recs, err := newReader(c, cfg).records(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			byID := map[string]*kgo.Record{}
			for _, r := range recs {
				if got := r.Attrs.CompressionType(); got != tc.attr {
					t.Fatalf("record at offset %d of %s[%d]: compression %d, want %d", r.Offset, r.Topic, r.Partition, got, tc.attr)
				}
				if id := header(r, headerID); id != "" {
					byID[id] = r
				}
			}
			want := sent(batches...)
			if len(byID) != len(want) {
				t.Fatalf("%d events read back, want %d", len(byID), len(want))
			}
			for _, m := range want {
				r := byID[m.ID]
				if r == nil || !bytes.Equal(r.Key, m.Key) || !bytes.Equal(r.Value, m.Value) {
					t.Fatalf("event %s: read back %v, want key %q value %q", m.ID, r, m.Key, m.Value)
				}
			}
		})
	}
}
