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
	if cfg.Sink.Type == "kafka" {
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

// startSignals reads the signal topic, when enabled, for target once the
// pipeline is ready; wait returns when ctx ended and the channel stopped.
// A cluster member gives its name: it reads under a group of its own
// (signal.kafka.groupId.<member>) from the topic's end on, since its
// name is new with each process.
func startSignals(ctx context.Context, cfg *Config, log *slog.Logger, target signals.Target, tables []string, n *signals.Notifier, ready <-chan struct{}, member string) (wait func(), err error) {
	sc := cfg.Debezium.Config
	if !sc.Signals() {
		return func() {}, nil
	}
	opts, err := signalClientOpts(cfg, sc.Brokers(cfg.Sink.Kafka.Brokers), "icecdc-signals")
	if err != nil {
		return nil, err
	}
	ch := &signals.Channel{Opts: opts, Topic: sc.Topic(cfg.Debezium.prefix()), Group: sc.GroupID(), Key: cfg.Debezium.prefix(),
		Tables: tables, Target: target, Notify: n, Log: log.With("signal_topic", sc.Topic(cfg.Debezium.prefix()))}
	if member != "" {
		ch.Group, ch.FromEnd = ch.Group+"."+member, true
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
		if err := ch.Run(ctx); err != nil && ctx.Err() == nil {
			log.Error("signals stopped", "err", err)
		}
	}()
	return wg.Wait, nil
}

// tableNames are the names signals may give.
func tableNames(specs []cdc.TableSpec) []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}
