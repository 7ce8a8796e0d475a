package kafka

import (
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// TestCloudEventsHeaders: with cloudevents, every event record carries
// the binary-mode attributes of the CloudEvents Kafka binding, taken from
// its event; tombstones carry none.
func TestCloudEventsHeaders(t *testing.T) {
	ctx := testContext(t)
	c := newCluster(t)
	cfg := testConfig(c)
	cfg.CloudEvents = true
	s := newSink(t, cfg)
	r := newReader(c, cfg)
	st := sinktest.NewStream("shop", "orders")
	batches := st.Snapshot(30, 10)
	byID := map[string]*cdc.Batch{}
	keys := map[string]string{}
	for _, b := range batches {
		if err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
		for _, m := range b.Messages {
			byID[m.ID], keys[m.ID] = b, string(m.Key)
		}
	}
	recs, err := r.records(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	for _, rec := range recs {
		if rec.Value == nil {
			if header(rec, "ce_id") != "" {
				t.Fatal("tombstone with CloudEvents headers")
			}
			continue
		}
		events++
		id := header(rec, "ce_id")
		b := byID[id]
		if b == nil || id != header(rec, headerID) {
			t.Fatalf("ce_id %q", id)
		}
		want := map[string]string{
			"ce_specversion": "1.0",
			"ce_source":      "icecdc/shop-cdc/shop.orders",
			"ce_type":        "io.icecdc.change." + header(rec, headerOp),
			"ce_time":        time.UnixMilli(b.Snapshot.TimestampMs).UTC().Format(time.RFC3339Nano),
			"ce_subject":     keys[id],
			"content-type":   "application/json",
		}
		for k, v := range want {
			if got := header(rec, k); got != v {
				t.Fatalf("%s: %s = %q, want %q", id, k, got, v)
			}
		}
		if _, err := time.Parse(time.RFC3339, header(rec, "ce_time")); err != nil {
			t.Fatalf("ce_time: %v", err)
		}
	}
	if events != len(sent(batches...)) {
		t.Fatalf("%d events, want %d", events, len(sent(batches...)))
	}
}

func TestCloudEventsSubject(t *testing.T) {
	for key, want := range map[string]string{
		`{"order_id":1}`: `{"order_id":1}`,
		`{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"payload"}],"optional":false},"payload":{"payload":7}}`:                                                                    `{"payload":7}`,
		`{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"a"},{"type":"int64","optional":false,"field":"payload"}],"optional":false},"payload":{"a":",\"payload\":","payload":7}}`: `{"a":",\"payload\":","payload":7}`,
	} {
		if got := string(debezium.KeyPayload([]byte(key))); got != want {
			t.Errorf("KeyPayload(%s) = %s, want %s", key, got, want)
		}
	}
}
