package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/icecdc/icecdc/cdc"
)

const schema = `{"type":"record","name":"K","namespace":"t","fields":[{"name":"id","type":"long"}]}`

// TestAuth: basic auth (from the settings or the URL's userinfo) and
// bearer tokens reach the registry; a wrong secret is a 401 or 403 that stops
// the table, and no error shows the secret.
func TestAuth(t *testing.T) {
	ctx := context.Background()
	basic := srfake.New(srfake.WithAuth("Basic " + base64.StdEncoding.EncodeToString([]byte("icecdc:Pw-Qr4"))))
	defer basic.Close()
	bearer := srfake.New(srfake.WithAuth("Bearer Tk-9x"))
	defer bearer.Close()
	withUser := strings.Replace(basic.URL(), "http://", "http://icecdc:Pw-Qr4@", 1)
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"basic", Config{URL: basic.URL(), Username: "icecdc", Password: "Pw-Qr4"}, true},
		{"userinfo", Config{URL: withUser}, true},
		{"bearer", Config{URL: bearer.URL(), BearerToken: "Tk-9x"}, true},
		{"wrong password", Config{URL: basic.URL(), Username: "icecdc", Password: "Pw-Qr5"}, false},
		{"wrong token", Config{URL: bearer.URL(), BearerToken: "Tk-9y"}, false},
	} {
		if err := tc.cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		cl, err := New(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		id, err := cl.Register(ctx, "t-key", schema)
		if tc.ok != (err == nil) {
			t.Fatalf("%s: id %d, err %v", tc.name, id, err)
		}
		if err != nil {
			msg := err.Error()
			if !cdc.IsPermanent(err) || !strings.Contains(msg, "HTTP 403") && !strings.Contains(msg, "HTTP 401") || strings.Contains(msg, "Pw-") || strings.Contains(msg, "Tk-") {
				t.Fatalf("%s: %q", tc.name, msg)
			}
		}
		if strings.Contains(cl.URL(), "Pw-") {
			t.Fatalf("%s: URL %s shows the password", tc.name, cl.URL())
		}
	}
}

// TestCAFile: an https registry is trusted through ca_file; without it
// the certificate is refused, naming the setting, and the table stops.
func TestCAFile(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	srv := httptest.NewTLSServer(reg.Handler())
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	cl, err := New(Config{URL: srv.URL, CAFile: ca})
	if err != nil {
		t.Fatal(err)
	}
	id, err := cl.Register(context.Background(), "t-key", schema)
	if err != nil || id <= 0 {
		t.Fatalf("with ca_file: id %d, %v", id, err)
	}
	got, err := cl.Schema(context.Background(), id)
	if err != nil || got != schema {
		t.Fatalf("schema %d: %q, %v", id, got, err)
	}
	cl, err = New(Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Register(context.Background(), "t-key", schema)
	if err == nil || !cdc.IsPermanent(err) || errors.Is(err, cdc.ErrRetry) || !strings.Contains(err.Error(), "schema_registry.ca_file") {
		t.Fatalf("without ca_file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.pem")
	os.WriteFile(bad, []byte("not a certificate"), 0o600)
	if _, err := New(Config{URL: srv.URL, CAFile: bad}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("a CA file without a certificate: %v", err)
	}
}

// TestDown: a registry that does not answer is retried, naming it.
func TestDown(t *testing.T) {
	reg := srfake.New()
	u := reg.URL()
	reg.Close()
	cl, err := New(Config{URL: u})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Register(context.Background(), "t-value", schema)
	if err == nil || cdc.IsPermanent(err) || !errors.Is(err, cdc.ErrRetry) || !strings.HasPrefix(err.Error(), "schema registry "+u+": register subject t-value: ") {
		t.Fatalf("registry down: %v", err)
	}
}

func TestSubject(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		key      bool
		want     string
	}{
		{StrategyTopic, true, "shop.orders-key"},
		{StrategyTopic, false, "shop.orders-value"},
		{StrategyRecord, false, "icecdc.shop.orders.Envelope"},
		{StrategyTopicRecord, false, "shop.orders-icecdc.shop.orders.Envelope"},
	} {
		if got := Subject(tc.strategy, "shop.orders", "icecdc.shop.orders.Envelope", tc.key); got != tc.want {
			t.Errorf("%s key %v: %s, want %s", tc.strategy, tc.key, got, tc.want)
		}
	}
}

// TestSchemaBadAnswers: a schema read by id that is not Avro is refused
// naming its type, and an answer without end is cut at
// MaxResponseBytes: the client holds a bounded part of it, and says so
// in one line naming the registry and the id, to be retried (it is
// rather a proxy's page than the registry's: it once stopped the table).
func TestSchemaBadAnswers(t *testing.T) {
	// Not a fake registry: these answers are no registry's.
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/schemas/ids/7":
			w.Write([]byte(`{"schema":"syntax = \"proto3\";","schemaType":"PROTOBUF"}`))
		case "/schemas/ids/8":
			w.Write([]byte(`{"schema":"`))
			chunk := bytes.Repeat([]byte("x"), 1<<16)
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer reg.Close()
	cl, err := New(Config{URL: reg.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Schema(context.Background(), 7)
	if err == nil || !cdc.IsPermanent(err) || err.Error() != "schema registry "+reg.URL+": schema id 7: not an Avro schema (type PROTOBUF)" {
		t.Fatalf("protobuf: %v", err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = cl.Schema(context.Background(), 8)
	runtime.ReadMemStats(&after)
	if err == nil || cdc.IsPermanent(err) || !errors.Is(err, cdc.ErrRetry) || !strings.HasPrefix(err.Error(), "schema registry "+reg.URL+": schema id 8: answer longer than") {
		t.Fatalf("endless: %v", err)
	}
	// Reading the bound whole, with the copies of a growing buffer, is a
	// few times the bound; an unbounded read would not return at all.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16*MaxResponseBytes {
		t.Fatalf("allocated %d bytes for an answer cut at %d", grew, MaxResponseBytes)
	}
}
