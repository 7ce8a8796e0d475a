package source_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icecdc/icecdc/source"
)

// hostileREST is a REST catalog whose answers the test chooses: config
// answers /v1/config (a small valid one when nil), table the table's
// loadTable and every other path.
func hostileREST(t *testing.T, config, table http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/v1/config") {
			if config != nil {
				config(w, r)
				return
			}
			io.WriteString(w, `{"defaults": {}, "overrides": {}}`)
			return
		}
		table(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// endless writes a JSON document that never ends (but after total bytes,
// when the reader has not gone first) and counts what it wrote.
func endless(written *atomic.Int64, total int64, prefix string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.WriteString(w, prefix)
		written.Add(int64(n))
		chunk := []byte(strings.Repeat("a", 64<<10))
		for written.Load() < total {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}
}

// TestRESTAnswerBounded: a REST catalog answering loadTable, or its
// config, with a body that does not end fails the load with one line
// naming the bound and the URL; the client stops reading at the bound:
// the server writes at most the bound plus what the connection buffers,
// and the load allocates a small multiple of the bound (unbounded, it
// reads the whole 160 MiB the server offers).
func TestRESTAnswerBounded(t *testing.T) {
	const limit = 1 << 20
	const offered = 160 << 20
	for _, tc := range []struct {
		name, path string
		config     bool
	}{
		{"loadTable", "/v1/namespaces/shop/tables/orders", false},
		{"config", "/v1/config", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var written atomic.Int64
			body := endless(&written, offered, `{"metadata-location": "s3://b/m.json", "metadata": {"format-version": 3, "location": "`)
			var srv *httptest.Server
			if tc.config {
				srv = hostileREST(t, func(w http.ResponseWriter, r *http.Request) {
					endless(&written, offered, `{"defaults": {"x": "`)(w, r)
				}, http.NotFound)
			} else {
				srv = hostileREST(t, nil, body)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
			defer cancel()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := source.Open(ctx, source.Options{
				CatalogType: "rest", CatalogURI: "http://icecdc:uri-pw-Zq8@" + strings.TrimPrefix(srv.URL, "http://"),
				Table: "shop.orders", MaxResponseBytes: limit,
			})
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("the load succeeded")
			}
			msg := err.Error()
			t.Logf("%s", msg)
			var tooLarge *source.ResponseTooLargeError
			if !errors.As(err, &tooLarge) || strings.Contains(msg, "\n") || !strings.Contains(msg, "1 MiB") ||
				!strings.Contains(msg, srv.URL+tc.path) || !strings.Contains(msg, "catalog.max_response_bytes") {
				t.Fatalf("want one line naming the bound and %s%s: %v", srv.URL, tc.path, err)
			}
			if strings.Contains(msg, "uri-pw-Zq8") {
				t.Fatalf("the error shows the URI's password: %s", msg)
			}
			// Loopback sockets buffer a few MiB each way.
			if w := written.Load(); w > limit+32<<20 {
				t.Errorf("the server wrote %d MiB: the client read past the bound", w>>20)
			}
			if a := after.TotalAlloc - before.TotalAlloc; a > 16*limit {
				t.Errorf("the load allocated %d MiB", a>>20)
			}
		})
	}
}

// TestRESTAnswerAtBound: an answer of exactly the bound is read whole
// (the bound is on what is read, not one byte less).
func TestRESTAnswerAtBound(t *testing.T) {
	answer := `{"error": {"message": "no such table shop.orders", "type": "NoSuchTableException", "code": 404}}`
	srv := hostileREST(t, nil, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, answer)
	})
	_, err := source.Open(context.Background(), source.Options{
		CatalogType: "rest", CatalogURI: srv.URL, Table: "shop.orders", MaxResponseBytes: int64(len(answer)),
	})
	// Read whole and understood: the catalog said the table does not exist.
	if err == nil || !errors.Is(err, catalog.ErrNoSuchTable) || !strings.HasPrefix(err.Error(), "table shop.orders does not exist in rest catalog at http://") {
		t.Fatalf("want the catalog's answer that the table does not exist, got %v", err)
	}
}

// TestRESTRedirectKeepsCredentials: a REST catalog that redirects
// loadTable to another host (localhost instead of 127.0.0.1: Go's client
// and icecdc's transport tell hosts by name) gets the request followed
// without the bearer token or the headers the operator adds; an OAuth
// token request, which carries the client secret in its body, is not
// sent to the other host at all. The same redirect within one host keeps
// the token.
func TestRESTRedirectKeepsCredentials(t *testing.T) {
	const token, apiKey, secret = "bearer-tok-Vw3", "api-key-Jm6", "client-secret-Pk9"
	var mu sync.Mutex
	var seen []string // what the other host received
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s auth=%q key=%q body=%q", r.Method, r.URL.Path,
			r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), b))
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error": {"message": "not here", "type": "NoSuchTableException", "code": 404}}`)
	}))
	defer other.Close()
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	var sameHostAuth atomic.Value
	catalog := hostileREST(t, nil, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/oauth/tokens"):
			http.Redirect(w, r, otherURL+r.URL.Path, http.StatusTemporaryRedirect)
		case strings.HasSuffix(r.URL.Path, "/moved/orders"):
			sameHostAuth.Store(r.Header.Get("Authorization"))
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error": {"message": "moved away", "type": "NoSuchTableException", "code": 404}}`)
		case strings.HasSuffix(r.URL.Path, "/tables/orders"):
			http.Redirect(w, r, otherURL+r.URL.Path, http.StatusTemporaryRedirect)
		case strings.HasSuffix(r.URL.Path, "/tables/items"):
			http.Redirect(w, r, "/v1/namespaces/shop/moved/orders", http.StatusPermanentRedirect)
		default:
			http.NotFound(w, r)
		}
	})
	open := func(tbl string, props map[string]string) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
		defer cancel()
		_, err := source.Open(ctx, source.Options{CatalogType: "rest", CatalogURI: catalog.URL, Table: tbl, Props: props})
		return err
	}

	err := open("shop.orders", map[string]string{"token": token, "header.X-Api-Key": apiKey})
	t.Logf("token, redirected GET: %v", err)
	mu.Lock()
	got := strings.Join(seen, "\n")
	seen = nil
	mu.Unlock()
	if !strings.Contains(got, "GET /v1/namespaces/shop/tables/orders") {
		t.Fatalf("the redirect was not followed: %q", got)
	}
	if strings.Contains(got, token) || strings.Contains(got, apiKey) {
		t.Fatalf("the other host received credentials: %s", got)
	}

	err = open("shop.items", map[string]string{"token": token})
	if a, _ := sameHostAuth.Load().(string); a != "Bearer "+token {
		t.Fatalf("a redirect within the host lost the token: %q (%v)", a, err)
	}

	err = open("shop.orders", map[string]string{"credential": "client-id:" + secret})
	t.Logf("credential, redirected token request: %v", err)
	mu.Lock()
	got = strings.Join(seen, "\n")
	mu.Unlock()
	if strings.Contains(got, secret) {
		t.Fatalf("the other host received the client secret: %s", got)
	}
	var redirect *source.CrossHostRedirectError
	if !errors.As(err, &redirect) && !strings.Contains(fmt.Sprint(err), "icecdc sends no request body or credentials to another host") {
		t.Fatalf("want the redirect refused, got %v", err)
	}
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Fatalf("the error shows the secret: %v", err)
	}
}

// TestRESTAnswerSaidTooLong: an answer whose Content-Length is past the
// bound fails without a byte of it read.
func TestRESTAnswerSaidTooLong(t *testing.T) {
	var written atomic.Int64
	srv := hostileREST(t, nil, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(64<<20))
		w.WriteHeader(http.StatusOK)
		endless(&written, 64<<20, `{"metadata-location": "`)(w, r)
	})
	_, err := source.Open(context.Background(), source.Options{
		CatalogType: "rest", CatalogURI: srv.URL, Table: "shop.orders", MaxResponseBytes: 1 << 20,
	})
	var tooLarge *source.ResponseTooLargeError
	if !errors.As(err, &tooLarge) {
		t.Fatalf("want the bound named: %v", err)
	}
	if w := written.Load(); w > 32<<20 {
		t.Errorf("the server wrote %d MiB", w>>20)
	}
}
