package signals

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/icecdc/icecdc/snapreq"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Debezium's notification aggregates: an incremental snapshot's, and the
// one its blocking (and initial) snapshots report under.
const (
	AggregateIncremental = "Incremental Snapshot"
	AggregateBlocking    = "Initial Snapshot"
)

// Notification is Debezium's notification record value.
type Notification struct {
	ID             string            `json:"id"`
	AggregateType  string            `json:"aggregate_type"`
	Type           string            `json:"type"`
	AdditionalData map[string]string `json:"additional_data"`
	Timestamp      int64             `json:"timestamp"`
}

// Notifier writes notifications to the enabled channels: a Kafka topic
// (the sink channel) and the log.
type Notifier struct {
	// Connector is connector_name in additional_data: the topic prefix,
	// Debezium's logical name.
	Connector string
	// Log, when set, gets one line per notification (the log channel).
	Log *slog.Logger
	// Client and Topic, when set, are the sink channel: each notification
	// is produced to Topic, keyed by its id.
	Client *kgo.Client
	Topic  string
	// ConnectSchemas wraps key and value as Kafka Connect's JsonConverter
	// writes them with schemas (format debezium-connect-json).
	ConnectSchemas bool
	// Errors gets what producing met (default: Log, else nothing).
	Errors *slog.Logger
	now    func() time.Time
}

// Notice turns a pipeline's snapshot notice into Debezium's notification
// and sends it; for cdc.Pipeline.Notify.
func (n *Notifier) Notice(x snapreq.SnapshotNotice) {
	data := map[string]string{}
	switch x.Type {
	case snapreq.NoticeStarted, snapreq.NoticePaused, snapreq.NoticeResumed:
		data["data_collections"] = x.Table
	case snapreq.NoticeInProgress:
		data["data_collections"] = x.Table
		data["current_collection_in_progress"] = x.Table
		data["maximum_key"] = strconv.Itoa(x.Total)
		data["last_processed_key"] = strconv.Itoa(x.Next)
	case snapreq.NoticeTableScanCompleted:
		data["data_collections"] = x.Table
		data["scanned_collection"] = x.Table
		data["total_rows_scanned"] = strconv.Itoa(x.Total)
		data["status"] = "SUCCEEDED"
		if x.Total == 0 {
			data["status"] = "EMPTY"
		}
	case snapreq.NoticeAborted:
		data["data_collections"] = x.Table
	}
	n.send(Notification{ID: x.ID, AggregateType: aggregate(x.Kind), Type: x.Type, AdditionalData: data})
}

// Rejected notifies a signal refused: ABORTED, with the reason in
// additional_data (an icecdc addition; Debezium only logs it).
func (n *Notifier) Rejected(sig Signal, kind string, tables []string, reason string) {
	data := map[string]string{"reason": reason}
	switch {
	case len(tables) > maxListed:
		// A signal for 10,000 tables is refused in a notice of a few.
		data["data_collections"] = strings.Join(tables[:maxListed], ",")
		data["data_collections_more"] = strconv.Itoa(len(tables) - maxListed)
	case len(tables) > 0:
		data["data_collections"] = strings.Join(tables, ",")
	}
	n.send(Notification{ID: sig.ID, AggregateType: aggregate(kind), Type: snapreq.NoticeAborted, AdditionalData: data})
}

func aggregate(kind string) string {
	if kind == KindBlocking {
		return AggregateBlocking
	}
	return AggregateIncremental
}

func (n *Notifier) send(x Notification) {
	if n == nil {
		return
	}
	now := time.Now
	if n.now != nil {
		now = n.now
	}
	x.AdditionalData["connector_name"] = n.Connector
	x.Timestamp = now().UnixMilli()
	if n.Log != nil {
		level := slog.LevelInfo
		switch x.Type {
		case snapreq.NoticeAborted:
			level = slog.LevelWarn
		case snapreq.NoticeInProgress:
			level = slog.LevelDebug // one per chunk: the other steps say where a read is
		}
		n.Log.Log(context.Background(), level, "notification", "id", x.ID, "aggregate_type", x.AggregateType, "type", x.Type, "additional_data", x.AdditionalData)
	}
	if n.Client == nil {
		return
	}
	key, value := n.encode(x)
	errs := n.Errors
	if errs == nil {
		errs = n.Log
	}
	// Notifications are best effort, as Debezium's: a failed one is
	// logged and the snapshot goes on.
	n.Client.Produce(context.Background(), &kgo.Record{Topic: n.Topic, Key: key, Value: value}, func(_ *kgo.Record, err error) {
		if err != nil && errs != nil {
			errs.Warn("notification not written", "topic", n.Topic, "id", x.ID, "type", x.Type, "err", err)
		}
	})
}

// encode writes the record's key ({id}) and value, with Connect's
// schemas when asked (the names are Debezium's).
func (n *Notifier) encode(x Notification) (key, value []byte) {
	k := map[string]string{"id": x.ID}
	if !n.ConnectSchemas {
		key, _ = json.Marshal(k)
		value, _ = json.Marshal(x)
		return key, value
	}
	str := func(name string, optional bool) map[string]any {
		return map[string]any{"type": "string", "optional": optional, "field": name}
	}
	key, _ = json.Marshal(map[string]any{
		"schema": map[string]any{"type": "struct", "optional": false, "name": "io.debezium.connector.common.NotificationKey", "version": 1,
			"fields": []any{str("id", false)}},
		"payload": k,
	})
	value, _ = json.Marshal(map[string]any{
		"schema": map[string]any{"type": "struct", "optional": false, "name": "io.debezium.connector.common.Notification", "version": 1,
			"fields": []any{str("id", false), str("aggregate_type", false), str("type", false),
				map[string]any{"type": "map", "keys": map[string]any{"type": "string", "optional": false},
					"values": map[string]any{"type": "string", "optional": false}, "optional": true, "field": "additional_data"},
				map[string]any{"type": "int64", "optional": true, "field": "timestamp"}}},
		"payload": x,
	})
	return key, value
}
