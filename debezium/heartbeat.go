package debezium

import (
	"errors"
	"strconv"
)

// HeartbeatEncoder writes Debezium's heartbeat record, which a connector
// writes to __debezium-heartbeat.<topic.prefix> every
// heartbeat.interval.ms so that consumers and lag monitors see a live
// pipeline on tables that do not change: key {serverName}, value {ts_ms}.
// An error (debezium-avro's registry refusing or away) leaves dst as it
// was; the next heartbeat tries again.
type HeartbeatEncoder interface {
	AppendHeartbeatKey(dst []byte, serverName string) ([]byte, error)
	AppendHeartbeatValue(dst []byte, tsMs int64) ([]byte, error)
}

var (
	_ HeartbeatEncoder = (*JSON)(nil)
	_ HeartbeatEncoder = (*ConnectJSON)(nil)
	_ HeartbeatEncoder = (*Unwrap)(nil)
	_ HeartbeatEncoder = (*Avro)(nil)
)

// Debezium's heartbeat schema names (io.debezium.schema.SchemaFactory).
const (
	heartbeatKeySchema   = `{"type":"struct","fields":[{"type":"string","optional":false,"field":"serverName"}],"optional":false,"name":"io.debezium.connector.common.ServerNameKey","version":1}`
	heartbeatValueSchema = `{"type":"struct","fields":[{"type":"int64","optional":false,"field":"ts_ms"}],"optional":false,"name":"io.debezium.connector.common.Heartbeat","version":1}`
)

func appendHeartbeatKey(dst []byte, serverName string) []byte {
	dst = append(dst, `{"serverName":`...)
	dst = appendJSONString(dst, serverName)
	return append(dst, '}')
}

func appendHeartbeatValue(dst []byte, tsMs int64) []byte {
	dst = append(dst, `{"ts_ms":`...)
	dst = strconv.AppendInt(dst, tsMs, 10)
	return append(dst, '}')
}

// AppendHeartbeatKey appends {"serverName": serverName}.
func (f *JSON) AppendHeartbeatKey(dst []byte, serverName string) ([]byte, error) {
	return appendHeartbeatKey(dst, serverName), nil
}

// AppendHeartbeatValue appends {"ts_ms": tsMs}.
func (f *JSON) AppendHeartbeatValue(dst []byte, tsMs int64) ([]byte, error) {
	return appendHeartbeatValue(dst, tsMs), nil
}

// AppendHeartbeatKey appends the key with Debezium's ServerNameKey schema.
func (f *ConnectJSON) AppendHeartbeatKey(dst []byte, serverName string) ([]byte, error) {
	dst = append(dst, `{"schema":`+heartbeatKeySchema+`,"payload":`...)
	return append(appendHeartbeatKey(dst, serverName), '}'), nil
}

// AppendHeartbeatValue appends the value with Debezium's Heartbeat schema.
func (f *ConnectJSON) AppendHeartbeatValue(dst []byte, tsMs int64) ([]byte, error) {
	dst = append(dst, `{"schema":`+heartbeatValueSchema+`,"payload":`...)
	return append(appendHeartbeatValue(dst, tsMs), '}'), nil
}

// AppendHeartbeatKey passes the format's heartbeat through: the SMT
// leaves records that are not envelopes alone.
func (u *Unwrap) AppendHeartbeatKey(dst []byte, serverName string) ([]byte, error) {
	return u.inner.AppendHeartbeatKey(dst, serverName)
}

// AppendHeartbeatValue passes the format's heartbeat through.
func (u *Unwrap) AppendHeartbeatValue(dst []byte, tsMs int64) ([]byte, error) {
	return u.inner.AppendHeartbeatValue(dst, tsMs)
}

// debezium-avro's heartbeats are what AvroConverter writes of the
// Connect heartbeat records: the Connect format's record transcoded, its
// schemas registered under the heartbeat topic's subjects (registered
// once, then answered from the cache).

// AppendHeartbeatKey appends the heartbeat key in the wire format.
func (f *Avro) AppendHeartbeatKey(dst []byte, serverName string) ([]byte, error) {
	msg, _ := f.conn.AppendHeartbeatKey(nil, serverName)
	return f.appendHeartbeat(dst, msg, 'h', true, "heartbeat key")
}

// AppendHeartbeatValue appends the heartbeat value in the wire format.
func (f *Avro) AppendHeartbeatValue(dst []byte, tsMs int64) ([]byte, error) {
	msg, _ := f.conn.AppendHeartbeatValue(nil, tsMs)
	return f.appendHeartbeat(dst, msg, 'H', false, "heartbeat record")
}

func (f *Avro) appendHeartbeat(dst, msg []byte, role byte, isKey bool, what string) ([]byte, error) {
	if f.o.HeartbeatTopic == "" {
		return dst, errors.New("debezium-avro: " + what + ": no heartbeat topic set")
	}
	topic := func() (string, error) { return f.o.HeartbeatTopic, nil }
	return f.transcode(dst, msg, role, isKey, topic, what)
}
