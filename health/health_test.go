package health

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// logLines returns the text handler's lines, without the time.
func logLines(b *bytes.Buffer) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func TestHealthRateLimitsOngoingFaults(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	h := &Health{
		Log:      slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime})),
		Interval: 30 * time.Second,
		Sink:     "webhook",
		Now:      func() time.Time { return now },
	}
	h.Track("shop.orders")
	if p := h.Problems(); len(p) != 0 {
		t.Fatalf("problems of a healthy table: %v", p)
	}
	boom := errors.New("webhook post http://h/x: 503 Service Unavailable")
	h.Fail("shop.orders", InSink, boom) // first: logged
	for range 5 {                       // within the interval: counted only
		now = now.Add(5 * time.Second)
		h.Fail("shop.orders", InSink, boom)
	}
	if n := len(logLines(&buf)); n != 1 {
		t.Fatalf("%d lines within the interval, want 1:\n%s", n, buf.String())
	}
	now = now.Add(5 * time.Second) // 30s after the first line
	h.Fail("shop.orders", InSink, boom)
	now = now.Add(time.Second)
	h.Fail("shop.orders", InSink, boom)
	tables := h.Tables()
	if len(tables) != 1 || tables[0].State != StateFailing || tables[0].Failures != 8 || tables[0].LastError != boom.Error() ||
		!tables[0].Since.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("tables: %+v", tables)
	}
	if p := h.Problems(); len(p) != 1 || !strings.Contains(p[0], "shop.orders: sink failing since 2026-12-01T10:00:00Z (8 failures): webhook post") {
		t.Fatalf("problems: %q", p)
	}
	now = now.Add(4 * time.Second)
	h.OK("shop.orders")
	h.OK("shop.orders") // once only
	want := []string{
		`level=WARN msg="sink failing; retrying" table=shop.orders sink=webhook err="webhook post http://h/x: 503 Service Unavailable"`,
		`level=WARN msg="sink still failing" table=shop.orders sink=webhook failures=6 for=30s last_err="webhook post http://h/x: 503 Service Unavailable"`,
		`level=INFO msg="sink recovered after 8 failures over 35s" table=shop.orders sink=webhook`,
	}
	if got := logLines(&buf); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p := h.Problems(); len(p) != 0 {
		t.Fatalf("problems after recovery: %v", p)
	}

	// A fault in another component is a new fault; a stopped table stays
	// stopped and is not logged here (the pipeline logs why it stopped).
	buf.Reset()
	h.Fail("shop.orders", InSource, errors.New("catalog down"))
	h.Fail("shop.orders", InSink, boom)
	h.Stop("shop.orders", InSink, errors.New("410 Gone"))
	h.Fail("shop.orders", InSink, boom)
	h.OK("shop.orders")
	if got := logLines(&buf); len(got) != 2 || !strings.Contains(got[0], `msg="source failing; retrying"`) || strings.Contains(got[0], "sink=") ||
		!strings.Contains(got[1], `msg="sink failing; retrying"`) {
		t.Fatalf("log:\n%s", buf.String())
	}
	if tb := h.Tables()[0]; tb.State != StateStopped || tb.LastError != "410 Gone" || tb.Failures != 2 {
		t.Fatalf("stopped table: %+v", tb)
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// TestHealthForget: a table this process gave up (cluster mode) leaves
// Tables and Problems, even stopped, so that the member's /readyz is not
// held down by a table another member follows; the others stay.
func TestHealthForget(t *testing.T) {
	h := &Health{}
	h.Track("shop.orders")
	h.Stop("shop.moved", InSink, errors.New("record too large"))
	h.Fail("shop.failing", InSource, errors.New("catalog away"))
	h.Forget("shop.moved")
	var names []string
	for _, th := range h.Tables() {
		names = append(names, th.Table)
	}
	if got := strings.Join(names, ","); got != "shop.failing,shop.orders" {
		t.Fatalf("after Forget(shop.moved), Tables lists %s, want shop.failing,shop.orders", got)
	}
	if p := h.Problems(); len(p) != 1 || !strings.HasPrefix(p[0], "shop.failing: source failing") {
		t.Fatalf("after Forget(shop.moved), Problems %q, want only shop.failing's", p)
	}
}
