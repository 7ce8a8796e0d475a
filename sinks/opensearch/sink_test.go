package opensearch

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/values"
)

var itemsSchema = iceberg.NewSchemaWithIdentifiers(1, []int{1},
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
)

// history makes batches of a table's events, flattened as the sink gets
// them, and keeps the table's rows to compare the index with.
type history struct {
	t     *testing.T
	table cdc.TableInfo
	enc   cdc.Encoder
	seq   int64
	rows  map[int64]string // id → name
	ids   map[int64]string // id → the event id of its last write
	rowID int64
}

func newHistory(t *testing.T) *history {
	u, err := debezium.NewUnwrap(&debezium.JSON{Envelope: debezium.Envelope{Pipeline: "p", Version: "test"}},
		debezium.UnwrapOptions{DeleteHandling: debezium.DeleteToTombstone})
	if err != nil {
		t.Fatal(err)
	}
	return &history{t: t, enc: u, rows: map[int64]string{}, ids: map[int64]string{}, table: cdc.TableInfo{
		Catalog: "local", Namespace: "shop", Name: "items", UUID: "u-1", Schema: itemsSchema, KeyFields: []string{"id"},
	}}
}

type change struct {
	op   cdc.Op
	id   int64
	name string
}

// commit returns the batches (of at most chunk events) of one snapshot.
func (h *history) commit(chunk int, changes ...change) []*cdc.Batch {
	h.seq++
	c := &cdc.Commit{Table: h.table, Snapshot: cdc.SnapshotInfo{ID: 100 + h.seq, SequenceNumber: h.seq, TimestampMs: 1_700_000_000_000}}
	var out []*cdc.Batch
	for start := 0; start < len(changes); start += chunk {
		b := &cdc.Batch{Table: h.table, Snapshot: c.Snapshot}
		for i := start; i < min(start+chunk, len(changes)); i++ {
			ch := changes[i]
			h.rowID++
			e := cdc.Event{Op: ch.op, RowID: h.rowID, Index: i}
			switch ch.op {
			case cdc.OpDelete:
				e.Before = values.Row{ch.id, h.rows[ch.id]}
				delete(h.rows, ch.id)
			case cdc.OpUpdate:
				e.Before = values.Row{ch.id, h.rows[ch.id]}
				fallthrough
			default:
				e.After = values.Row{ch.id, ch.name}
				h.rows[ch.id] = ch.name
			}
			k, err := h.enc.AppendKey(nil, c, &e)
			if err != nil {
				h.t.Fatal(err)
			}
			v, err := h.enc.AppendValue(nil, c, &e, 0)
			if err != nil {
				h.t.Fatal(err)
			}
			id := cdc.EventID(h.table.UUID, h.seq, e.RowID, e.Op)
			h.ids[ch.id] = id
			b.Messages = append(b.Messages, cdc.Message{ID: id, Op: e.Op, Index: i, Key: k, Value: v})
		}
		b.Checkpoint = cdc.Checkpoint{TableUUID: h.table.UUID, Seq: h.seq, Next: min(start+chunk, len(changes)), Done: start+chunk >= len(changes)}
		out = append(out, b)
	}
	return out
}

// want is the index the rows make: id → document, which names the
// event that wrote it last.
func (h *history) want() map[string]string {
	out := map[string]string{}
	for id, name := range h.rows {
		b, _ := json.Marshal(map[string]any{"id": id, "name": name, cdc.EventIDField: h.ids[id]})
		out[strings.TrimSpace(jsonString(id))] = string(b)
	}
	return out
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }

// sameIndex compares documents as JSON values.
func sameIndex(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("index holds %d documents, the table %d rows", len(got), len(want))
	}
	for id, w := range want {
		var a, b any
		if err := json.Unmarshal([]byte(got[id]), &a); err != nil {
			t.Errorf("document %s: %v (%q)", id, err, got[id])
			continue
		}
		_ = json.Unmarshal([]byte(w), &b)
		if jsonString(a) != jsonString(b) {
			t.Errorf("document %s = %s, row %s", id, got[id], w)
		}
	}
}

func newTestSink(t *testing.T, url string, edit func(*Config)) *Sink {
	t.Helper()
	cfg := Config{URLs: []string{url}, Pipeline: "p", Retry: RetryConfig{Initial: time.Millisecond, Max: 2 * time.Millisecond}}
	cfg.Batch.MaxDocs = 7
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func writeAll(t *testing.T, s *Sink, batches ...[]*cdc.Batch) {
	t.Helper()
	for _, bs := range batches {
		for _, b := range bs {
			if err := s.Write(context.Background(), b); err != nil {
				t.Fatalf("Write %s: %v", b.Checkpoint, err)
			}
		}
	}
}

// someHistory writes inserts, then updates, deletes and a key deleted and
// inserted again in one snapshot, then more updates of the same keys.
func someHistory(h *history) [][]*cdc.Batch {
	var first []change
	for id := int64(1); id <= 40; id++ {
		first = append(first, change{cdc.OpCreate, id, "a"})
	}
	second := []change{{cdc.OpDelete, 5, ""}, {cdc.OpCreate, 5, "again"}}
	for id := int64(10); id < 20; id++ {
		second = append(second, change{cdc.OpUpdate, id, "b"}, change{cdc.OpDelete, id + 10, ""})
	}
	third := []change{{cdc.OpUpdate, 10, "c"}, {cdc.OpUpdate, 10, "d"}, {cdc.OpDelete, 11, ""}, {cdc.OpCreate, 21, "back"}}
	return [][]*cdc.Batch{h.commit(16, first...), h.commit(9, second...), h.commit(2, third...)}
}

func TestWriteFollowsTheTable(t *testing.T) {
	node, url := newBulkNode(t)
	s := newTestSink(t, url, nil)
	h := newHistory(t)
	hist := someHistory(h)
	writeAll(t, s, hist...)
	sameIndex(t, node.live("items"), h.want())
	if node.requests < 10 {
		t.Errorf("%d requests: batch.max_docs 7 should cut the batches", node.requests)
	}
}

// A replay from an older checkpoint, and events arriving late after newer
// ones, change no document: the node answers 409 and the sink counts it.
func TestReplaysAndLateEventsChangeNothing(t *testing.T) {
	node, url := newBulkNode(t)
	s := newTestSink(t, url, nil)
	h := newHistory(t)
	hist := someHistory(h)
	// The last commit first, then everything from the start.
	writeAll(t, s, hist[2])
	writeAll(t, s, hist...)
	sameIndex(t, node.live("items"), h.want())
	before := maps.Clone(node.live("items"))
	writeAll(t, s, hist[1], hist[0])
	sameIndex(t, node.live("items"), before)
}

func TestRetriesRefusedItemsAndSplitsLargeRequests(t *testing.T) {
	node, url := newBulkNode(t)
	refusals := 0
	node.reject = func(_, id, _ string) (int, string) {
		if (id == "3" || id == "30") && refusals < 4 {
			refusals++
			return 429, "es_rejected_execution_exception"
		}
		return 0, ""
	}
	node.tooLarge = 600
	node.down, node.downWith = 2, 503
	retried := map[int]int{}
	s := newTestSink(t, url, func(c *Config) {
		c.Batch.MaxDocs = 100
		c.Retried = func(st int) { retried[st]++ }
	})
	h := newHistory(t)
	writeAll(t, s, someHistory(h)...)
	sameIndex(t, node.live("items"), h.want())
	if retried[429] != 4 || retried[503] == 0 {
		t.Errorf("retries by status %v: want 4 of 429 and some 503", retried)
	}
}

func TestMappingRejectionStopsNamingIndexAndDocument(t *testing.T) {
	node, url := newBulkNode(t)
	node.reject = func(_, id, _ string) (int, string) {
		if id == "17" {
			return 400, "mapper_parsing_exception"
		}
		return 0, ""
	}
	s := newTestSink(t, url, nil)
	h := newHistory(t)
	var err error
	for _, b := range someHistory(h)[0] {
		if err = s.Write(context.Background(), b); err != nil {
			break
		}
	}
	if !errors.Is(err, cdc.ErrPermanent) {
		t.Fatalf("Write: %v, want a permanent error", err)
	}
	for _, want := range []string{"index items", "document 17", "mapper_parsing_exception"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
}

func TestDeadLetterFileTakesRefusedDocuments(t *testing.T) {
	node, url := newBulkNode(t)
	node.reject = func(_, id, _ string) (int, string) {
		if id == "17" || id == "33" {
			return 400, "document_parsing_exception"
		}
		return 0, ""
	}
	dl := filepath.Join(t.TempDir(), "dead.jsonl")
	s := newTestSink(t, url, func(c *Config) { c.DeadLetter.File = dl })
	h := newHistory(t)
	writeAll(t, s, h.commit(50, func() (cs []change) {
		for id := int64(1); id <= 40; id++ {
			cs = append(cs, change{cdc.OpCreate, id, "a"})
		}
		return cs
	}()...))
	want := h.want()
	delete(want, "17")
	delete(want, "33")
	sameIndex(t, node.live("items"), want)
	raw, err := os.ReadFile(dl)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 {
		t.Fatalf("dead letters: %q", raw)
	}
	var dead struct{ Index, ID, Action, Reason, Item string }
	if err := json.Unmarshal([]byte(lines[0]), &dead); err != nil {
		t.Fatal(err)
	}
	if dead.Index != "items" || dead.ID != "17" || dead.Action != "index" || !strings.Contains(dead.Reason, "document_parsing_exception") || !strings.Contains(dead.Item, `"name":"a"`) {
		t.Errorf("dead letter %+v", dead)
	}
}

func TestRequestRefusalsArePermanent(t *testing.T) {
	_, url := newBulkNode(t)
	s := newTestSink(t, url, nil)
	h := newHistory(t)
	b := h.commit(10, change{cdc.OpCreate, 1, "a"})[0]
	b.Messages[0].Key = []byte(`{"id":null}`)
	err := s.Write(context.Background(), b)
	if !errors.Is(err, cdc.ErrPermanent) || !strings.Contains(err.Error(), "index items: event u-1:") {
		t.Fatalf("Write with a null key: %v", err)
	}
}

func TestRefreshPolicyIsSent(t *testing.T) {
	node, url := newBulkNode(t)
	s := newTestSink(t, url, func(c *Config) { c.Refresh = RefreshWaitFor })
	h := newHistory(t)
	writeAll(t, s, h.commit(10, change{cdc.OpCreate, 1, "a"}))
	if len(node.refresh) != 1 || node.refresh[0] != "wait_for" {
		t.Fatalf("refresh parameters sent: %q", node.refresh)
	}
}

// TestCreatesIndexWithDoubles: a missing index is created once, before
// its first write, mapping fractions as double; an index that exists is
// written as it is; a name the node refuses stops the table naming the
// index; a user who may not create indexes still writes; create_index
// false creates nothing.
func TestCreatesIndexWithDoubles(t *testing.T) {
	node, url := newBulkNode(t)
	s := newTestSink(t, url, nil)
	h := newHistory(t)
	writeAll(t, s, someHistory(h)...)
	sameIndex(t, node.live("items"), h.want())
	if node.creates != 1 || !strings.Contains(node.mappings["items"], `"match_mapping_type":"double","mapping":{"type":"double"}`) {
		t.Fatalf("%d creations, mapping %q", node.creates, node.mappings["items"])
	}

	// A second sink (a restart) finds the index and writes.
	s2 := newTestSink(t, url, nil)
	writeAll(t, s2, h.commit(10, change{cdc.OpCreate, 99, "z"}))
	sameIndex(t, node.live("items"), h.want())

	for _, tc := range []struct {
		status    int
		typ, want string
		permanent bool
	}{
		{400, "invalid_index_name_exception", "index items: create it: opensearch http://127.0.0.1", true},
		{401, "security_exception", "401 security_exception", true},
		{503, "cluster_block_exception", "503 cluster_block_exception", false},
		{403, "security_exception", "", false},
	} {
		node, url := newBulkNode(t)
		node.create = func(string) (int, string) { return tc.status, tc.typ }
		s := newTestSink(t, url, nil)
		h := newHistory(t)
		err := s.Write(context.Background(), h.commit(10, change{cdc.OpCreate, 1, "a"})[0])
		if tc.want == "" {
			if err != nil || len(node.live("items")) != 1 {
				t.Errorf("%d on creation: %v, %d documents; want the write done", tc.status, err, len(node.live("items")))
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, cdc.ErrPermanent) != tc.permanent || len(node.live("items")) != 0 {
			t.Errorf("%d on creation: %v (permanent %v), %d documents", tc.status, err, errors.Is(err, cdc.ErrPermanent), len(node.live("items")))
		}
	}

	node, url = newBulkNode(t)
	s = newTestSink(t, url, func(c *Config) { no := false; c.CreateIndex = &no })
	writeAll(t, s, newHistory(t).commit(10, change{cdc.OpCreate, 1, "a"}))
	if node.creates != 0 || len(node.live("items")) != 1 {
		t.Fatalf("create_index false: %d creations, %d documents", node.creates, len(node.live("items")))
	}
}
