package state

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestGroupCommitSharesWaitingSaves: the saves that arrive while a
// transaction is being committed wait for it and then share one
// transaction; one of them that fails, or panics, fails alone with its own
// error and the others are committed; a save alone commits by itself.
func TestGroupCommitSharesWaitingSaves(t *testing.T) {
	s := mustOpen(t, statePath(t), Options{})
	var mu sync.Mutex
	txs := map[int]int{} // committed transaction id → saves in it
	put := func(tx *bolt.Tx, key string) error {
		b, err := tx.CreateBucketIfNotExists([]byte("group-test"))
		if err != nil {
			return err
		}
		id := tx.ID()
		tx.OnCommit(func() { mu.Lock(); txs[id]++; mu.Unlock() })
		return b.Put([]byte(key), []byte("v"))
	}
	started, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.group.run(s.db, func(tx *bolt.Tx) error {
			close(started)
			<-release
			return put(tx, "first")
		})
	}()
	<-started
	errBoom := errors.New("boom")
	const waiting = 50
	errs := make([]error, waiting)
	var wg sync.WaitGroup
	for i := range waiting {
		wg.Go(func() {
			errs[i] = s.group.run(s.db, func(tx *bolt.Tx) error {
				switch i {
				case 10:
					return errBoom
				case 20:
					panic("a bug")
				}
				return put(tx, fmt.Sprintf("k%02d", i))
			})
		})
	}
	// Wait (no time limit but the test's) until every save queued behind
	// the open transaction.
	for {
		s.group.mu.Lock()
		n := len(s.group.queue)
		s.group.mu.Unlock()
		if n == waiting {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatalf("the first save: %v", err)
	}
	for i, err := range errs {
		switch {
		case i == 10 && !errors.Is(err, errBoom):
			t.Errorf("save 10: %v, want its own error", err)
		case i == 20 && (err == nil || !strings.Contains(err.Error(), "panic in a save: a bug")):
			t.Errorf("save 20: %v, want its panic as an error", err)
		case i != 10 && i != 20 && err != nil:
			t.Errorf("save %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(txs) != 2 {
		t.Fatalf("the saves were committed in %d transactions (%v), want 2: the first alone, the 48 waiting ones together", len(txs), txs)
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("group-test"))
		if b == nil {
			return errors.New("no bucket")
		}
		for i := range waiting {
			got := b.Get([]byte(fmt.Sprintf("k%02d", i))) != nil
			if got != (i != 10 && i != 20) {
				return fmt.Errorf("key k%02d stored: %v", i, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
