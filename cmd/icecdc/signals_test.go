package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/health"
	"github.com/icecdc/icecdc/rowfilter"
	"github.com/icecdc/icecdc/signals"
	"github.com/icecdc/icecdc/snapreq"
	"github.com/icecdc/icecdc/state"
)

// TestConfigSignals accepts Debezium's signal and notification settings
// where they apply, with Debezium's defaults, and refuses each setting
// that cannot apply with one line naming it.
func TestConfigSignals(t *testing.T) {
	const kafkaSink = "name: p\ntables: [{name: a.b}]\nsink: {type: kafka, kafka: {brokers: [k:9092]}}\n"
	const fileSink = "name: p\ntables: [{name: a.b}]\nsink: {type: file, file: {path: /tmp/x}}\n"
	c, err := parseConfig([]byte(kafkaSink+"debezium:\n  topic.prefix: shop\n  signal.enabled.channels: kafka\n  notification.enabled.channels: sink,log\n  notification.sink.topic.name: shop.notes\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	sc := c.Debezium.Config
	if !sc.Signals() || !sc.NotifySink() || !sc.NotifyLog() || sc.Topic(c.Debezium.prefix()) != "shop-signal" || sc.GroupID() != "kafka-signal" ||
		strings.Join(sc.Brokers(c.Sink.Kafka.Brokers), ",") != "k:9092" {
		t.Errorf("defaults: %+v", sc)
	}
	if _, err := parseConfig([]byte(fileSink+"debezium:\n  signal.enabled.channels: kafka\n  signal.kafka.bootstrap.servers: a:1,b:2\n  notification.enabled.channels: log\n"), env(nil)); err != nil {
		t.Errorf("signals with a file sink and its own brokers: %v", err)
	}
	for _, tc := range []struct{ sink, debezium, want string }{
		{kafkaSink, "signal.enabled.channels: source", `debezium.signal.enabled.channels: "source": icecdc reads signals from a Kafka topic only`},
		{kafkaSink, "signal.data.collection: db.signals", "debezium.signal.data.collection: icecdc has no signal table"},
		{kafkaSink, "signal.kafka.topic: s", "debezium.signal.kafka.topic: set, but signal.enabled.channels does not list kafka"},
		{fileSink, "signal.enabled.channels: kafka", "debezium.signal.kafka.bootstrap.servers: required: the sink is not Kafka"},
		{fileSink, "notification.enabled.channels: sink\n  notification.sink.topic.name: n", "debezium.notification.enabled.channels: sink writes notifications to a Kafka topic, and the sink is not Kafka"},
		{kafkaSink, "notification.enabled.channels: sink", "debezium.notification.sink.topic.name: required with notification.enabled.channels: sink"},
		{kafkaSink, "notification.enabled.channels: jmx", `debezium.notification.enabled.channels: "jmx": want sink or log`},
		{kafkaSink, "notification.sink.topic.name: n", "debezium.notification.sink.topic.name: set, but notification.enabled.channels does not list sink"},
	} {
		_, err := parseConfig([]byte(tc.sink+"debezium:\n  "+tc.debezium+"\n"), env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line saying %s", tc.debezium, err, tc.want)
		}
	}
}

// TestMemberTargets: a cluster member's signals reach the pipelines of
// the tables it owns; a table it never owned, or whose pipeline stopped
// (the table moved to another member), is another member's.
func TestMemberTargets(t *testing.T) {
	m := &memberTargets{byTable: map[string]*cdc.Pipeline{}}
	if _, err := m.Snapshot(t.Context(), "shop.orders", snapreq.SnapshotRequest{ID: "1"}); !errors.Is(err, signals.ErrNotOwned) {
		t.Fatalf("a table the member never owned: %v", err)
	}
	store, err := state.Open(filepath.Join(t.TempDir(), "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	src := cdctest.New(cdctest.Info("shop", "orders"))
	first := src.Append(cdctest.Inserts(1, 10)...)
	p := &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}}},
		Encoder: &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "p"}}, Sink: &cdctest.Sink{}, Store: store, Poll: time.Millisecond,
		Ready: make(chan struct{}), RowFilters: rowfilter.Language{}}
	m.set("shop.orders", p)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	<-p.Ready
	hang, stop := context.WithTimeout(t.Context(), 30*time.Second) // a hang guard only
	defer stop()
	// Ready is the pipeline serving, not its first commit delivered: until
	// that commit is, the table refuses with ErrNothingToRead, so ask again.
	si, err := m.Snapshot(hang, "shop.orders", snapreq.SnapshotRequest{ID: "2", Kind: "incremental"})
	for errors.Is(err, snapreq.ErrNothingToRead) && hang.Err() == nil {
		time.Sleep(5 * time.Millisecond)
		si, err = m.Snapshot(hang, "shop.orders", snapreq.SnapshotRequest{ID: "2", Kind: "incremental"})
	}
	if err != nil || si.ID != first.ID {
		t.Fatalf("the owned table's snapshot: %+v, %v", si, err)
	}
	if err := m.ControlSnapshot("shop.orders", snapreq.PauseSnapshot); err != nil {
		t.Fatalf("pause the owned table's read: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := m.Snapshot(t.Context(), "shop.orders", snapreq.SnapshotRequest{ID: "3"}); !errors.Is(err, signals.ErrNotOwned) {
		t.Fatalf("a table whose pipeline stopped: %v", err)
	}
	if err := m.ControlSnapshot("shop.orders", snapreq.ResumeSnapshot); !errors.Is(err, signals.ErrNotOwned) {
		t.Fatalf("a control for a table whose pipeline stopped: %v", err)
	}
	// A table the member follows that has nothing to read (no commit
	// yet) refuses the signal itself: it is not another member's, so the
	// signal is refused rather than left for an owner that never takes it.
	empty := cdctest.New(cdctest.Info("shop", "empty"))
	pe := &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.empty", Source: empty, Start: cdc.Start{Kind: cdc.StartEarliest}}},
		Encoder: &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "p"}}, Sink: &cdctest.Sink{}, Store: store, Poll: time.Millisecond,
		Ready: make(chan struct{}), RowFilters: rowfilter.Language{}}
	m.set("shop.empty", pe)
	ectx, ecancel := context.WithCancel(t.Context())
	defer ecancel()
	go func() { done <- pe.Run(ectx) }()
	<-pe.Ready
	_, err = m.Snapshot(hang, "shop.empty", snapreq.SnapshotRequest{ID: "4", Kind: "incremental"})
	if !errors.Is(err, snapreq.ErrNothingToRead) || errors.Is(err, signals.ErrNotOwned) || !strings.Contains(err.Error(), "no commit of the table has been delivered yet") {
		t.Fatalf("a followed table with nothing to read: %v, want its refusal, not another member's", err)
	}
	ecancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestNotifierSinkChannel: with notification.enabled.channels: sink the
// daemon creates the notification topic on the Kafka sink's brokers and
// writes Debezium's notification records there, with Connect's schemas
// under debezium-connect-json.
func TestNotifierSinkChannel(t *testing.T) {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	raw := fmt.Sprintf("name: p\ntables: [{name: a.b}]\nsink: {type: kafka, kafka: {brokers: [%q]}}\nformat: debezium-connect-json\n"+
		"debezium:\n  topic.prefix: shop\n  notification.enabled.channels: sink\n  notification.sink.topic.name: shop.notes\n", kf.ListenAddrs()[0])
	cfg, err := parseConfig([]byte(raw), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	n, closeN, err := newNotifier(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil || n == nil {
		t.Fatalf("newNotifier: %v, %v", n, err)
	}
	n.Notice(snapreq.SnapshotNotice{Table: "a.b", ID: "s-1", Kind: "blocking", Type: snapreq.NoticeTableScanCompleted, Total: 7})
	closeN()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...), kgo.ConsumeTopics("shop.notes"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	hang, stop := context.WithTimeout(t.Context(), 30*time.Second) // a hang guard only
	defer stop()
	fs := cl.PollFetches(hang)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	recs := fs.Records()
	if len(recs) != 1 {
		t.Fatalf("%d records on shop.notes, want 1", len(recs))
	}
	var key struct {
		Schema  struct{ Name string }
		Payload struct{ ID string }
	}
	var value struct {
		Schema  struct{ Name string }
		Payload signals.Notification
	}
	if err := json.Unmarshal(recs[0].Key, &key); err != nil || key.Schema.Name != "io.debezium.connector.common.NotificationKey" || key.Payload.ID != "s-1" {
		t.Errorf("key %s (%v)", recs[0].Key, err)
	}
	if err := json.Unmarshal(recs[0].Value, &value); err != nil || value.Schema.Name != "io.debezium.connector.common.Notification" {
		t.Fatalf("value %s (%v)", recs[0].Value, err)
	}
	p := value.Payload
	if p.ID != "s-1" || p.AggregateType != "Initial Snapshot" || p.Type != "TABLE_SCAN_COMPLETED" || p.Timestamp == 0 ||
		p.AdditionalData["scanned_collection"] != "a.b" || p.AdditionalData["total_rows_scanned"] != "7" || p.AdditionalData["connector_name"] != "shop" {
		t.Errorf("notification %+v", p)
	}
}

// TestReadyzSaysPaused: /readyz stays ready while a table's on-demand
// snapshot is paused (a pause is asked for), and says which tables are
// paused, by which signal, at most 10 of them and how many more; a
// resumed table is no longer named. On main a paused table was
// invisible there.
func TestReadyzSaysPaused(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	listen := freeAddr(t)
	ready := make(chan struct{})
	close(ready)
	health := &health.Health{Log: log}
	srv, err := serveHTTP(HTTPConfig{Listen: listen}, log, endpoints{reg: prometheus.NewRegistry(), ready: ready, health: health, status: func() (any, error) { return "ok", nil }, snapshot: http.NotFoundHandler()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	health.Track("shop.orders")
	health.Paused("shop.orders", "s-7")
	if code, body := probe(t, listen, "/readyz"); code != http.StatusOK || !strings.HasPrefix(body, "ready\n") ||
		!strings.Contains(body, `shop.orders: on-demand snapshot paused (signal "s-7")`) {
		t.Errorf("/readyz with a paused table: %d %q", code, body)
	}
	for i := range 30 {
		health.Paused(fmt.Sprintf("t.%02d", i), "s")
	}
	if code, body := probe(t, listen, "/readyz"); code != http.StatusOK || strings.Count(body, "\n") != 12 || !strings.Contains(body, "and 21 more tables") {
		t.Errorf("/readyz with 31 paused tables: %d %q", code, body)
	}
	for i := range 30 {
		health.Paused(fmt.Sprintf("t.%02d", i), "")
	}
	health.Paused("shop.orders", "")
	if code, body := probe(t, listen, "/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz once resumed: %d %q", code, body)
	}
}
