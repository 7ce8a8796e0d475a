package redis

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// A replayed batch adds its entries again under new entry ids, with the
// same id fields: what docs/sinks.md tells consumers to drop repeats by.
func TestReplayAddsAgainWithSameIDs(t *testing.T) {
	c := server(t)
	ctx := context.Background()
	s, err := New(Config{URL: serverURL})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	b := sinktest.NewStream("shop", "orders").Snapshot(50, 0)[0]
	for range 2 {
		if err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := c.XRange(ctx, "icecdc:shop.orders", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 100 {
		t.Fatalf("%d entries after a batch of 50 written twice, want 100", len(entries))
	}
	for i := range 50 {
		a, r := received(entries[i]), received(entries[50+i])
		if a.ID != b.Messages[i].ID || r.ID != a.ID || entries[i].ID == entries[50+i].ID {
			t.Fatalf("entry %d: ids %q and %q (entry ids %s, %s), want the event id %q twice under two entry ids",
				i, a.ID, r.ID, entries[i].ID, entries[50+i].ID, b.Messages[i].ID)
		}
	}
}

// max_len trims each stream with MAXLEN ~ as entries are added.
func TestMaxLenTrims(t *testing.T) {
	c := server(t)
	ctx := context.Background()
	cfg := Config{URL: serverURL, MaxLen: 100}
	cfg.Batch.MaxEntries = 50
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	st := sinktest.NewStream("shop", "orders")
	for range 10 {
		if err := s.Write(ctx, st.Snapshot(200, 0)[0]); err != nil {
			t.Fatal(err)
		}
	}
	n, err := c.XLen(ctx, "icecdc:shop.orders").Result()
	if err != nil {
		t.Fatal(err)
	}
	// ~ trims whole macro nodes (100 entries each by default): about 100,
	// never the 2000 written.
	if n < 100 || n >= 400 {
		t.Fatalf("stream holds %d entries with max_len 100 after 2000 adds", n)
	}
}

// A wrong password stops the table, without quoting it.
func TestWrongPassword(t *testing.T) {
	c := server(t)
	ctx := context.Background()
	if err := c.Do(ctx, "ACL", "SETUSER", "writer", "on", ">right", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{URL: serverURL, Username: "writer", Password: "wrong-pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	err = s.Write(ctx, sinktest.NewStream("shop", "orders").Snapshot(5, 0)[0])
	if !errors.Is(err, cdc.ErrPermanent) || strings.Contains(err.Error(), "wrong-pw") {
		t.Fatalf("wrong password: %v, want a permanent error without the password", err)
	}
	s2, err := New(Config{URL: strings.Replace(serverURL, "redis://", "redis://writer:right@", 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(ctx)
	if err := s2.Write(ctx, sinktest.NewStream("shop", "orders").Snapshot(5, 0)[0]); err != nil {
		t.Fatal(err)
	}
}

func TestConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{URL: "http://x:6379"}, "url: http://x:6379: want a redis:// or rediss:// URL"},
		{Config{Stream: "s:{tabel}"}, "stream: unknown placeholder {tabel}"},
		{Config{MaxLen: -1}, "max_len: must not be negative"},
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
