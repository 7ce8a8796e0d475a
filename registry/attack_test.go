package registry

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/icecdc/icecdc/cdc"
)

// recorder is a server that notes the Authorization header of every
// request it gets.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req.Method+" "+req.URL.Path+" auth="+req.Header.Get("Authorization"))
		r.mu.Unlock()
		w.Write([]byte(`{"id":1}`))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// TestRedirectsRefused: a registry answering with a redirect (to plain
// http, to another port of its host, with or without credentials) is
// refused in one line naming the registry and the place, and nothing is
// sent there. An https registry's 307 to http:// once carried the basic
// credentials in clear text.
func TestRedirectsRefused(t *testing.T) {
	target := newRecorder(t)
	var code int
	reg := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path+"?token=Tk-in-location", code)
	}))
	defer reg.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: reg.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, code = range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, cfg := range []Config{
			{Username: "icecdc", Password: "Pw-Qr4"},
			{BearerToken: "Tk-9x-bearer"},
			{},
		} {
			cfg.URL, cfg.CAFile = reg.URL, ca
			cl, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.Register(context.Background(), "t-value", schema)
			want := fmt.Sprintf("schema registry %s: register subject t-value: redirected (HTTP %d) to %s/subjects/t-value/versions?token=xxxxx: redirects are not followed", reg.URL, code, target.URL)
			if err == nil || !cdc.IsPermanent(err) || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("HTTP %d: %v\nwant %s…", code, err, want)
			}
		}
	}
	if seen := target.requests(); len(seen) > 0 {
		t.Fatalf("the redirect's target got %d requests: %q", len(seen), seen)
	}
}

// TestAnswersRedacted: a registry (or a proxy) that echoes the request's
// headers in its answer shows no credential in the error, which reaches
// the log, /readyz and /status.
func TestAnswersRedacted(t *testing.T) {
	for _, tc := range []struct {
		name, ctype string
		status      int
		body        func(r *http.Request) string
	}{
		{"json message", "application/json", http.StatusInternalServerError, func(r *http.Request) string {
			return fmt.Sprintf(`{"error_code":50001,"message":"failed; request headers: Authorization: %s"}`, r.Header.Get("Authorization"))
		}},
		{"json headers", "application/json", http.StatusBadRequest, func(r *http.Request) string {
			return fmt.Sprintf(`{"headers":{"Authorization":[%q]}}`, r.Header.Get("Authorization"))
		}},
		{"bare token", "text/plain", http.StatusBadGateway, func(r *http.Request) string {
			_, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			return "upstream refused " + tok
		}},
		{"decoded password", "text/html", http.StatusForbidden, func(r *http.Request) string {
			_, pw, _ := r.BasicAuth()
			return "<p>login with secret " + pw + " refused</p>"
		}},
	} {
		reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", tc.ctype)
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.body(r))
		}))
		for _, cfg := range []Config{
			{URL: reg.URL, Username: "icecdc", Password: "Pw-Qr4"},
			{URL: strings.Replace(reg.URL, "http://", "http://icecdc:Pw-Qr4@", 1)},
			{URL: reg.URL, BearerToken: "Tk-9x-bearer"},
		} {
			cl, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.Register(context.Background(), "t-value", schema)
			if err == nil {
				t.Fatalf("%s: no error", tc.name)
			}
			msg := err.Error()
			for _, secret := range []string{"Pw-Qr4", "Tk-9x", base64.StdEncoding.EncodeToString([]byte("icecdc:Pw-Qr4"))} {
				if strings.Contains(msg, secret) {
					t.Errorf("%s: the error shows %s: %s", tc.name, secret, msg)
				}
			}
			if !strings.HasPrefix(msg, "schema registry "+reg.URL+": register subject t-value: HTTP ") {
				t.Errorf("%s: %s", tc.name, msg)
			}
		}
		reg.Close()
	}
}

// registryAnswering is a registry that answers every registration with
// id and every other request as a fake registry does.
func registryAnswering(t *testing.T, id int64) *httptest.Server {
	fake := srfake.New()
	t.Cleanup(fake.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/versions") {
			fmt.Fprintf(w, `{"id":%d}`, id)
			return
		}
		fake.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestIDPastWireFormat: an id the wire format's 4 bytes cannot carry is
// refused, naming it; id 4294967297 once went out as 1 on every record.
func TestIDPastWireFormat(t *testing.T) {
	for _, id := range []int64{1 << 31, 1<<32 + 1} {
		reg := registryAnswering(t, id)
		cl, err := New(Config{URL: reg.URL})
		if err != nil {
			t.Fatal(err)
		}
		got, err := cl.Register(context.Background(), "t-value", schema)
		want := fmt.Sprintf("schema registry %s: register subject t-value: schema id %d is past 2147483647, the largest Confluent's wire format carries (4 bytes)", reg.URL, id)
		if err == nil || !cdc.IsPermanent(err) || err.Error() != want {
			t.Fatalf("id %d: got id %d, %v", id, got, err)
		}
	}
	reg := registryAnswering(t, 1<<31-1)
	cl, _ := New(Config{URL: reg.URL})
	if got, err := cl.Register(context.Background(), "t-value", schema); err != nil || got != 1<<31-1 {
		t.Fatalf("the largest id: %d, %v", got, err)
	}
}

// TestOneIDTwoSchemas: a registry that gives the key's and the value's
// schemas one id is refused at the second, naming both subjects: a
// consumer would read the value with the key's schema. One schema under
// two subjects keeps its one id.
func TestOneIDTwoSchemas(t *testing.T) {
	const value = `{"type":"record","name":"V","namespace":"t","fields":[{"name":"name","type":"string"}]}`
	reg := registryAnswering(t, 5)
	cl, _ := New(Config{URL: reg.URL})
	ctx := context.Background()
	if _, err := cl.Register(ctx, "t-key", schema); err != nil {
		t.Fatal(err)
	}
	// The same schema, spaced otherwise, under another subject.
	if _, err := cl.Register(ctx, "u-key", strings.ReplaceAll(schema, ",", ", ")); err != nil {
		t.Fatalf("one schema under two subjects: %v", err)
	}
	_, err := cl.Register(ctx, "t-value", value)
	want := "schema registry " + reg.URL + ": register subject t-value: the registry gave schema id 5, which it gave to another schema (subject t-key)"
	if err == nil || !cdc.IsPermanent(err) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("two schemas, one id: %v", err)
	}
	if subject, _, ok := cl.Registered(5); !ok || subject != "t-key" {
		t.Fatalf("id 5 registered as %q, %v", subject, ok)
	}
}

// TestOversizedAnswerRetried: a proxy's page past MaxResponseBytes in
// the registry's place is retried with one line, not a stop of the table.
func TestOversizedAnswerRetried(t *testing.T) {
	page := "<html><body>" + strings.Repeat("<p>Service temporarily unavailable</p>", MaxResponseBytes/30) + "</body></html>"
	for _, status := range []int{http.StatusOK, http.StatusBadGateway, http.StatusForbidden} {
		reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(status)
			io.WriteString(w, page)
		}))
		cl, _ := New(Config{URL: reg.URL})
		_, err := cl.Register(context.Background(), "t-value", schema)
		reg.Close()
		want := fmt.Sprintf("schema registry %s: register subject t-value: ", reg.URL)
		if err == nil || cdc.IsPermanent(err) || !errors.Is(err, cdc.ErrRetry) || !strings.HasPrefix(err.Error(), want) ||
			!strings.Contains(err.Error(), "answer longer than") || len(err.Error()) > 400 {
			t.Fatalf("HTTP %d with a %d-byte page: %.500v", status, len(page), err)
		}
	}
}
