package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/signals"
)

// signalClientOpts are the Kafka options of the signal and notification
// clients: the sink's connection (TLS, SASL) when the sink is Kafka, on
// brokers.
func signalClientOpts(cfg *Config, brokers []string, client string) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if cfg.Sink.caps().Topics {
		var err error
		if opts, err = cfg.Sink.Kafka.ClientOpts(); err != nil {
			return nil, fmt.Errorf("config: sink.kafka: %w", err)
		}
	}
	return append(opts, kgo.SeedBrokers(brokers...), kgo.ClientID(client)), nil
}

// newNotifier builds the notification channels the configuration enables
// (nil: none); close flushes and closes its Kafka client.
func newNotifier(ctx context.Context, cfg *Config, log *slog.Logger) (n *signals.Notifier, close func(), err error) {
	sc := cfg.Debezium.Config
	close = func() {}
	if !sc.NotifySink() && !sc.NotifyLog() {
		return nil, close, nil
	}
	n = &signals.Notifier{Connector: cfg.Debezium.prefix(), ConnectSchemas: cfg.Format == formatDebeziumConnect, Errors: log}
	if sc.NotifyLog() {
		n.Log = log
	}
	if sc.NotifySink() {
		opts, err := signalClientOpts(cfg, cfg.Sink.Kafka.Brokers, "icecdc-notifications")
		if err != nil {
			return nil, close, err
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, close, fmt.Errorf("notification topic %s: %w", sc.NotificationTopic, err)
		}
		// Created with one partition, so that a snapshot's notifications
		// keep their order; an existing topic is left as it is.
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = kadm.NewClient(cl).CreateTopic(cctx, 1, -1, nil, sc.NotificationTopic)
		cancel()
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			log.Warn("create the notification topic", "topic", sc.NotificationTopic, "err", err)
		}
		n.Client, n.Topic = cl, sc.NotificationTopic
		close = func() {
			cl.Flush(context.WithoutCancel(ctx))
			cl.Close()
		}
	}
	return n, close, nil
}

// signalTargets are what a signal channel acts on: the pipeline (or a
// cluster member's pipelines) and its tables, with the notifier its
// notices go to.
type signalTargets struct {
	target signals.Target
	tables []string
	notify *signals.Notifier
}

// startSignals reads the signal topic, when enabled, for st once the
// pipeline is ready; wait returns when ctx ended and the channel stopped.
func startSignals(ctx context.Context, cfg *Config, log *slog.Logger, st signalTargets, ready <-chan struct{}) (wait func(), err error) {
	sc := cfg.Debezium.Config
	if !sc.Signals() {
		return func() {}, nil
	}
	opts, err := signalClientOpts(cfg, sc.Brokers(cfg.Sink.Kafka.Brokers), "icecdc-signals")
	if err != nil {
		return nil, err
	}
	topic := sc.Topic(cfg.Debezium.prefix())
	ch := &signals.Channel{Opts: opts, Topic: topic, Group: sc.GroupID(), Key: cfg.Debezium.prefix(),
		Tables: st.tables, Target: st.target, Notify: st.notify, Log: log.With("signal_topic", topic)}
	return runSignals(ctx, log, ready, ch.Run), nil
}

// clusterSignals is the signal channel of a cluster member (nil when
// signals are off): every member reads the topic, and the owner of a
// table's coordination partition acts on its signals, from the
// partition's mark in the group on (see signals.ClusterChannel). Its
// Marks are the member's, set once the member is made.
func clusterSignals(cfg *Config, log *slog.Logger, st signalTargets) (*signals.ClusterChannel, error) {
	sc := cfg.Debezium.Config
	if !sc.Signals() {
		return nil, nil
	}
	opts, err := signalClientOpts(cfg, sc.Brokers(cfg.Sink.Kafka.Brokers), "icecdc-signals")
	if err != nil {
		return nil, err
	}
	topic := sc.Topic(cfg.Debezium.prefix())
	return &signals.ClusterChannel{Opts: opts, Topic: topic, Key: cfg.Debezium.prefix(),
		Tables: st.tables, Target: st.target, Notify: st.notify, Log: log.With("signal_topic", topic)}, nil
}

// runSignals runs a signal channel once ready is closed; wait returns
// when ctx ended and the channel stopped.
func runSignals(ctx context.Context, log *slog.Logger, ready <-chan struct{}, run func(context.Context) error) (wait func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
		if err := run(ctx); err != nil && ctx.Err() == nil {
			log.Error("signals stopped", "err", err)
		}
	}()
	return wg.Wait
}

// tableNames are the names signals may give.
func tableNames(specs []cdc.TableSpec) []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}
