package main

import (
	"net"
	"net/http"
	"sync"
)

// DefaultHTTPMaxConnections is http.max_connections' default: plenty for
// probes, scrapes and `icecdc status`, few enough file descriptors that a
// flood of connections leaves the tables theirs.
const DefaultHTTPMaxConnections = 64

// connLimit is a listener that holds at most max connections open, so
// that whoever can reach the port cannot take the process's file
// descriptors. At the cap it makes room by closing an idle keep-alive
// connection (a client reconnects when it needs one); only when none is
// idle does a new connection wait for a slot. netutil.LimitListener caps
// the same way but only waits: connections held idle would then keep
// /readyz from answering until they time out. Its ConnState method is the
// server's ConnState hook, which tells which connections are idle.
type connLimit struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
	// idled wakes an Accept waiting for a slot when a connection turns
	// idle, which it may then close.
	idled chan struct{}

	mu   sync.Mutex
	idle map[net.Conn]struct{}
}

func limitConns(ln net.Listener, max int) *connLimit {
	return &connLimit{Listener: ln, slots: make(chan struct{}, max), done: make(chan struct{}), idled: make(chan struct{}, 1),
		idle: map[net.Conn]struct{}{}}
}

// Accept takes the next connection, then a slot for it. The one
// connection it holds while it waits is the only one over the cap.
func (l *connLimit) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		select {
		case l.slots <- struct{}{}:
			return &limitedConn{Conn: c, l: l}, nil
		default:
		}
		if l.closeIdle() {
			continue // its slot is free once its Close returns
		}
		select {
		case l.slots <- struct{}{}:
			return &limitedConn{Conn: c, l: l}, nil
		case <-l.idled:
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

func (l *connLimit) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// closeIdle closes one idle connection; false when none is idle.
func (l *connLimit) closeIdle() bool {
	l.mu.Lock()
	var victim net.Conn
	for c := range l.idle {
		victim = c
		delete(l.idle, c)
		break
	}
	l.mu.Unlock()
	if victim == nil {
		return false
	}
	victim.Close()
	return true
}

// ConnState tracks the idle connections.
func (l *connLimit) ConnState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s == http.StateIdle {
		l.idle[c] = struct{}{}
		select {
		case l.idled <- struct{}{}:
		default:
		}
	} else {
		delete(l.idle, c)
	}
}

// limitedConn gives its slot back once, when it is first closed.
type limitedConn struct {
	net.Conn
	l    *connLimit
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.l.slots })
	return err
}
