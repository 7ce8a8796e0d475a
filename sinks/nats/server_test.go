package nats

import (
	"context"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// startServerB is startServer for a benchmark; it returns the URL.
func startServerB(b *testing.B) string {
	b.Helper()
	srv, err := natsserver.NewServer(&natsserver.Options{
		Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, JetStream: true, StoreDir: b.TempDir(),
	})
	if err != nil {
		b.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		b.Fatal("nats server not ready")
	}
	b.Cleanup(srv.Shutdown)
	return srv.ClientURL()
}

// startServer runs a real NATS server with JetStream in the test's
// process, on a free loopback port, storing in a temp dir.
func startServer(t *testing.T, edit func(*natsserver.Options)) *natsserver.Server {
	t.Helper()
	opts := &natsserver.Options{
		Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir(),
	}
	if edit != nil {
		edit(opts)
	}
	srv, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// client is an independent connection to srv for reading back.
func client(t *testing.T, url string, opts ...natsgo.Option) jetstream.JetStream {
	t.Helper()
	nc, err := natsgo.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// streamMessages returns every message stream holds, in order.
func streamMessages(ctx context.Context, js jetstream.JetStream, stream string) ([]*jetstream.RawStreamMsg, error) {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, err
	}
	var out []*jetstream.RawStreamMsg
	if info.State.Msgs == 0 {
		return nil, nil
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
