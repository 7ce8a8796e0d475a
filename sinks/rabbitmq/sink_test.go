package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

func refusal(t *testing.T, cfg Config, b *cdc.Batch, want ...string) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	err = s.Write(context.Background(), b)
	if !errors.Is(err, cdc.ErrPermanent) {
		t.Fatalf("Write: %v, want a permanent error", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not say %q", err, w)
		}
	}
}

// A message no queue takes comes back (mandatory) and stops the table
// naming the event, rather than vanishing.
func TestUnroutableRefused(t *testing.T) {
	broker(t)
	b := sinktest.NewStream("shop", "orders").Snapshot(5, 0)[0]
	refusal(t, Config{URL: brokerURL, Exchange: "unbound"}, b,
		"exchange unbound, routing key shop.orders", "table shop.orders, sequence number 1", b.Messages[0].ID, "no queue takes it")
}

// With declare false a missing exchange is refused, not created.
func TestExchangeChecked(t *testing.T) {
	ch := broker(t)
	no := false
	refusal(t, Config{URL: brokerURL, Exchange: "missing-x", Declare: &no},
		sinktest.NewStream("shop", "orders").Snapshot(5, 0)[0], "exchange missing-x", "404")
	if err := ch.ExchangeDeclarePassive("missing-x", "topic", true, false, false, false, nil); err == nil {
		t.Fatal("exchange missing-x exists although declare is false")
	}
}

// A wrong password stops the table without quoting it.
func TestWrongPassword(t *testing.T) {
	broker(t)
	url := strings.Replace(brokerURL, "guest:guest", "guest:wrong-pw", 1)
	s, err := New(Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	err = s.Write(context.Background(), sinktest.NewStream("shop", "orders").Snapshot(5, 0)[0])
	if !errors.Is(err, cdc.ErrPermanent) || strings.Contains(err.Error(), "wrong-pw") {
		t.Fatalf("wrong password: %v, want a permanent error without the password", err)
	}
}

func TestConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{URL: "http://x:5672"}, "url: http://x:5672: want an amqp:// or amqps:// URL"},
		{Config{RoutingKey: "{tabel}"}, "routing_key: unknown placeholder {tabel}"},
		{Config{ExchangeType: "fan"}, `exchange_type: "fan": want topic`},
	} {
		var all []string
		for _, e := range tc.cfg.WithDefaults().Check() {
			all = append(all, e.Error())
		}
		if !strings.Contains(strings.Join(all, "; "), tc.want) {
			t.Errorf("%+v: problems %q, want %q", tc.cfg, all, tc.want)
		}
	}
}

// TestLostConnectionIsRetried: amqp091 reports a connection it lost (a
// broker that stopped answering: the read deadline of its heartbeats
// passed) as a 501 of its own, which must be retried; the broker's own
// 501 (a frame it could not take) and its refusals stop the table. The
// interop part sinks stops a real broker for a minute (SIGSTOP) to prove
// the whole path.
func TestLostConnectionIsRetried(t *testing.T) {
	lost := &amqp.Error{Code: amqp.FrameError, Reason: "read tcp 127.0.0.1:50616->127.0.0.1:42083: i/o timeout"}
	if permanent(lost) || permanent(fmt.Errorf("publish: %w", lost)) {
		t.Errorf("a lost connection (%v) is taken for a refusal: the table would stop while the broker is away", lost)
	}
	for _, refused := range []*amqp.Error{
		{Code: amqp.FrameError, Reason: "FRAME_ERROR", Server: true},
		{Code: amqp.NotFound, Reason: "NOT_FOUND - no exchange 'x'", Server: true},
		{Code: amqp.AccessRefused, Reason: "ACCESS_REFUSED", Server: true},
	} {
		if !permanent(refused) {
			t.Errorf("the broker's %d %s is retried, want the table stopped", refused.Code, refused.Reason)
		}
	}
}
