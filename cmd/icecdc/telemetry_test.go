package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP receiver: it decodes what the exporters
// post to /v1/traces and /v1/metrics as OTLP's protobuf messages.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	resource []*commonpb.KeyValue
	metrics  map[string]float64 // name → the sum of its last export's sum points
	paths    []string
	keys     map[string]bool // the x-api-key headers seen
	errs     []error
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = z
	}
	raw, err := io.ReadAll(body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paths = append(r.paths, req.URL.Path)
	r.keys[req.Header.Get("X-Api-Key")] = true
	if err == nil && req.Header.Get("Content-Type") != "application/x-protobuf" {
		err = fmt.Errorf("content type %q", req.Header.Get("Content-Type"))
	}
	switch {
	case err != nil:
	case req.URL.Path == "/otlp/v1/traces":
		var m coltrace.ExportTraceServiceRequest
		if err = proto.Unmarshal(raw, &m); err == nil {
			for _, rs := range m.ResourceSpans {
				r.resource = rs.Resource.GetAttributes()
				for _, ss := range rs.ScopeSpans {
					r.spans = append(r.spans, ss.Spans...)
				}
			}
		}
		raw, _ = proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	case req.URL.Path == "/otlp/v1/metrics":
		var m colmetrics.ExportMetricsServiceRequest
		if err = proto.Unmarshal(raw, &m); err == nil {
			for _, rm := range m.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					for _, met := range sm.Metrics {
						total := 0.0
						for _, p := range met.GetSum().GetDataPoints() {
							total += p.GetAsDouble() + float64(p.GetAsInt())
						}
						for _, p := range met.GetGauge().GetDataPoints() {
							total += p.GetAsDouble() + float64(p.GetAsInt())
						}
						for _, p := range met.GetHistogram().GetDataPoints() {
							total += float64(p.GetCount())
						}
						r.metrics[met.Name] = total
					}
				}
			}
		}
		raw, _ = proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
	default:
		err = fmt.Errorf("post to %s", req.URL.Path)
	}
	if err != nil {
		r.errs = append(r.errs, err)
		http.Error(w, err.Error(), 400)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(raw)
}

func spanAttr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// TestOTLPExport: a daemon with telemetry.otlp.endpoint exports, over
// OTLP/HTTP, a trace of each commit with its table and sequence number
// (and the commit's steps as its children), and the metrics /metrics
// serves; without an endpoint it exports nothing.
func TestOTLPExport(t *testing.T) {
	rcv := &otlpReceiver{metrics: map[string]float64{}, keys: map[string]bool{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SERVICE_NAME"} {
		t.Setenv(k, "")
	}
	catalog := bookshopCatalog(t)
	sink := fmt.Sprintf("{type: file, file: {path: '%s'}}", filepath.Join(t.TempDir(), "events.jsonl"))

	// Off by default: nothing is posted.
	cfg := writeConfig(t, "icecdc", catalog, sink, filepath.Join(t.TempDir(), "state.db"))
	if _, errOut, code := runCmd("run", "--once", "-c", cfg); code != 0 {
		t.Fatalf("run exit %d: %s", code, errOut)
	}
	if len(rcv.paths) != 0 {
		t.Fatalf("without an endpoint the daemon posted to %v", rcv.paths)
	}

	cfg = writeConfig(t, "icecdc", catalog, sink+"\ntelemetry: {otlp: {endpoint: '"+srv.URL+"/otlp', headers: {x-api-key: k1}}}", filepath.Join(t.TempDir(), "state.db"))
	if _, errOut, code := runCmd("run", "--once", "-c", cfg); code != 0 {
		t.Fatalf("run exit %d: %s", code, errOut)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.errs) > 0 {
		t.Fatalf("receiver: %v", rcv.errs)
	}
	if len(rcv.keys) != 1 || !rcv.keys["k1"] {
		t.Errorf("x-api-key headers %v, want k1 on every export", rcv.keys)
	}
	commits := map[int64]*tracepb.Span{}
	for _, s := range rcv.spans {
		if s.Name == cdc.SpanCommit && spanAttr(s, cdc.AttrTable).GetStringValue() == "bookshop.orders" {
			commits[spanAttr(s, cdc.AttrSeq).GetIntValue()] = s
		}
	}
	// The bookshop's commits: seq → events (5 is a compaction).
	for seq, events := range map[int64]int64{1: 5, 2: 1, 3: 1, 4: 1, 5: 0, 6: 1} {
		c := commits[seq]
		if c == nil {
			t.Fatalf("no %s span of bookshop.orders seq %d among %d spans (paths %v)", cdc.SpanCommit, seq, len(rcv.spans), rcv.paths)
		}
		if got := spanAttr(c, cdc.AttrEvents).GetIntValue(); got != events {
			t.Errorf("seq %d: %s %d, want %d", seq, cdc.AttrEvents, got, events)
		}
		var children []string
		for _, s := range rcv.spans {
			if string(s.ParentSpanId) == string(c.SpanId) && string(s.TraceId) == string(c.TraceId) {
				children = append(children, s.Name)
			}
		}
		want := []string{cdc.SpanRead, cdc.SpanEncode, cdc.SpanDeliver, cdc.SpanCheckpoint}
		if events == 0 {
			want = []string{cdc.SpanRead, cdc.SpanCheckpoint} // no batch: only the checkpoint moves
		}
		for _, w := range want {
			if !strings.Contains(strings.Join(children, " "), w) {
				t.Errorf("seq %d: children %v, want %v", seq, children, want)
			}
		}
	}
	names := map[string]string{}
	for _, kv := range rcv.resource {
		names[kv.Key] = kv.Value.GetStringValue()
	}
	if names["service.name"] != "icecdc" || names["icecdc.pipeline"] != "icecdc" {
		t.Errorf("resource %v", names)
	}
	// The metrics are /metrics' families: 9 events published.
	if got := rcv.metrics["icecdc_events_published_total"]; got != 9 {
		t.Errorf("icecdc_events_published_total = %v over OTLP, want 9 (metrics %v)", got, rcv.metrics)
	}
	if _, ok := rcv.metrics["icecdc_commit_duration_seconds"]; !ok {
		t.Errorf("no icecdc_commit_duration_seconds over OTLP: %v", rcv.metrics)
	}
}

// TestTelemetryConfigRefused: a bad endpoint or protocol is one line
// naming the key.
func TestTelemetryConfigRefused(t *testing.T) {
	for extra, want := range map[string]string{
		"telemetry: {otlp: {endpoint: 'collector:4318'}}":                       `telemetry.otlp.endpoint: "collector:4318": want http://host:port or https://host:port`,
		"telemetry: {otlp: {endpoint: 'http://c:4318', protocol: http/json}}":   `telemetry.otlp.protocol: "http/json": want http/protobuf or grpc`,
		"telemetry: {otlp: {endpoint: 'http://c:4318', metrics_interval: -1s}}": "telemetry.otlp.metrics_interval: must not be negative",
	} {
		_, err := parseConfig([]byte(sinkBase+"sink: {type: stdout}\n"+extra+"\n"), env(nil))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", extra, err, want)
		}
	}
}
