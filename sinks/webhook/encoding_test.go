package webhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// The CloudEvents subject and content type come from the encoder's
// Encoding, in both modes: the sink reads no format bytes.
func TestCloudEventsLabelsFromEncoding(t *testing.T) {
	enc := cdc.Encoding{ContentType: "application/x-test", KeyPayload: func(k []byte) []byte { return append([]byte("row:"), k...) }}
	for _, mode := range []string{CloudEventsStructured, CloudEventsBinary} {
		var mu sync.Mutex
		var types, subjects, dataTypes []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			defer mu.Unlock()
			types = append(types, r.Header.Get("Content-Type"))
			if mode == CloudEventsBinary {
				subjects = append(subjects, r.Header.Get("ce-subject"))
				return
			}
			var evs []struct{ Subject, DataContentType string }
			if err := json.Unmarshal(body, &evs); err != nil {
				t.Errorf("body: %v", err)
			}
			for _, e := range evs {
				subjects, dataTypes = append(subjects, e.Subject), append(dataTypes, e.DataContentType)
			}
		}))
		s, err := New(Config{URL: srv.URL, Secret: testSecret, Pipeline: "p", CloudEvents: true, CloudEventsMode: mode, Encoding: enc})
		if err != nil {
			t.Fatal(err)
		}
		b := sinktest.NewStream("shop", "orders").Snapshot(3, 0)[0]
		if err := s.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		if len(subjects) != len(b.Messages) {
			t.Fatalf("%s: %d subjects for %d events", mode, len(subjects), len(b.Messages))
		}
		for i, m := range b.Messages {
			if want := "row:" + string(m.Key); subjects[i] != want && subjects[i] != "row:"+urlEscaped(string(m.Key)) {
				t.Errorf("%s: subject %q, want %q", mode, subjects[i], want)
			}
		}
		wantType := contentTypeCloudEvents
		if mode == CloudEventsBinary {
			wantType = "application/x-test"
		}
		for _, ct := range types {
			if ct != wantType {
				t.Errorf("%s: Content-Type %q, want %q", mode, ct, wantType)
			}
		}
		for _, ct := range dataTypes {
			if ct != "application/x-test" {
				t.Errorf("%s: datacontenttype %q", mode, ct)
			}
		}
	}
}

// urlEscaped is the ce-subject header form of s (ceHeaderValue).
func urlEscaped(s string) string { return ceHeaderValue(s) }
