package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAllowedLocations: the config field is parsed, and --allowed-location
// confines what `changes` reads.
func TestAllowedLocations(t *testing.T) {
	raw := strings.Replace(goodConfig, "poll:", "allowed_locations: [file:///var/lib/icecdc/warehouse, s3://lake/tables]\npoll:", 1)
	c, err := parseConfig([]byte(raw), env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.AllowedLocations, " ") != "file:///var/lib/icecdc/warehouse s3://lake/tables" {
		t.Fatalf("allowed_locations: %q", c.AllowedLocations)
	}

	dir, catArgs, _ := bookshop(t)
	failsWith(t, append(catArgs, "--allowed-location", "file:///elsewhere", "--allowed-location", dir+"/warehouse-not"),
		"outside the allowed locations (allowed_locations file:///elsewhere, allowed_locations "+dir+"/warehouse-not)")
	if out, errOut, code := runCmd(append(append([]string{"changes"}, catArgs...), "--allowed-location", dir)...); code != 0 || out == "" {
		t.Fatalf("allowed: exit %d, stderr %q", code, errOut)
	}
}

// fifoManifestList replaces the manifest list of the bookshop's last
// snapshot with a named pipe and returns its path.
func fifoManifestList(t *testing.T, meta string) string {
	t.Helper()
	var list string
	editMetadata(t, meta, func(m map[string]any, _ map[int64]map[string]any) {
		for _, s := range m["snapshots"].([]any) {
			if s := s.(map[string]any); s["snapshot-id"] == m["current-snapshot-id"] {
				list = s["manifest-list"].(string)
			}
		}
	})
	p := strings.TrimPrefix(list, "file://")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	return list
}

// TestFIFOManifestList: a manifest list that is a named pipe fails
// `changes` at once with one line naming it, and under `icecdc run` the
// table fails (the healthy snapshots before it delivered) while /readyz
// says why, instead of the read blocking while /readyz says ready.
func TestFIFOManifestList(t *testing.T) {
	_, catArgs, meta := bookshop(t)
	list := fifoManifestList(t, meta)
	t.Run("changes", func(t *testing.T) { fifoChanges(t, catArgs, list) })
	t.Run("run", func(t *testing.T) { fifoRun(t, catArgs, list) })
}

func fifoChanges(t *testing.T, catArgs []string, list string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		failsWith(t, catArgs, "manifest list "+list, "not a regular file: a named pipe (FIFO)")
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second): // a hang guard only
		t.Fatal("changes blocked on the named pipe")
	}
}

func fifoRun(t *testing.T, catArgs []string, list string) {
	tmp := t.TempDir()
	sink, listen := filepath.Join(tmp, "events.jsonl"), freeAddr(t)
	cfg := filepath.Join(tmp, "icecdc.yaml")
	body := fmt.Sprintf(`name: p
catalog: {type: sql, uri: '%s', warehouse: '%s'}
tables: [{name: bookshop.orders, start: earliest}]
poll: {interval: 50ms}
sink: {type: file, file: {path: '%s'}}
state: {path: '%s'}
http: {listen: '%s'}
`, catArgs[3], catArgs[5], sink, filepath.Join(tmp, "state.db"), listen)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	ended := make(chan error, 1)
	go func() { ended <- execute(ctx, []string{"run", "-c", cfg}, io.Discard, &logs) }()
	var ready string
	deadline := time.Now().Add(60 * time.Second) // a hang guard only
	for ready = daemonPage(listen, "/readyz"); !strings.Contains(ready, "not a regular file"); ready = daemonPage(listen, "/readyz") {
		select {
		case err := <-ended:
			t.Fatalf("the daemon ended (%v); logs:\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz says %q, not the named pipe, after 60s; logs:\n%s", ready, logs.String())
		}
	}
	if !strings.Contains(ready, "bookshop.orders: source failing since ") || !strings.Contains(ready, "manifest list "+list) {
		t.Fatalf("/readyz: %q", ready)
	}
	// Every snapshot before the last was delivered: the last snapshot
	// wrote the last event.
	if n := countLines(sink); n != len(bookshopEvents)-1 {
		t.Fatalf("%d events in the sink, want the %d before the last snapshot", n, len(bookshopEvents)-1)
	}
	cancel()
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon did not stop within 30s of the signal")
	}
}
