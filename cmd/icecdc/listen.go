package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// DefaultHTTPMaxConnections is http.max_connections' default: plenty for
// probes, scrapes and `icecdc status`, few enough file descriptors that a
// flood of connections leaves the tables theirs.
const DefaultHTTPMaxConnections = 64

// probeSlots is how many connections beyond http.max_connections are let
// in while every slot is busy with a request: they are answered on
// /healthz and /readyz only, then closed, so that a kubelet's liveness,
// readiness and startup probes get through whatever holds the slots.
const probeSlots = 4

// shedLogInterval spaces the warnings about closed connections.
var shedLogInterval = time.Minute

// connLimit is a listener that holds at most max connections open (and
// probeSlots for probes), so that whoever can reach the port cannot take
// the process's file descriptors or keep the probes from an answer.
//
// At the cap it makes room by closing a connection that holds a slot
// without using it: first the oldest that has not sent a whole request
// (a connection that sends nothing is not idle to net/http: it would hold
// its slot until the header timeout), then an idle keep-alive one (its
// client reconnects when it needs one). Only when every slot is busy with
// a request does a new connection get a probe slot; only when those are
// busy too does it wait. netutil.LimitListener caps the same way but
// only waits, which lets silent connections starve the probes. Its
// ConnState method is the server's ConnState hook, its ConnContext the
// server's ConnContext, and probesOnly wraps the server's handler.
type connLimit struct {
	net.Listener
	max  int
	log  *slog.Logger
	done chan struct{}
	once sync.Once
	// changed wakes an Accept waiting for room when a connection closes
	// or turns idle.
	changed chan struct{}

	mu     sync.Mutex
	conns  []*limitedConn // in the max slots, oldest first
	probes []*limitedConn // in the probe slots, oldest first
	// Connections closed to make room since the last warning.
	silent, idle int
	lastLog      time.Time
}

func limitConns(ln net.Listener, max int, log *slog.Logger) *connLimit {
	return &connLimit{Listener: ln, max: max, log: log, done: make(chan struct{}), changed: make(chan struct{}, 1)}
}

// Accept takes the next connection, then a slot for it. The one
// connection it holds while it waits is the only one over the caps.
func (l *connLimit) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		lc, victim := l.admit(c)
		if lc != nil {
			return lc, nil
		}
		if victim != nil {
			victim.Close() // its slot is free once Close returns
			continue
		}
		select {
		case <-l.changed:
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// admit gives c a slot, or names the connection to close to make room
// for it, or neither when c must wait.
func (l *connLimit) admit(c net.Conn) (admitted, victim *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) < l.max {
		lc := &limitedConn{Conn: c, l: l}
		l.conns = append(l.conns, lc)
		return lc, nil
	}
	if v := unused(l.conns); v != nil {
		l.shed(v)
		return nil, v
	}
	if len(l.probes) < probeSlots {
		lc := &limitedConn{Conn: c, l: l, probe: true}
		l.probes = append(l.probes, lc)
		return lc, nil
	}
	if v := unused(l.probes); v != nil {
		l.shed(v)
		return nil, v
	}
	return nil, nil
}

// unused returns the connection of conns to close first: the oldest that
// has not sent a whole request, else the oldest idle one; nil when each
// is busy with a request.
func unused(conns []*limitedConn) *limitedConn {
	var idle *limitedConn
	for _, c := range conns {
		switch c.state {
		case http.StateNew:
			return c
		case http.StateIdle:
			if idle == nil {
				idle = c
			}
		}
	}
	return idle
}

// shed counts v, about to be closed to make room, and warns at most once
// per shedLogInterval with the counts since the last warning (l.mu held).
func (l *connLimit) shed(v *limitedConn) {
	if v.state == http.StateNew {
		l.silent++
	} else {
		l.idle++
	}
	if now := time.Now(); now.Sub(l.lastLog) >= shedLogInterval {
		l.log.Warn("http.max_connections reached: closed connections to make room",
			"without_request", l.silent, "idle", l.idle, "max_connections", l.max)
		l.silent, l.idle, l.lastLog = 0, 0, now
	}
}

func (l *connLimit) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// remove frees c's slot.
func (l *connLimit) remove(c *limitedConn) {
	l.mu.Lock()
	list := &l.conns
	if c.probe {
		list = &l.probes
	}
	for i, x := range *list {
		if x == c {
			*list = append((*list)[:i], (*list)[i+1:]...)
			break
		}
	}
	l.mu.Unlock()
	l.wake()
}

func (l *connLimit) wake() {
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// ConnState tracks each connection's state: whether it has sent a whole
// request, is busy with one, or is idle.
func (l *connLimit) ConnState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	lc.state = s
	l.mu.Unlock()
	if s == http.StateIdle {
		l.wake()
	}
}

type connKey struct{}

// ConnContext marks a request's context with its connection, for
// probesOnly.
func (l *connLimit) ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// probesOnly answers a request on a probe slot only on /healthz and
// /readyz, and closes its connection after the answer.
func probesOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, _ := r.Context().Value(connKey{}).(*limitedConn); c != nil && c.probe {
			w.Header().Set("Connection", "close")
			if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
				http.Error(w, "busy: http.max_connections are all in use; only /healthz and /readyz are answered", http.StatusServiceUnavailable)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// limitedConn gives its slot back once, when it is first closed.
type limitedConn struct {
	net.Conn
	l     *connLimit
	probe bool           // in a probe slot
	state http.ConnState // l.mu; StateNew until a whole request came
	once  sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.remove(c) })
	return err
}
