package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/retryreport"
)

// watch passes the broker failures the client meets while a Write is in
// progress to that Write's retry report (retryreport.WithRetryReport).
// franz-go retries them by itself, so during an outage Write blocks and
// returns nothing: without the report the outage would be invisible. The
// returned function ends the watch.
func (p *producer) watch(ctx context.Context) (unwatch func()) {
	report := retryreport.RetryReport(ctx)
	if report == nil {
		return func() {}
	}
	p.watchMu.Lock()
	p.nextWatch++
	id := p.nextWatch
	p.watchers[id] = report
	p.watchMu.Unlock()
	return func() {
		p.watchMu.Lock()
		delete(p.watchers, id)
		p.watchMu.Unlock()
	}
}

func (p *producer) brokerFailed(err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
		return // our own shutdown, not a fault
	}
	p.watchMu.Lock()
	reports := make([]func(error), 0, len(p.watchers))
	for _, r := range p.watchers {
		reports = append(reports, r)
	}
	p.watchMu.Unlock()
	for _, r := range reports {
		r(err)
	}
}

// brokerHooks passes the client's failed connections (refused, timed
// out, TLS verification) and failed requests to brokerFailed.
type brokerHooks struct{ p *producer }

var (
	_ kgo.HookBrokerConnect = brokerHooks{}
	_ kgo.HookBrokerE2E     = brokerHooks{}
)

func (h brokerHooks) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.p.brokerFailed(fmt.Errorf("kafka broker %s: connect: %w", brokerAddr(meta), err))
	}
}

func (h brokerHooks) OnBrokerE2E(meta kgo.BrokerMetadata, _ int16, e2e kgo.BrokerE2E) {
	if err := e2e.Err(); err != nil {
		h.p.brokerFailed(fmt.Errorf("kafka broker %s: %w", brokerAddr(meta), err))
	}
}

func brokerAddr(meta kgo.BrokerMetadata) string {
	return net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
}
