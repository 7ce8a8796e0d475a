package webhook

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
)

// fault is what the chaos receiver does with one request.
type fault int

const (
	accept     fault = iota
	fail500          // 500, nothing stored
	throttle         // 429 with Retry-After 0 or 1, nothing stored
	hang             // no answer until the client times out, nothing stored
	drop             // the connection is closed without an answer, nothing stored
	lostAnswer       // stored, then the connection is closed: the client must resend, the receiver dedupes
)

// chaosSeed makes a failing run reproducible: ICECDC_CHAOS_SEED=<seed>.
func chaosSeed(t *testing.T) uint64 {
	if v := os.Getenv("ICECDC_CHAOS_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("ICECDC_CHAOS_SEED: %v", err)
		}
		return seed
	}
	return 20260704
}

func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test takes a few seconds")
	}
	seed := chaosSeed(t)
	t.Logf("seed %d (set ICECDC_CHAOS_SEED to repeat)", seed)
	// Requests reach the receiver one at a time, so the faults are drawn in
	// a reproducible order whatever the client's jitter.
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	draw := func() (fault, int) {
		mu.Lock()
		defer mu.Unlock()
		p := rng.IntN(100)
		switch {
		case p < 10:
			return fail500, 0
		case p < 20:
			return throttle, rng.IntN(2)
		case p < 24:
			return hang, 0
		case p < 30:
			return drop, 0
		case p < 35:
			return lostAnswer, 0
		}
		return accept, 0
	}
	counts := make(map[fault]int)
	const timeout = 200 * time.Millisecond
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request, body []byte) bool {
		f, retryAfter := draw()
		mu.Lock()
		counts[f]++
		mu.Unlock()
		switch f {
		case fail500:
			w.WriteHeader(http.StatusInternalServerError)
		case throttle:
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
			w.WriteHeader(http.StatusTooManyRequests)
		case hang:
			select {
			case <-r.Context().Done():
			case <-time.After(10 * timeout):
				// The client should be long gone; if not, it must
				// not take this as an acceptance.
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		case drop, lostAnswer:
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return false
			}
			conn.Close()
		default:
			w.WriteHeader(http.StatusOK)
		}
		return f == accept || f == lostAnswer
	})
	obs := &countingObserver{}
	s := rc.sink(t, func(c *Config) {
		c.Timeout = timeout
		c.Batch = BatchConfig{MaxEvents: 8, MaxBytes: 2 << 10}
		// Retry-After: 1 is honoured up to Retry.Max, which keeps the
		// test short.
		c.Retry = RetryConfig{Initial: 2 * time.Millisecond, Max: 20 * time.Millisecond}
		c.Observer = obs
	})

	// 2,000 events in 100 batches of random lengths (99 distinct cut
	// points) and random event sizes.
	data := rand.New(rand.NewPCG(seed, 1))
	cuts := data.Perm(1999)[:99]
	for i := range cuts {
		cuts[i]++
	}
	slices.Sort(cuts)
	cuts = append(cuts, 2000)
	var batches []*cdc.Batch
	for i, prev := 0, 0; i < len(cuts); prev, i = cuts[i], i+1 {
		batches = append(batches, testBatch(prev, cuts[i]-prev, func(int) int { return data.IntN(400) }))
	}

	ctx := t.Context()
	start := time.Now()
	for i, b := range batches {
		if err := s.Write(ctx, b); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	elapsed := time.Since(start)

	attempts, acc := rc.snapshot()
	t.Logf("%d batches, %d events, %d attempts in %v; faults %v", len(batches), len(batchIDs(batches...)), attempts, elapsed.Round(time.Millisecond), faultCounts(counts))
	if elapsed > 30*time.Second {
		t.Errorf("took %v, want < 30s", elapsed)
	}
	for f := fail500; f <= lostAnswer; f++ {
		if counts[f] == 0 {
			t.Errorf("fault %s never happened: the test proves less than it says", faultNames[f])
		}
	}
	for i, a := range acc {
		if a.verifyErr != nil {
			t.Errorf("accepted request %d (%s): %v", i, a.header.Get(HeaderID), a.verifyErr)
		}
	}
	got, want := dedupe(rc.events()), batchIDs(batches...)
	if !slices.Equal(got, want) {
		t.Fatalf("receiver has %d distinct events, want the %d sent, in order; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
	if all := len(rc.events()); all == len(want) {
		t.Error("no duplicates reached the receiver: lost answers were not resent")
	}
	if obs.delivered != len(want) {
		t.Errorf("observer: delivered %d, want %d", obs.delivered, len(want))
	}
	if failed := attempts - (len(acc) - counts[lostAnswer]); len(obs.retries) != failed {
		t.Errorf("observer: %d retries, want %d failed attempts", len(obs.retries), failed)
	}
}

var faultNames = map[fault]string{accept: "accept", fail500: "500", throttle: "429", hang: "hang", drop: "drop", lostAnswer: "lost-answer"}

func faultCounts(c map[fault]int) string {
	s := ""
	for f := accept; f <= lostAnswer; f++ {
		s += fmt.Sprintf(" %s=%d", faultNames[f], c[f])
	}
	return s[1:]
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
