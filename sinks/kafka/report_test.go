package kafka

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/icecdc/icecdc/retryreport"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// While brokers drop the connection, Write waits inside franz-go's
// retries and returns no error; the failures reach the Write's retry
// report, so the pipeline can log the outage. After the Write, they no
// longer do.
func TestBrokerFailuresReachTheRetryReport(t *testing.T) {
	for _, delivery := range []string{AtLeastOnce, ExactlyOnce} {
		t.Run(delivery, func(t *testing.T) {
			ctx := testContext(t)
			c := newCluster(t)
			cfg := testConfig(c)
			cfg.Delivery = delivery
			s := newSink(t, cfg)
			st := sinktest.NewStream("shop", "orders")
			if err := s.Write(ctx, st.Snapshot(10, 10)[0]); err != nil {
				t.Fatalf("Write: %v", err)
			}

			var dropped atomic.Int32
			c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				if dropped.Load() < 4 {
					dropped.Add(1)
					return nil, errors.New("injected connection drop"), true
				}
				return nil, nil, false
			})
			var (
				mu      sync.Mutex
				reports []error
			)
			report := func(err error) {
				mu.Lock()
				defer mu.Unlock()
				reports = append(reports, err)
			}
			if err := s.Write(retryreport.WithRetryReport(ctx, report), st.Snapshot(10, 10)[0]); err != nil {
				t.Fatalf("Write through dropped connections: %v", err)
			}
			mu.Lock()
			n := len(reports)
			mu.Unlock()
			if dropped.Load() == 0 || n == 0 {
				t.Fatalf("%d connections dropped, %d failures reported; want both", dropped.Load(), n)
			}
			for _, err := range reports[:n] {
				if !strings.Contains(err.Error(), "kafka broker") {
					t.Fatalf("report %v: want a broker failure", err)
				}
			}
			dropped.Store(0) // fail the next Write's first requests too
			if err := s.Write(ctx, st.Snapshot(10, 10)[0]); err != nil {
				t.Fatalf("Write: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(reports) != n {
				t.Fatalf("%d failures of another Write reached this Write's report", len(reports)-n)
			}
		})
	}
}
