package awssink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
)

var fast = Retry{Initial: time.Microsecond, Max: time.Microsecond, Attempts: 5}

// TestDeliverKeepsKeyOrder replays answers in which the service took some
// entries of a request and refused others (a throttled shard): every
// entry arrives once, and no entry of a key is accepted before the
// key's earlier ones.
func TestDeliverKeepsKeyOrder(t *testing.T) {
	keys := []string{"a", "b", "a", "c", "a", "b", "d", "c"}
	entries := make([]Entry, len(keys))
	for i, k := range keys {
		entries[i] = Entry{Group: k, Size: 1}
	}
	var requests [][]int
	var accepted []int
	refuse := map[int]int{0: 2, 3: 1, 5: 1} // entry → how many times it is refused
	send := func(_ context.Context, idx []int) ([]Failure, error) {
		requests = append(requests, slices.Clone(idx))
		var fs []Failure
		for _, i := range idx {
			if refuse[i] > 0 {
				refuse[i]--
				fs = append(fs, Failure{Index: i, Reason: "ProvisionedThroughputExceededException: slow down"})
				continue
			}
			accepted = append(accepted, i)
		}
		return fs, nil
	}
	err := Deliver(context.Background(), Batch{Where: "stream s", Entries: entries, Limits: Limits{Entries: 3, Bytes: 100},
		Retry: fast, Send: send, Event: func(i int) string { return fmt.Sprint(i) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(accepted) != len(keys) {
		t.Fatalf("accepted %v, want each of %d once", accepted, len(keys))
	}
	last := map[string]int{}
	for _, i := range accepted {
		if p, ok := last[keys[i]]; ok && p > i {
			t.Errorf("key %s: entry %d accepted after %d", keys[i], p, i)
		}
		last[keys[i]] = i
	}
	for _, r := range requests {
		seen := map[string]bool{}
		for _, i := range r {
			if seen[keys[i]] {
				t.Errorf("request %v holds key %s twice", r, keys[i])
			}
			seen[keys[i]] = true
		}
	}
	t.Logf("requests %v, accepted in order %v", requests, accepted)
}

// TestDeliverLimits cuts requests by count and bytes; an entry larger
// than the byte limit goes alone.
func TestDeliverLimits(t *testing.T) {
	sizes := []int{40, 40, 40, 200, 10, 10, 10, 10, 10}
	entries := make([]Entry, len(sizes))
	for i, s := range sizes {
		entries[i] = Entry{Group: fmt.Sprint(i), Size: s}
	}
	var requests [][]int
	err := Deliver(context.Background(), Batch{Entries: entries, Limits: Limits{Entries: 4, Bytes: 100}, Retry: fast,
		Send: func(_ context.Context, idx []int) ([]Failure, error) {
			requests = append(requests, slices.Clone(idx))
			return nil, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(requests); got != "[[0 1] [2] [3] [4 5 6 7] [8]]" {
		t.Errorf("requests %s", got)
	}
}

// TestDeliverErrors: an entry refused for good stops the table naming
// it; an entry refused again and again returns a retryable error after
// Attempts requests.
func TestDeliverErrors(t *testing.T) {
	entries := []Entry{{Group: "a", Size: 1}, {Group: "b", Size: 1}}
	event := func(i int) string { return fmt.Sprintf("event e%d (table shop.orders, seq 3, row %d, op c)", i, i) }
	err := Deliver(context.Background(), Batch{Where: "queue q", Entries: entries, Limits: Limits{Entries: 10, Bytes: 10}, Retry: fast, Event: event,
		Send: func(_ context.Context, idx []int) ([]Failure, error) {
			return []Failure{{Index: 1, Reason: "InvalidParameterValue: bad", Permanent: true}}, nil
		}})
	if !errors.Is(err, cdc.ErrPermanent) || err.Error() != "queue q: event e1 (table shop.orders, seq 3, row 1, op c): refused: InvalidParameterValue: bad" {
		t.Errorf("a refused entry: %v", err)
	}
	calls := 0
	err = Deliver(context.Background(), Batch{Where: "queue q", Entries: entries, Limits: Limits{Entries: 10, Bytes: 10}, Retry: fast, Event: event,
		Send: func(_ context.Context, idx []int) ([]Failure, error) {
			calls++
			return []Failure{{Index: idx[0], Reason: "Throttled"}}, nil
		}})
	if err == nil || errors.Is(err, cdc.ErrPermanent) || !strings.Contains(err.Error(), "1 of 2 messages not accepted after 5 attempts, last: event e0") || calls != 5 {
		t.Errorf("after %d calls: %v", calls, err)
	}
}

func TestGroupID(t *testing.T) {
	if g := GroupID([]byte(`{"order_id":1}`)); g != `{"order_id":1}` {
		t.Errorf("a short printable key: %q", g)
	}
	long := GroupID([]byte(strings.Repeat("k", 200)))
	if !strings.HasPrefix(long, "sha256:") || len(long) != 71 || long != GroupID([]byte(strings.Repeat("k", 200))) {
		t.Errorf("a long key: %q", long)
	}
	if g := GroupID([]byte("a b")); !strings.HasPrefix(g, "sha256:") {
		t.Errorf("a key with a space: %q", g)
	}
	if p := PartitionKey([]byte("ключ")); p != "ключ" {
		t.Errorf("a unicode partition key: %q", p)
	}
}

func TestAttributes(t *testing.T) {
	b := &cdc.Batch{Snapshot: cdc.SnapshotInfo{ID: 77, SequenceNumber: 5}}
	m := &cdc.Message{ID: "u:5:9:c", Op: cdc.OpCreate, Headers: []cdc.Header{{Key: "bin", Value: []byte{0xff, 0}}, {Key: "none"}}}
	attrs, size, err := Attributes(m, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(attrs); got != "[{id [117 58 53 58 57 58 99] false} {op [99] false} {sequence_number [53] false} {snapshot_id [55 55] false} {bin [255 0] true}]" {
		t.Errorf("attributes %s", got)
	}
	if size != 2+6+7+2+6+1+15+6+1+11+6+2+3+6+2 {
		t.Errorf("size %d", size)
	}
	m.Headers = []cdc.Header{{Key: "AWS.x", Value: []byte("1")}}
	if _, _, err := Attributes(m, b); err == nil || !strings.Contains(err.Error(), `header "AWS.x"`) {
		t.Errorf("a reserved name: %v", err)
	}
	m.Headers = nil
	for i := range 7 {
		m.Headers = append(m.Headers, cdc.Header{Key: fmt.Sprint("h", i), Value: []byte("v")})
	}
	if _, _, err := Attributes(m, b); err == nil || !strings.Contains(err.Error(), "11 message attributes") {
		t.Errorf("too many: %v", err)
	}
}

func TestEvent(t *testing.T) {
	tbl := &cdc.TableInfo{Namespace: "shop", Name: "orders"}
	if got := Event(tbl, &cdc.Message{ID: "0b6c-11:42:1007:u"}); got != "event 0b6c-11:42:1007:u (table shop.orders, seq 42, row 1007, op u)" {
		t.Errorf("Event = %q", got)
	}
}
