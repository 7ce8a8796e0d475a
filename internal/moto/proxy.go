package moto

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Fault is what a Proxy does with one request instead of forwarding it.
type Fault int

const (
	Pass        Fault = iota // forward the request
	Unavailable              // answer 503 SlowDown, as S3 does when throttling
	Denied                   // answer 403 AccessDenied
	Drop                     // close the connection without an answer
	Stall                    // never answer (until the client gives up)
)

// Proxy forwards requests to a server, with the faults a test chooses:
// the store as seen through a bad network or a failing service.
type Proxy struct {
	// URL is the proxy's base URL, to use as the endpoint.
	URL string

	mu       sync.Mutex
	choose   func(r *http.Request, seen int) Fault
	seen     map[string]int // requests per method and path
	requests atomic.Int64
}

// NewProxy starts a proxy in front of target, passing every request until
// Set says otherwise.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{seen: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		switch p.fault(r) {
		case Unavailable:
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`))
		case Denied:
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`))
		case Drop:
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		case Stall:
			select {
			case <-r.Context().Done():
			case <-stop:
			case <-time.After(time.Minute):
			}
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(func() {
		close(stop)
		srv.CloseClientConnections()
		srv.Close()
	})
	p.URL = srv.URL
	return p
}

// Set makes choose decide each request's fault; seen counts the earlier
// requests with the same method and path (0 for the first).
func (p *Proxy) Set(choose func(r *http.Request, seen int) Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.choose = choose
	p.seen = map[string]int{}
}

// Requests returns how many requests reached the proxy.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

func (p *Proxy) fault(r *http.Request) Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.choose == nil {
		return Pass
	}
	k := r.Method + " " + r.URL.Path
	n := p.seen[k]
	p.seen[k]++
	return p.choose(r, n)
}
