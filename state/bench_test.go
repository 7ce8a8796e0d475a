package state

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/icecdc/icecdc/cdc"
)

// BenchmarkSave measures fsynced saves per second, the ceiling on how many
// batches per second the pipeline can confirm through one store.
func BenchmarkSave(b *testing.B) {
	b.Run("mid-snapshot", func(b *testing.B) {
		s := mustOpen(b, statePath(b), Options{})
		cp := cdc.Checkpoint{TableUUID: "u", SnapshotID: 1, Seq: 1}
		for b.Loop() {
			cp.Next += 500
			if err := s.Save(ctx, "bench", "shop.orders", cp); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "saves/s")
	})
	// Each save completes a snapshot with the history already at its
	// default limit, so every save also trims the oldest entry.
	b.Run("done-history-full", func(b *testing.B) {
		s := mustOpen(b, statePath(b), Options{})
		cp := cdc.Checkpoint{TableUUID: "u", Next: 500, Done: true}
		err := s.db.Update(func(tx *bolt.Tx) error {
			for range DefaultHistoryLimit {
				cp.Seq++
				cp.SnapshotID = cp.Seq * 7
				if err := s.save(tx, "bench", "shop.orders", cp, s.now()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			cp.Seq++
			cp.SnapshotID = cp.Seq * 7
			if err := s.Save(ctx, "bench", "shop.orders", cp); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "saves/s")
		if h, err := s.History("bench", "shop.orders", 0); err != nil || len(h) != DefaultHistoryLimit {
			b.Fatalf("history holds %d entries, %v; want %d", len(h), err, DefaultHistoryLimit)
		}
	})
}
