package source

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/smithy-go/logging"
)

// TestAWSLoggerIsJSON: what the AWS SDK logs (it warns about objects stored
// without a checksum) reaches the source's JSON logger at its level, with
// the store's secrets hidden, instead of the SDK's plain lines on stderr.
func TestAWSLoggerIsJSON(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	const key = "Sk-icecdc-Secret-9Qz"
	s := newStore(Options{Log: log, Props: map[string]string{"s3.secret-access-key": key}})
	l := s.awsLogger()
	l.Logf(logging.Warn, "Response has no supported checksum. Not validating response payload (%s)", key)
	l.Logf(logging.Debug, "request %d", 7)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{"WARN", "DEBUG"} {
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatalf("line %d is not JSON: %q", i, lines[i])
		}
		if rec["level"] != want || !strings.HasPrefix(rec["msg"].(string), "aws sdk: ") {
			t.Errorf("line %d: %v, want level %s and an aws sdk message", i, rec, want)
		}
	}
	if strings.Contains(buf.String(), key) {
		t.Errorf("the secret reached the log: %s", buf.String())
	}
}

// TestS3ConfigUsesTheSourceLogger: the AWS configuration the store gives
// iceberg-go's S3 IO carries that logger, not the SDK's default one.
func TestS3ConfigUsesTheSourceLogger(t *testing.T) {
	var buf bytes.Buffer
	s := newStore(Options{Log: slog.New(slog.NewJSONHandler(&buf, nil)), Props: map[string]string{
		"s3.region": "us-east-1", "s3.access-key-id": "AKIAICECDCTEST000001", "s3.secret-access-key": "x-secret-key-0000000001",
	}})
	if _, err := s.context(t.Context(), "s3://bucket/t"); err != nil {
		t.Fatal(err)
	}
	if s.s3cfg.Logger == nil {
		t.Fatal("no logger in the S3 configuration")
	}
	s.s3cfg.Logger.Logf(logging.Warn, "hello")
	if !strings.Contains(buf.String(), `"msg":"aws sdk: hello"`) {
		t.Fatalf("the S3 configuration's logger wrote %q", buf.String())
	}
}
