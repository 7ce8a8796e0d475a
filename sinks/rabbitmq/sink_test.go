package rabbitmq

import (
	"context"
	"errors"
	"strings"
	"testing"

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
