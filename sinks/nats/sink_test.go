package nats

import (
	"context"
	"errors"
	"strings"
	"testing"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

func newSink(t *testing.T, cfg Config) *Sink {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func count(t *testing.T, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	st, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// A batch published again, by the same sink or by a new one after a
// restart, is dropped by the stream's duplicate window: the stream
// holds each event once.
func TestReplayDeduplicated(t *testing.T) {
	srv := startServer(t, nil)
	ctx := context.Background()
	cfg := Config{URLs: []string{srv.ClientURL()}, Subject: "cdc.{namespace}.{table}"}
	s := newSink(t, cfg)
	st := sinktest.NewStream("shop", "orders")
	batches := st.Snapshot(300, 100)
	for _, b := range batches {
		if err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	js := client(t, srv.ClientURL())
	if n := count(t, js, DefaultStream); n != 300 {
		t.Fatalf("stream holds %d messages after one write, want 300", n)
	}
	for _, b := range batches {
		if err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	restarted := newSink(t, cfg)
	if err := restarted.Write(ctx, batches[1]); err != nil {
		t.Fatal(err)
	}
	if n := count(t, js, DefaultStream); n != 300 {
		t.Fatalf("stream holds %d messages after replays, want 300 (each event once)", n)
	}
	info, _ := js.Stream(ctx, DefaultStream)
	if got := info.CachedInfo().Config.Duplicates; got != DefaultDuplicateWindow {
		t.Errorf("created stream's duplicate window %v, want %v", got, DefaultDuplicateWindow)
	}
	if subj := info.CachedInfo().Config.Subjects; len(subj) != 1 || subj[0] != "cdc.>" {
		t.Errorf("created stream's subjects %v, want [cdc.>]", subj)
	}
}

// An event larger than the server's max_payload is refused with one line
// naming it, before any message of its batch is sent.
func TestMaxPayloadRefused(t *testing.T) {
	srv := startServer(t, func(o *natsserver.Options) { o.MaxPayload = 4096 })
	ctx := context.Background()
	s := newSink(t, Config{URLs: []string{srv.ClientURL()}})
	st := sinktest.NewStream("shop", "orders")
	if err := s.Write(ctx, st.Snapshot(10, 0)[0]); err != nil {
		t.Fatal(err)
	}
	st.ValueBytes = 8000
	b := st.Snapshot(5, 0)[0]
	err := s.Write(ctx, b)
	if !errors.Is(err, cdc.ErrPermanent) {
		t.Fatalf("Write of an event past max_payload: %v, want a permanent error", err)
	}
	m := b.Messages[0]
	row := strings.Split(m.ID, ":")[2]
	for _, want := range []string{"table shop.orders", "sequence number 2", "row id " + row, m.ID, "max_payload of 4096", "not sent"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("refusal spans lines: %q", err)
	}
	if n := count(t, client(t, srv.ClientURL()), DefaultStream); n != 10 {
		t.Errorf("stream holds %d messages, want the 10 before the refused batch", n)
	}
}

// The stream's own max_msg_size is met the same way.
func TestStreamMaxMsgSizeRefused(t *testing.T) {
	srv := startServer(t, nil)
	ctx := context.Background()
	js := client(t, srv.ClientURL())
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SMALL", Subjects: []string{"small.>"}, MaxMsgSize: 2000}); err != nil {
		t.Fatal(err)
	}
	s := newSink(t, Config{URLs: []string{srv.ClientURL()}, Subject: "small.{table}", Stream: streamNamed("SMALL", false)})
	st := sinktest.NewStream("shop", "orders")
	st.ValueBytes = 3000
	err := s.Write(ctx, st.Snapshot(3, 0)[0])
	if !errors.Is(err, cdc.ErrPermanent) || !strings.Contains(err.Error(), "stream SMALL's max_msg_size of 2000") {
		t.Fatalf("Write past the stream's max_msg_size: %v", err)
	}
}

func streamNamed(name string, create bool) StreamConfig {
	return StreamConfig{Name: name, Create: &create}
}

func tlsWith(ca, cert string) TLSConfig { return TLSConfig{CAFile: ca, CertFile: cert} }

// With stream.create false the stream is checked, not created: a missing
// stream, or a subject another stream stores, stops the table naming it.
func TestStreamChecked(t *testing.T) {
	srv := startServer(t, nil)
	ctx := context.Background()
	js := client(t, srv.ClientURL())
	b := sinktest.NewStream("shop", "orders").Snapshot(5, 0)[0]

	s := newSink(t, Config{URLs: []string{srv.ClientURL()}, Stream: streamNamed("CDC", false)})
	err := s.Write(ctx, b)
	if !errors.Is(err, cdc.ErrPermanent) || !strings.Contains(err.Error(), "stream CDC: no stream stores the subject") {
		t.Fatalf("missing stream, create false: %v", err)
	}
	if _, err := js.StreamNameBySubject(ctx, "icecdc.shop.orders"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("a stream was created although stream.create is false: %v", err)
	}

	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"icecdc.shop.*"}}); err != nil {
		t.Fatal(err)
	}
	s = newSink(t, Config{URLs: []string{srv.ClientURL()}, Stream: streamNamed("CDC", true)})
	err = s.Write(ctx, b)
	if !errors.Is(err, cdc.ErrPermanent) || !strings.Contains(err.Error(), "stored by stream OTHER") {
		t.Fatalf("subject of another stream: %v", err)
	}

	// The stream that stores the subject, named: written to.
	s = newSink(t, Config{URLs: []string{srv.ClientURL()}, Stream: streamNamed("OTHER", false)})
	if err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	if n := count(t, js, "OTHER"); n != 5 {
		t.Fatalf("stream OTHER holds %d messages, want 5", n)
	}
}

// A wrong password stops the table; the right one delivers.
func TestAuth(t *testing.T) {
	srv := startServer(t, func(o *natsserver.Options) { o.Username, o.Password = "icecdc", "s3cret" })
	ctx := context.Background()
	b := sinktest.NewStream("shop", "orders").Snapshot(5, 0)[0]
	s := newSink(t, Config{URLs: []string{srv.ClientURL()}, Username: "icecdc", Password: "wrong"})
	err := s.Write(ctx, b)
	if !errors.Is(err, cdc.ErrPermanent) || !strings.Contains(strings.ToLower(err.Error()), "authorization") || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("wrong password: %v", err)
	}
	s = newSink(t, Config{URLs: []string{srv.ClientURL()}, Username: "icecdc", Password: "s3cret"})
	if err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
}

// An unreachable server is an error the pipeline retries.
func TestUnreachableRetried(t *testing.T) {
	srv := startServer(t, nil)
	url := srv.ClientURL()
	srv.Shutdown()
	srv.WaitForShutdown()
	s := newSink(t, Config{URLs: []string{url}})
	err := s.Write(context.Background(), sinktest.NewStream("shop", "orders").Snapshot(5, 0)[0])
	if err == nil || errors.Is(err, cdc.ErrPermanent) {
		t.Fatalf("unreachable server: %v, want a retryable error", err)
	}
}

func TestConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{URLs: []string{"http://x:4222"}}, "urls[0]: http://x:4222: want a nats:// or tls:// URL"},
		{Config{Subject: "cdc.{tabel}"}, "subject: unknown placeholder {tabel}"},
		{Config{Subject: "cdc.*.{table}"}, "wildcard * in a subject to publish to"},
		{Config{Subject: "{table}"}, "stream.subjects: required when the subject template starts with a placeholder"},
		{Config{Username: "u", Token: "t"}, "exclude each other"},
		{Config{Password: "p"}, "username: required with password"},
		{Config{TLS: tlsWith("", "c.pem")}, "tls.cert_file and tls.key_file go together"},
	} {
		errs := tc.cfg.WithDefaults().Check()
		if tc.cfg.Subject == "{table}" || tc.cfg.Password != "" {
			errs = tc.cfg.Check()
		}
		var all []string
		for _, e := range errs {
			all = append(all, e.Error())
		}
		if !strings.Contains(strings.Join(all, "; "), tc.want) {
			t.Errorf("%+v: problems %q, want %q", tc.cfg, all, tc.want)
		}
	}
	if errs := (Config{Subject: "a.{namespace}.{table}", Stream: streamNamed("S", true)}).WithDefaults().Check(); len(errs) != 0 {
		t.Errorf("a good section: %v", errs)
	}
}
