package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// One producer's open transaction holds the last stable offset of the
// shared checkpoint topic back; a record another producer committed after
// it must still be read (a table's new owner restores its checkpoint from
// it): the read waits for the open transaction to end, and a record of an
// aborted transaction at the end does not keep it waiting.
func TestReadCommittedReadsPastAnOpenTransaction(t *testing.T) {
	const topic = "checkpoints"
	c := newCluster(t, kfake.SeedTopics(1, topic))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	producer := func(txid string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID(txid),
			kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	commit := func(cl *kgo.Client, key string, end string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte(key)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if end != "open" {
			if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(end == "commit")); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, b := producer("pipe/a"), producer("pipe/b")
	commit(a, "a1", "commit")
	commit(a, "a2", "open") // left open
	commit(b, "b1", "commit")
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		time.Sleep(300 * time.Millisecond)
		_ = a.EndTransaction(ctx, kgo.TryAbort)
	}()
	var got []string
	if err := readToEnd(ctx, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, true, []string{topic}, func(r *kgo.Record) { got = append(got, string(r.Key)) }); err != nil {
		t.Fatal(err)
	}
	<-ended
	if want := "a1 b1"; strings.Join(got, " ") != want {
		t.Fatalf("read committed: %q, want %q (b1 was committed after a2's transaction opened)", strings.Join(got, " "), want)
	}
	// The last record is one of an aborted transaction.
	commit(b, "b2", "abort")
	got = nil
	if err := readToEnd(ctx, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, true, []string{topic}, func(r *kgo.Record) { got = append(got, string(r.Key)) }); err != nil {
		t.Fatal(err)
	}
	if want := "a1 b1"; strings.Join(got, " ") != want {
		t.Fatalf("read committed after an aborted transaction: %q, want %q", strings.Join(got, " "), want)
	}
}
