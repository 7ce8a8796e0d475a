package webhook

import (
	"context"
	"strconv"
)

// Ping POSTs Debezium's heartbeat as one JSON object, signed like every
// request: {"serverName": …, "ts_ms": …}, with the webhook-id
// heartbeat:<serverName>:<ts_ms>. A receiver tells it from events by its
// body, an object where events come in an array. It makes one attempt and
// is not retried: the next heartbeat replaces a lost one. It waits for a
// Write in progress, so it never splits a batch's requests.
func (s *Sink) Ping(ctx context.Context, serverName string, tsMs int64) error {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.turn }()
	if s.closed {
		return errClosed
	}
	body := append([]byte(`{"serverName":`), appendJSONString(nil, serverName)...)
	body = append(body, `,"ts_ms":`...)
	body = strconv.AppendInt(body, tsMs, 10)
	body = append(body, '}')
	// A non-nil ce: the body is plain JSON, never a CloudEvents batch.
	return s.post(ctx, request{id: "heartbeat:" + serverName + ":" + strconv.FormatInt(tsMs, 10), body: body, ce: [][2]string{}})
}
