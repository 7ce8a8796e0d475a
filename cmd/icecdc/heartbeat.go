package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/sinks/kafka"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// defaultHeartbeatTopicsPrefix is Debezium's heartbeat.topics.prefix.
const defaultHeartbeatTopicsPrefix = "__debezium-heartbeat"

// heartbeatTopic is Debezium's <heartbeat.topics.prefix>.<topic.prefix>.
func (d DebeziumConfig) heartbeatTopic() string {
	p := d.HeartbeatTopicsPrefix
	if p == "" {
		p = defaultHeartbeatTopicsPrefix
	}
	return p + "." + d.prefix()
}

func (c *Config) checkHeartbeat() []error {
	ms := c.Debezium.HeartbeatIntervalMs
	bad := func(format string, a ...any) []error {
		return []error{fmt.Errorf("config: debezium.heartbeat.interval.ms: "+format, a...)}
	}
	switch {
	case ms < 0:
		return bad("%d: must not be negative (0: no heartbeats)", ms)
	case ms == 0:
		return nil
	case ms < 10:
		return bad("%d is too short (minimum 10)", ms)
	case !c.Sink.caps().Heartbeats:
		// A file or stdout holds change events only: a heartbeat line
		// would be read as an event by whoever replays it.
		return bad("sink %s has no place for heartbeats (only %s carry them)", c.Sink.Type, c.Sink.kindNames(func(k sinkkind.Caps) bool { return k.Heartbeats }))
	}
	return nil
}

// startHeartbeats writes Debezium's heartbeat every
// debezium.heartbeat.interval.ms, whether tables change or not: to its own
// Kafka topic with a client of its own, or as a webhook ping. The returned
// stop ends them and waits until the last one is done. A failed heartbeat
// is logged once until one succeeds again; the next one replaces it.
func startHeartbeats(ctx context.Context, cfg *Config, enc cdc.Encoder, sink cdc.Sink, log *slog.Logger) (stop func(), err error) {
	return startGatedHeartbeats(ctx, cfg, enc, sink, log, nil)
}

// heartbeatGate lets one cluster member at a time write the heartbeats:
// the owner of the coordination topic's partition 0. Debezium writes one
// heartbeat stream per connector (key {serverName}, the topic prefix);
// a consumer or lag monitor reads liveness from it, so the members do
// not each write one (the stream would multiply by the member count),
// and it goes on from whichever member the group gives partition 0 to
// when its owner leaves or dies (within the session timeout).
type heartbeatGate struct {
	mu sync.Mutex // held while a heartbeat is sent
	on bool
}

// set opens or closes the gate; closing waits for a heartbeat in flight,
// so that the member gives partition 0 up only once its last heartbeat
// is acked or failed: the next owner's heartbeats never overlap it.
func (g *heartbeatGate) set(on bool) {
	g.mu.Lock()
	g.on = on
	g.mu.Unlock()
}

// send calls f if the gate is open (always, for a nil gate).
func (g *heartbeatGate) send(f func() error) error {
	if g == nil {
		return f()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.on {
		return nil
	}
	return f()
}

// heartbeatSendTimeout bounds one heartbeat's send, so that closing the
// gate (in the group's revoke) waits little for a broker that is away:
// the interval, within 500ms to 5s.
func heartbeatSendTimeout(ms int64) time.Duration {
	return min(max(time.Duration(ms)*time.Millisecond, 500*time.Millisecond), 5*time.Second)
}

// startGatedHeartbeats is startHeartbeats that sends only while gate
// (nil: always) is open.
func startGatedHeartbeats(ctx context.Context, cfg *Config, enc cdc.Encoder, sink cdc.Sink, log *slog.Logger, gate *heartbeatGate) (stop func(), err error) {
	ms := cfg.Debezium.HeartbeatIntervalMs
	if ms <= 0 {
		return func() {}, nil
	}
	server := cfg.Debezium.prefix()
	var send func(ctx context.Context, tsMs int64) error
	closeSend := func() {}
	switch caps := cfg.Sink.caps(); {
	case caps.Topics: // to the heartbeat topic, with a client of its own
		he, ok := enc.(debezium.HeartbeatEncoder)
		if !ok {
			return nil, fmt.Errorf("config: debezium.heartbeat.interval.ms: format %s has no heartbeat record", cfg.Format)
		}
		kc := cfg.Sink.Kafka
		kc.Pipeline, kc.Logger = cfg.Name, log
		hb, err := kafka.NewHeartbeats(kc, cfg.Debezium.heartbeatTopic())
		if err != nil {
			return nil, fmt.Errorf("config: debezium.heartbeat.interval.ms: %w", err)
		}
		// Made at each send: debezium-avro registers the heartbeat
		// schemas on the first, and a registry away at that time fails
		// that heartbeat only.
		send = func(ctx context.Context, tsMs int64) error {
			key, err := he.AppendHeartbeatKey(nil, server)
			if err != nil {
				return err
			}
			value, err := he.AppendHeartbeatValue(nil, tsMs)
			if err != nil {
				return err
			}
			return hb.Send(ctx, key, value)
		}
		closeSend = func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			hb.Close(ctx)
		}
	case caps.Heartbeats:
		p, ok := sink.(sinkkind.Pinger)
		if !ok {
			return nil, fmt.Errorf("config: debezium.heartbeat.interval.ms: sink %T takes no ping", sink)
		}
		send = func(ctx context.Context, tsMs int64) error { return p.Ping(ctx, server, tsMs) }
	default:
		return nil, fmt.Errorf("config: debezium.heartbeat.interval.ms: sink %s has no place for heartbeats", cfg.Sink.Type)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		failing := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := gate.send(func() error {
				sctx, cancel := context.WithTimeout(ctx, heartbeatSendTimeout(ms))
				defer cancel()
				return send(sctx, time.Now().UnixMilli())
			})
			switch {
			case err != nil && ctx.Err() != nil:
				return
			case err != nil && !failing:
				failing = true
				log.Warn("heartbeat failed; retried at the next interval", "err", err)
			case err == nil && failing:
				failing = false
				log.Info("heartbeats delivered again")
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
		closeSend()
	}, nil
}
