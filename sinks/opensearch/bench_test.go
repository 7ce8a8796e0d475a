package opensearch

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
)

// benchBatches is one commit of n inserts as batches of 2048 events (the
// pipeline's default chunk).
func benchBatches(b *testing.B, n int) (*history, []*cdc.Batch) {
	h := newHistory(&testing.T{})
	changes := make([]change, n)
	for i := range changes {
		changes[i] = change{cdc.OpCreate, int64(i), fmt.Sprintf("item %d with a name of some length", i)}
	}
	return h, h.commit(2048, changes...)
}

// BenchmarkBulkBody measures building the bulk items of a batch (ids,
// versions, action lines): the sink's own work per document.
func BenchmarkBulkBody(b *testing.B) {
	_, batches := benchBatches(b, 2048)
	batch := batches[0]
	b.ReportAllocs()
	bytes := 0
	for b.Loop() {
		bytes = 0
		for i := range batch.Messages {
			it, err := newItem(i, &batch.Messages[i], "items", batch.Snapshot.SequenceNumber)
			if err != nil {
				b.Fatal(err)
			}
			bytes += len(it.body)
		}
	}
	b.ReportMetric(float64(len(batch.Messages)*b.N)/b.Elapsed().Seconds(), "docs/s")
	b.SetBytes(int64(bytes))
}

// BenchmarkRealNode writes one commit of 100,000 inserts into the node
// ICECDC_OPENSEARCH_URL names (skipped without one), a fresh index per
// round, with the default batch limits.
func BenchmarkRealNode(b *testing.B) {
	url := os.Getenv(realNodeEnv)
	if url == "" {
		b.Skipf("%s is not set: no OpenSearch node to write to", realNodeEnv)
	}
	const n = 100_000
	_, batches := benchBatches(b, n)
	round := 0
	var took time.Duration
	for b.Loop() {
		round++
		cfg := Config{URLs: []string{url}, Index: fmt.Sprintf("bench-%d-%d", os.Getpid(), round), Pipeline: "p"}
		s, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for _, bt := range batches {
			if err := s.Write(context.Background(), bt); err != nil {
				b.Fatal(err)
			}
		}
		took += time.Since(start)
		_ = s.Close(context.Background())
	}
	b.ReportMetric(float64(n*b.N)/took.Seconds(), "docs/s")
}
