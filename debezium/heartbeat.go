package debezium

import "strconv"

// HeartbeatEncoder writes Debezium's heartbeat record, which a connector
// writes to __debezium-heartbeat.<topic.prefix> every
// heartbeat.interval.ms so that consumers and lag monitors see a live
// pipeline on tables that do not change: key {serverName}, value {ts_ms}.
type HeartbeatEncoder interface {
	AppendHeartbeatKey(dst []byte, serverName string) []byte
	AppendHeartbeatValue(dst []byte, tsMs int64) []byte
}

var (
	_ HeartbeatEncoder = (*JSON)(nil)
	_ HeartbeatEncoder = (*ConnectJSON)(nil)
	_ HeartbeatEncoder = (*Unwrap)(nil)
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
func (f *JSON) AppendHeartbeatKey(dst []byte, serverName string) []byte {
	return appendHeartbeatKey(dst, serverName)
}

// AppendHeartbeatValue appends {"ts_ms": tsMs}.
func (f *JSON) AppendHeartbeatValue(dst []byte, tsMs int64) []byte {
	return appendHeartbeatValue(dst, tsMs)
}

// AppendHeartbeatKey appends the key with Debezium's ServerNameKey schema.
func (f *ConnectJSON) AppendHeartbeatKey(dst []byte, serverName string) []byte {
	dst = append(dst, `{"schema":`+heartbeatKeySchema+`,"payload":`...)
	return append(appendHeartbeatKey(dst, serverName), '}')
}

// AppendHeartbeatValue appends the value with Debezium's Heartbeat schema.
func (f *ConnectJSON) AppendHeartbeatValue(dst []byte, tsMs int64) []byte {
	dst = append(dst, `{"schema":`+heartbeatValueSchema+`,"payload":`...)
	return append(appendHeartbeatValue(dst, tsMs), '}')
}

// AppendHeartbeatKey passes the format's heartbeat through: the SMT
// leaves records that are not envelopes alone.
func (u *Unwrap) AppendHeartbeatKey(dst []byte, serverName string) []byte {
	return u.inner.AppendHeartbeatKey(dst, serverName)
}

// AppendHeartbeatValue passes the format's heartbeat through.
func (u *Unwrap) AppendHeartbeatValue(dst []byte, tsMs int64) []byte {
	return u.inner.AppendHeartbeatValue(dst, tsMs)
}
