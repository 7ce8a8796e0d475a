package signals_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/rowfilter"
	"github.com/icecdc/icecdc/signals"
	"github.com/icecdc/icecdc/snapreq"
	"github.com/icecdc/icecdc/state"
)

// syncBuffer is a log both the test and the channel use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// member is a pipeline over cdctest tables with its signal channel and
// notifier on a kfake cluster.
type member struct {
	p     *cdc.Pipeline
	sinks map[string]*cdctest.Sink
	srcs  map[string]*cdctest.Source
	log   *syncBuffer
	stop  func()
}

// owned is a member's Target in a cluster: it acts only on its tables.
type owned struct{ p *cdc.Pipeline }

func (o owned) own(table string) bool {
	for _, s := range o.p.Tables {
		if s.Name == table {
			return true
		}
	}
	return false
}

func (o owned) Snapshot(ctx context.Context, table string, req snapreq.SnapshotRequest) (cdc.SnapshotInfo, error) {
	if !o.own(table) {
		return cdc.SnapshotInfo{}, signals.ErrNotOwned
	}
	return o.p.Snapshot(ctx, table, req)
}

func (o owned) ControlSnapshot(table string, c snapreq.SnapshotControl) error {
	if !o.own(table) {
		return signals.ErrNotOwned
	}
	return o.p.ControlSnapshot(table, c)
}

// startMember follows tables (each a one-column table of rows 1..100,
// already delivered) and reads signals naming all of names.
func startMember(t *testing.T, brokers []string, group string, names []string, tables ...string) *member {
	return startMemberWith(t, brokers, group, names, nil, tables...)
}

// startMemberWith is startMember with prep called on each source before
// the pipeline starts.
func startMemberWith(t *testing.T, brokers []string, group string, names []string, prep func(*cdctest.Source), tables ...string) *member {
	t.Helper()
	store, err := state.Open(filepath.Join(t.TempDir(), "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	m := &member{sinks: map[string]*cdctest.Sink{}, srcs: map[string]*cdctest.Source{}, log: &syncBuffer{}}
	sink := &cdctest.Sink{}
	var specs []cdc.TableSpec
	for _, name := range tables {
		ns, tn, _ := strings.Cut(name, ".")
		info := cdctest.Info(ns, tn)
		info.UUID = fmt.Sprintf("00000000-0000-4000-8000-%012d", len(specs)+1)
		if name == "shop.items" {
			info.UUID = "00000000-0000-4000-8000-0000000000ff"
		}
		src := cdctest.New(info)
		src.Append(cdctest.Inserts(1, 100)...)
		if prep != nil {
			prep(src)
		}
		m.srcs[name], m.sinks[name] = src, sink
		specs = append(specs, cdc.TableSpec{Name: name, Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}})
	}
	log := slog.New(slog.NewJSONHandler(io.MultiWriter(m.log), nil))
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	n := &signals.Notifier{Connector: "icecdc", Log: log, Client: cl, Topic: "notes"}
	m.p = &cdc.Pipeline{Name: "p", Tables: specs, Encoder: &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "p"}}, Sink: sink, Store: store,
		Poll: time.Millisecond, ChunkSize: 10, RetryInitial: time.Millisecond, RetryMax: time.Millisecond,
		Notify: n.Notice, Ready: make(chan struct{}), Log: log, RowFilters: rowfilter.Language{}}
	ch := &signals.Channel{Opts: []kgo.Opt{kgo.SeedBrokers(brokers...)}, Topic: "icecdc-signal", Group: group, Key: "icecdc",
		Tables: names, Target: owned{m.p}, Notify: n, Log: log}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := m.p.Run(ctx); err != nil {
			t.Errorf("pipeline: %v", err)
		}
	}()
	<-m.p.Ready
	go func() {
		defer wg.Done()
		if err := ch.Run(ctx); err != nil {
			t.Errorf("signal channel: %v", err)
		}
	}()
	m.stop = func() {
		cancel()
		wg.Wait()
		cl.Flush(context.Background())
		cl.Close()
	}
	t.Cleanup(func() {
		m.stop()
		if t.Failed() {
			t.Logf("member log:\n%s", m.log.String())
		}
	})
	return m
}

// notes reads the notification topic from its start.
func notes(t *testing.T, brokers []string) []signals.Notification {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("notes"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), "notes")
	if err != nil {
		t.Fatal(err)
	}
	end := int64(0)
	ends.Each(func(o kadm.ListedOffset) { end = o.Offset })
	var out []signals.Notification
	for int64(len(out)) < end {
		fs := cl.PollFetches(t.Context())
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			var n signals.Notification
			if err := json.Unmarshal(r.Value, &n); err != nil {
				t.Fatalf("notification %s: %v", r.Value, err)
			}
			var k struct{ ID string }
			if err := json.Unmarshal(r.Key, &k); err != nil || k.ID != n.ID {
				t.Fatalf("notification key %s, value id %q", r.Key, n.ID)
			}
			out = append(out, n)
		})
	}
	return out
}

// waitNote waits until a notification of id with type typ is on the
// topic and returns them all; the deadline is a hang guard only.
func waitNote(t *testing.T, brokers []string, id, typ string) []signals.Notification {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		all := notes(t, brokers)
		for _, n := range all {
			if n.ID == id && n.Type == typ {
				return all
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s notification for %s; got %+v", typ, id, all)
		}
	}
}

func produce(t *testing.T, brokers []string, key string, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range values {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "icecdc-signal", Key: []byte(key), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func rCount(s *cdctest.Sink, uuid string) int {
	n := 0
	for _, id := range s.IDs() {
		if strings.HasPrefix(id, uuid) && strings.HasSuffix(id, ":r") {
			n++
		}
	}
	return n
}

// signalBroker starts a kfake broker with the signal and notification
// topics, closed when the test ends, and returns its addresses.
func signalBroker(t *testing.T, opts ...kfake.Opt) []string {
	t.Helper()
	kf, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(1, "icecdc-signal", "notes")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	return kf.ListenAddrs()
}

// waitCommitted waits up to 30 s for the kafka-signal group's committed
// offset to reach want; what says what that offset means.
func waitCommitted(t *testing.T, brokers []string, want int64, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); committed(t, brokers, "kafka-signal") != want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the signal group's committed offset is %d, want %d (%s)", committed(t, brokers, "kafka-signal"), want, what)
		}
	}
}

func committed(t *testing.T, brokers []string, group string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(t.Context(), group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup("icecdc-signal", 0)
	if !ok {
		return -1
	}
	return o.At
}

// TestSignals sends Debezium signal records to the topic on a kfake
// broker: bad ones (not JSON, an unknown table, a filter on an unknown
// column, a filter icecdc does not take, an unknown type, no id) are each
// notified ABORTED with the reason and logged, and change nothing; one
// keyed for another connector is passed over; a good execute-snapshot
// reads the matched table with its filter and is notified STARTED to
// COMPLETED. The group's offset ends past every record.
func TestSignals(t *testing.T) {
	brokers := signalBroker(t)
	names := []string{"shop.orders", "shop.items"}
	m := startMember(t, brokers, "kafka-signal", names, names...)
	uuid := m.srcs["shop.orders"].Table.UUID

	bad := map[string]string{
		"not-json":       `{"id": "not-json", "type": `,
		"unknown-table":  `{"id": "unknown-table", "type": "execute-snapshot", "data": {"data-collections": ["shop.nope"]}}`,
		"unknown-column": `{"id": "unknown-column", "type": "execute-snapshot", "data": {"data-collections": ["shop.orders"], "additional-conditions": [{"data-collection": "shop.orders", "filter": "price > 3"}]}}`,
		"like":           `{"id": "like", "type": "execute-snapshot", "data": {"data-collections": ["shop.orders"], "additional-conditions": [{"data-collection": "shop.orders", "filter": "id LIKE '1%'"}]}}`,
		"unknown-type":   `{"id": "unknown-type", "type": "log", "data": {"message": "hello"}}`,
		"no-id":          `{"type": "execute-snapshot", "data": {"data-collections": ["shop.orders"]}}`,
	}
	why := map[string]string{
		"not-json": "not a JSON object", "unknown-table": `"shop.nope" matches no table`, "unknown-column": `unknown column "price"`,
		"like": "LIKE", "unknown-type": "unknown type", "no-id": "no id",
	}
	var values []string
	order := []string{"not-json", "unknown-table", "unknown-column", "like", "unknown-type", "no-id"}
	for _, k := range order {
		values = append(values, bad[k])
	}
	produce(t, brokers, "another-connector", `{"id": "foreign", "type": "execute-snapshot", "data": {"data-collections": ["shop.orders"]}}`)
	produce(t, brokers, "icecdc", values...)
	produce(t, brokers, "icecdc", `{"id": "good", "type": "execute-snapshot", "data": {"type": "INCREMENTAL", "data-collections": ["shop\\.ord.*"],
		"additional-conditions": [{"data-collection": "SHOP.ORDERS", "filter": "id <= 25"}]}}`)
	all := waitNote(t, brokers, "good", snapreq.NoticeCompleted)

	ids := map[string]string{"not-json": "icecdc-signal@1", "no-id": "icecdc-signal@6"}
	for _, k := range order {
		id := k
		if ids[k] != "" {
			id = ids[k]
		}
		var got []signals.Notification
		for _, n := range all {
			if n.ID == id {
				got = append(got, n)
			}
		}
		if len(got) != 1 || got[0].Type != snapreq.NoticeAborted || !strings.Contains(got[0].AdditionalData["reason"], why[k]) ||
			got[0].AggregateType != signals.AggregateIncremental || got[0].AdditionalData["connector_name"] != "icecdc" {
			t.Errorf("signal %s: notifications %+v; want one ABORTED saying %q", k, got, why[k])
		}
		if !strings.Contains(strings.ReplaceAll(m.log.String(), `\"`, `"`), why[k]) {
			t.Errorf("signal %s: no log line saying %q", k, why[k])
		}
	}
	var good []string
	for _, n := range all {
		if n.ID == "foreign" {
			t.Errorf("a signal for another connector was acted on: %+v", n)
		}
		if n.ID == "good" && n.Type != snapreq.NoticeInProgress {
			good = append(good, n.Type)
		}
		if n.ID == "good" && n.Type == snapreq.NoticeTableScanCompleted &&
			(n.AdditionalData["scanned_collection"] != "shop.orders" || n.AdditionalData["total_rows_scanned"] != "100" || n.AdditionalData["status"] != "SUCCEEDED") {
			t.Errorf("TABLE_SCAN_COMPLETED: %+v", n.AdditionalData)
		}
	}
	if strings.Join(good, ",") != "STARTED,TABLE_SCAN_COMPLETED,COMPLETED" {
		t.Errorf("the good signal's notifications: %v", good)
	}
	if n := rCount(m.sinks["shop.orders"], uuid); n != 25 {
		t.Errorf("the filtered read emitted %d rows, want 25", n)
	}
	if n := rCount(m.sinks["shop.items"], m.srcs["shop.items"].Table.UUID); n != 0 {
		t.Errorf("shop.items was read (%d rows); the signal matched shop.orders only", n)
	}
	waitCommitted(t, brokers, 8, "past every record")
}

// TestSignalsCluster: two members, each following one table and reading
// every signal under a group of its own, act only on the tables they own:
// one signal naming both tables reads each once, by its owner.
func TestSignalsCluster(t *testing.T) {
	brokers := signalBroker(t)
	names := []string{"shop.orders", "shop.items"}
	a := startMember(t, brokers, "kafka-signal.a", names, "shop.orders")
	b := startMember(t, brokers, "kafka-signal.b", names, "shop.items")
	produce(t, brokers, "icecdc", `{"id": "both", "type": "execute-snapshot", "data": {"data-collections": ["shop\\..*"]}}`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var done []string
		for _, n := range notes(t, brokers) {
			if n.ID == "both" && n.Type == snapreq.NoticeTableScanCompleted {
				done = append(done, n.AdditionalData["scanned_collection"])
			}
		}
		if len(done) == 2 {
			if done[0] == done[1] {
				t.Fatalf("scanned %v", done)
			}
			break
		}
		if len(done) > 2 || time.Now().After(deadline) {
			t.Fatalf("tables scanned: %v; want each of %v once", done, names)
		}
	}
	if n := rCount(a.sinks["shop.orders"], a.srcs["shop.orders"].Table.UUID); n != 100 {
		t.Errorf("member a read %d rows of shop.orders, want 100", n)
	}
	if n := rCount(b.sinks["shop.items"], b.srcs["shop.items"].Table.UUID); n != 100 {
		t.Errorf("member b read %d rows of shop.items, want 100", n)
	}
}

// TestSignalOffsetWaitsForDurable: the signal's offset is not committed
// while its table cannot start the read (its catalog fails), so that a
// restart would read it again; once the read's start is checkpointed, it
// is.
func TestSignalOffsetWaitsForDurable(t *testing.T) {
	brokers := signalBroker(t)
	var failing atomic.Bool
	var failures atomic.Int64
	m := startMemberWith(t, brokers, "kafka-signal", []string{"shop.orders"}, func(s *cdctest.Source) {
		s.OnRefresh = func() error {
			if failing.Load() {
				failures.Add(1)
				return errors.New("catalog down")
			}
			return nil
		}
	}, "shop.orders")
	uuid := m.srcs["shop.orders"].Table.UUID
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if strings.Contains(m.log.String(), "reading signals") && strings.Contains(m.log.String(), "commit delivered") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the member never caught up")
		}
	}
	failing.Store(true)
	produce(t, brokers, "icecdc", `{"id": "s", "type": "execute-snapshot", "data": {"data-collections": ["shop.orders"]}}`)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(m.log.String(), `"msg":"signal","id":"s"`) || failures.Load() < 20; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the signal was never read, or the table never retried")
		}
	}
	if got := committed(t, brokers, "kafka-signal"); got > 0 {
		t.Fatalf("the offset %d was committed while the read could not start", got)
	}
	if n := rCount(m.sinks["shop.orders"], uuid); n != 0 {
		t.Fatalf("%d rows read while failing", n)
	}
	failing.Store(false)
	waitNote(t, brokers, "s", snapreq.NoticeCompleted)
	waitCommitted(t, brokers, 1, "past the signal once its read started")
}
