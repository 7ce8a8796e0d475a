package debezium

import (
	"sync"
	"testing"

	"github.com/icecdc/icecdc/cdc"
)

// TestCommitCache encodes the events of several commits interleaved, as
// the followers of a pipeline's tables do on one shared encoder, and
// requires each value to be the one a fresh encoder writes for that
// commit alone: the envelope parts an encoder keeps per commit never leak
// into another commit's events, whether it differs in its table, its
// snapshot or only its operation.
func TestCommitCache(t *testing.T) {
	base := benchCommit(8)
	var commits []*cdc.Commit
	for i, edit := range []func(c *cdc.Commit){
		func(c *cdc.Commit) {},
		func(c *cdc.Commit) { c.Table.Name, c.Table.UUID = "customers", "0b7e7a52-7c1e-4b51-9d8e-5d3a1f9e2c11" },
		func(c *cdc.Commit) { c.Snapshot.ID, c.Snapshot.SequenceNumber = 77, 43 },
		func(c *cdc.Commit) { c.Snapshot.Operation = "overwrite" }, // same id and sequence number: the same slot
		func(c *cdc.Commit) { c.Table.Namespace = "archive" },
	} {
		c := *base
		c.Events = append([]cdc.Event(nil), base.Events...)
		edit(&c)
		if i > 0 && keyOf(&c) == keyOf(commits[0]) {
			t.Fatalf("commit %d: same key as commit 0", i)
		}
		commits = append(commits, &c)
	}
	connect, err := NewConnectJSON(Envelope{Pipeline: "p", Version: "v"}, ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(name string) cdc.Encoder {
		if name == "json" {
			return &JSON{Envelope: Envelope{Pipeline: "p", Version: "v"}}
		}
		f, err := NewConnectJSON(Envelope{Pipeline: "p", Version: "v"}, ConnectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for name, shared := range map[string]cdc.Encoder{"json": &JSON{Envelope: Envelope{Pipeline: "p", Version: "v"}}, "connect": connect} {
		want := make([][]string, len(commits))
		for k, c := range commits {
			enc := fresh(name)
			for i := range c.Events {
				v, err := enc.AppendValue(nil, c, &c.Events[i], 1)
				if err != nil {
					t.Fatal(err)
				}
				want[k] = append(want[k], string(v))
			}
		}
		var wg sync.WaitGroup
		for round := range 4 {
			for k, c := range commits {
				wg.Go(func() {
					for i := range c.Events {
						i := (i + round) % len(c.Events)
						v, err := shared.AppendValue(nil, c, &c.Events[i], 1)
						if err != nil {
							t.Error(err)
							return
						}
						if string(v) != want[k][i] {
							t.Errorf("%s: commit %d event %d:\n got %s\nwant %s", name, k, i, v, want[k][i])
							return
						}
					}
				})
			}
		}
		wg.Wait()
	}
}
